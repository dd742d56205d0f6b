"""The Python side of the agent's Python executor (docs/modules.md, "Python handlers").

One process per environment and handler-code version. It imports the modules' `inmanta_plugins`
packages (which registers their `@resource` classes and `@provider` handlers with inmanta-core),
then serves requests from the agent: one JSON object per line on stdin, one JSON reply per line on
the protocol descriptor. Everything else a handler prints goes to stderr, so it cannot corrupt the
protocol.

The handler machinery is inmanta-core's own (`Resource.deserialize`, `Commander.get_provider`,
`HandlerContext`, `AgentCache`, the handlers' `execute` and `check_facts`); this file only
translates between our JSON and those objects.

The process starts in two steps, so that the agent can keep one started ahead of need (a warm
spare: importing inmanta-core is most of the start): it imports inmanta-core and says so, then
waits for the one request that names its code and environment, and imports the modules.

The agent's side of every line below is a serde type in agent/src/python/protocol.rs (a request
by its "action", a server call by its "method"); a line it cannot read as one fails the resource
and stops this process, so the two must change together.

First line written: {"ready": true, "python": "3.13.0", "inmanta_core": "20.1.0"}
Then:      {"id": n, "action": "load", "code": [dir, ...], "load": [module, ...], "environment": uuid}
Answer:    {"id": n, "loaded": true, "errors": {module: traceback}}
Requests:  {"id": n, "action": "deploy" | "dry_run" | "facts", "resource": {...},
            "dependency_changed": bool}
Replies:   {"id": n, "status": ..., "change": ..., "changes": {name: {"current", "desired"}},
            "logs": [{"level", "msg", "args", "kwargs", "timestamp"}], "facts": {...},
            "discovered": [{"discovered_resource_id", "values", "discovery_resource_id"}, ...]}
           (without "resolved" and "discovered" when the handler could not be found; a request
           before "load" is answered {"id": n, "error": "..."})

Handlers reach the server through `self.get_client()`; here that is `_ServerCalls`: what a
`DiscoveryHandler` reports (`discovered_resource_create_batch`) comes back in the reply and the
agent stores it on the server; `resource_did_dependency_change` is answered from the request.
`get_file` and `get_facts` (a handler's `self.get_file`, std's fact reference, which makes its
own `SyncClient`) are asked of the agent while the request runs:
  written:   {"server_call": {"method": "get_file", "hash": h} | {"method": "get_facts", "tid", "rid"}}
  read back: {"server_answer": {"code": 200, "result": {...}}}   (the next line of stdin)
Every other method of inmanta-core's API is turned into its HTTP request by inmanta-core's own
method registry (`MethodProperties.select_method(name).build_call(args, kwargs)`), which the agent
sends to the server with its own credentials, in its own environment:
  written:   {"server_call": {"method": "api", "http_method": "PUT", "url": "/api/v1/parameter/p",
                              "headers": {"X-Inmanta-tid": ...}, "body": {...} | null}}
  read back: {"server_answer": {"code": 200, "result": {...}}}
Once the references of a resource are resolved, and before its handler runs, the values they
resolved to are sent as {"server_call": {"method": "redact", "values": [...]}}: the agent then
redacts them from this process's stderr, which it logs.

A resource of a built-in or external handler whose references include a type only a module's
Python code defines has them resolved here, without running a handler:
  request:   {"id": n, "action": "resolve", "resource": {...}, "known": {reference id: value}}
  reply:     {"id": n, "attributes": {...}, "resolved": {...}, "logs": [...]}
             or {"id": n, "error": "...", "resolved": {...}, "logs": [...]}
`known` holds the values the agent resolved itself (std's kinds); the mutators then run as
inmanta-core runs them and `attributes` is the resource with their values in place.

References are resolved here, by inmanta-core (`resolve_all_references`) with the reference
classes of the modules (std's, or a module's own), before the handler runs. The reply then
carries `"resolved": {"values": [...], "attributes": [...]}`: the values they resolved to and
the attributes the mutators filled, so that the agent redacts them from the logs, changes and
facts before anything leaves it.
"""

import asyncio
import datetime
import importlib
import json
import logging
import os
import sys
import threading
import traceback
import uuid

# The protocol gets a private copy of stdout; fd 1 then points at stderr for everything else.
_PROTOCOL = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def _send(message):
    _PROTOCOL.write(json.dumps(message, default=str) + "\n")
    _PROTOCOL.flush()


try:
    import inmanta
    import inmanta.agent.cache
    import inmanta.agent.executor
    import inmanta.const as const
    import inmanta.references
    import inmanta.resources
    from inmanta.agent import handler
    from inmanta.protocol.common import Result
except Exception:
    _send(
        {
            "ready": False,
            "python": sys.version.split()[0],
            "error": "inmanta-core cannot be imported by "
            + sys.executable
            + " (install inmanta-core, or a module wheel that depends on it, in this Python):\n"
            + traceback.format_exc(),
        }
    )
    sys.exit(3)


class _Agent(inmanta.agent.executor.AgentInstance):
    """What handlers see as `self._agent`: the environment, a name and an event loop for run_sync."""

    def __init__(self, environment):
        self.environment = uuid.UUID(environment) if environment else uuid.uuid4()
        self.sessionid = uuid.uuid4()
        self.uri = "local:"
        self.name = "executor"
        self.eventloop = asyncio.new_event_loop()
        threading.Thread(target=self.eventloop.run_forever, name="executor-ioloop", daemon=True).start()

    def is_stopped(self):
        return False


def _load_modules(code_dirs, modules):
    for directory in reversed(code_dirs):
        sys.path.insert(0, directory)
    importlib.invalidate_caches()
    errors = {}
    for module in modules:
        name = module if module.startswith("inmanta_plugins.") else "inmanta_plugins." + module
        try:
            importlib.import_module(name)
        except Exception:
            errors[module] = traceback.format_exc()
    return errors


_SERVER_CALL = threading.Lock()


def _server_call(method, **args):
    """Asks the agent for something of the server (see the module docstring); (code, result)."""
    # A handler's coroutines run on the event loop's thread: one exchange at a time.
    with _SERVER_CALL:
        _send({"server_call": dict(args, method=method)})
        line = sys.stdin.readline()
    if not line:
        raise ConnectionError("the agent closed the executor's input")
    answer = json.loads(line).get("server_answer") or {}
    return answer.get("code", 500), answer.get("result")


def _api_method(name):
    """inmanta-core's definition of the API method `name` (the lowest API version, as its
    `Client` selects by default); None for a name that is no API method."""
    try:
        import inmanta.protocol.methods  # noqa: F401 (registers the v1 methods)
        import inmanta.protocol.methods_v2  # noqa: F401 (registers the v2 methods)
        from inmanta.protocol.common import MethodProperties
    except Exception:
        return None
    return MethodProperties.select_method(name)


def _api_call(method, args, kwargs):
    """Sends one call of an API method through the agent (see the module docstring): the
    request inmanta-core's client would send; the `Result` its client would return."""
    from inmanta.protocol.common import json_encode

    request = method.build_call(args, kwargs)
    body = None if request.body is None else json.loads(json_encode(request.body))
    headers = {str(k): str(v) for k, v in (request.headers or {}).items()}
    code, result = _server_call("api", http_method=request.method, url=request.url, headers=headers, body=body)
    return Result(code=code, result=result, method_properties=method, environment=headers.get("X-Inmanta-tid"))


def _api_client_call(method, args, kwargs):
    """What inmanta-core's `Client.<method>(...)` returns: an awaitable that makes the call when
    awaited (a `ClientCall`, whose `value()` works as with inmanta-core's client)."""

    async def call():
        return _api_call(method, args, kwargs)

    from inmanta.protocol import common

    client_call = getattr(common, "ClientCall", None)
    if client_call is None:
        return call()
    return client_call.create(call(), properties=method)


def _no_such_method(name):
    return AttributeError(f"Method with name {name} is not defined for this client")


def _redact_stderr(resource):
    """Tells the agent the values the references resolved to before the handler runs, so that
    whatever it (or a program it starts) prints to stderr is redacted in the agent's log."""
    values = _resolved(resource)["values"]
    if values:
        _server_call("redact", values=values)


def _answer(code, result):
    """An awaitable `Result`, what inmanta-core's client methods return (for `run_sync`)."""

    async def answer():
        return Result(code=code, result=result)

    return answer()


class _ServerCalls:
    """What a handler gets from `self.get_client()` in this executor (see the module docstring)."""

    def __init__(self, dependency_changed):
        self.dependency_changed = dependency_changed
        self.discovered = []

    def discovered_resource_create_batch(self, tid, discovered_resources):
        for item in discovered_resources:
            if hasattr(item, "model_dump"):
                item = item.model_dump(mode="json")
            self.discovered.append(
                {
                    "discovered_resource_id": str(item["discovered_resource_id"]),
                    "values": _plain(item.get("values") or {}),
                    "discovery_resource_id": str(item["discovery_resource_id"]),
                }
            )
        return _answer(200, {"data": None})

    def discovered_resource_create(self, tid, discovered_resource_id, discovery_resource_id, values=None, **kwargs):
        item = {
            "discovered_resource_id": discovered_resource_id,
            "discovery_resource_id": discovery_resource_id,
            "values": values if values is not None else kwargs.get("values", {}),
        }
        return self.discovered_resource_create_batch(tid, [item])

    def resource_did_dependency_change(self, tid, rvid):
        return _answer(200, {"data": bool(self.dependency_changed)})

    def get_file(self, id):
        return _answer(*_server_call("get_file", hash=str(id)))

    def get_facts(self, tid, rid):
        return _answer(*_server_call("get_facts", tid=str(tid), rid=str(rid)))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        method = _api_method(name)
        if method is None:
            raise _no_such_method(name)
        return lambda *args, **kwargs: _api_client_call(method, args, kwargs)


class _SyncClient:
    """Stands in for `inmanta.protocol.endpoints.SyncClient`, which reference classes create to
    reach the server themselves (std's `FactReference`): the agent answers, or sends the call to
    the server as for `self.get_client()`."""

    def __init__(self, *args, **kwargs):
        pass

    def get_facts(self, tid, rid):
        return Result(*_server_call("get_facts", tid=str(tid), rid=str(rid)))

    def get_file(self, id):
        return Result(*_server_call("get_file", hash=str(id)))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        method = _api_method(name)
        if method is None:
            raise _no_such_method(name)
        return lambda *args, **kwargs: _api_call(method, args, kwargs)


try:
    import inmanta.protocol.endpoints

    inmanta.protocol.endpoints.SyncClient = _SyncClient
except Exception:
    pass


def _resolved(resource):
    """The values the resource's references resolved to (so far) and the attributes mutators
    fill, for the agent to redact (see the module docstring)."""
    values = []
    for ref in (getattr(resource, "_references", None) or {}).values():
        if getattr(ref, "_reference_value_cached", False):
            value = ref._reference_value
            values.append(value if isinstance(value, str) else json.dumps(_plain(value)))
    attributes = []
    for mutator in getattr(resource, "mutators", None) or []:
        for arg in mutator.get("args") or []:
            if arg.get("name") == "destination" and isinstance(arg.get("value"), str):
                attributes.append(arg["value"].removeprefix("$.").split(".")[0].split("[")[0])
    return {"values": values, "attributes": attributes}


class _Known:
    """A reference the agent resolved already: its value, as `Reference.get` returns it."""

    def __init__(self, value):
        self.value = value

    def get(self, logger):
        return self.value


class _ReferenceFailed(Exception):
    """A reference that did not resolve, named (the innermost one of nested references)."""


class _ResolvingResource(dict):
    """The attributes of a resource whose handler is not Python, standing in for the `Resource`
    inmanta-core's references and mutators work on: `core::Replace` writes into it by JSONPath,
    `ResourceArgument` checks its id, `ReferenceArgument` asks it for another reference's value."""

    def get_reference_value(self, id, logger):
        """inmanta-core's, with a failure naming the reference that failed (its type and id)."""
        try:
            return inmanta.resources.Resource.get_reference_value(self, id, logger)
        except _ReferenceFailed:
            raise
        except Exception as e:
            model = self._references_model.get(id)
            kind = model.type if model is not None else "unknown"
            raise _ReferenceFailed(f"reference {kind} {id}: {e.__class__.__name__}: {e}") from e

    def __init__(self, attributes, known):
        super().__init__(attributes)
        self.id = inmanta.resources.Id.parse_id(attributes["id"])
        self._references_model = {}
        for ref in attributes.get("references") or []:
            model = inmanta.references.ReferenceModel(**ref)
            self._references_model[model.id] = model
        self._references = {uuid.UUID(ref_id): _Known(value) for ref_id, value in (known or {}).items()}

    def resolved(self):
        values = [v.value for v in self._references.values() if isinstance(v, _Known)]
        for ref in self._references.values():
            if not isinstance(ref, _Known) and getattr(ref, "_reference_value_cached", False):
                values.append(ref._reference_value)
        return [v if isinstance(v, str) else json.dumps(_plain(v)) for v in values]


class _Logger(handler.LoggerABC):
    """Collects what references log while they resolve, as a handler context would."""

    def __init__(self):
        self.lines = []

    def _log_msg(self, level, msg, *args, exc_info=False, **kwargs):
        self.lines.append(
            {
                "level": logging.getLevelName(level),
                "msg": str(msg),
                "args": _plain(list(args)),
                "kwargs": _plain(dict(kwargs)),
                "timestamp": _timestamp(datetime.datetime.now(datetime.timezone.utc)),
            }
        )


def _resolve_only(request):
    """The `resolve` action (see the module docstring)."""
    logger = _Logger()
    resource = None
    try:
        resource = _ResolvingResource(request.get("resource") or {}, request.get("known"))
        for model in resource.get("mutators") or []:
            mutator = inmanta.references.mutator.get_class(model["type"])
            mutator.deserialize(inmanta.references.MutatorModel(**model), resource, logger).run(logger)
        answer = {"attributes": _plain(dict(resource))}
    except _ReferenceFailed as e:
        answer = {"error": str(e)}
    except Exception as e:
        answer = {"error": f"{e.__class__.__name__}: {e}"}
    values = resource.resolved() if resource is not None else []
    if values:
        _server_call("redact", values=values)
    answer["id"] = request.get("id")
    answer["resolved"] = {"values": values, "attributes": []}
    answer["logs"] = logger.lines
    return answer


def _timestamp(value):
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")
    return str(value)


def _plain(value):
    """Makes a value JSON-safe without losing what JSON can carry."""
    return json.loads(json.dumps(value, default=str))


def _logs(ctx):
    out = []
    for line in ctx.logs:
        # inmanta.data.LogLine keeps its fields in `_data` (msg, args, level, kwargs, timestamp).
        data = getattr(line, "_data", None) or {}
        level = data.get("level", "INFO")
        out.append(
            {
                "level": str(getattr(level, "name", level)).upper(),
                "msg": str(data.get("msg", "")),
                "args": _plain(list(data.get("args") or [])),
                "kwargs": _plain(dict(data.get("kwargs") or {})),
                "timestamp": _timestamp(data.get("timestamp")),
            }
        )
    return out


def _changes(ctx):
    out = {}
    for name, change in (ctx.changes or {}).items():
        current = getattr(change, "current", None)
        desired = getattr(change, "desired", None)
        if isinstance(change, dict):
            current, desired = change.get("current"), change.get("desired")
        out[name] = {"current": _plain(current), "desired": _plain(desired)}
    return out


def _facts(ctx, returned):
    facts = {}
    for fact in ctx.facts:
        facts[fact["id"]] = _plain(fact["value"])
    for name, value in (returned or {}).items():
        facts[name] = _plain(value)
    return facts


def _status(ctx, dry_run):
    state = ctx.resource_state
    if state is None:
        return "dry" if dry_run else "deployed"
    value = getattr(state, "value", str(state))
    if value == "skipped_for_dependency":
        return "skipped"
    return value


class Executor:
    def __init__(self, environment):
        self.agent = _Agent(environment)
        self.cache = inmanta.agent.cache.AgentCache(self.agent)

    def _failure(self, request_id, status, message):
        return {
            "id": request_id,
            "status": status,
            "change": "nochange",
            "changes": {},
            "facts": {},
            "logs": [
                {
                    "level": "ERROR",
                    "msg": message,
                    "args": [],
                    "kwargs": {"traceback": traceback.format_exc()},
                    "timestamp": _timestamp(datetime.datetime.now(datetime.timezone.utc)),
                }
            ],
        }

    def handle(self, request):
        request_id = request.get("id")
        action = request.get("action")
        attributes = request.get("resource") or {}
        rvid = attributes.get("id", "?")
        try:
            resource = inmanta.resources.Resource.deserialize(dict(attributes))
        except Exception as e:
            return self._failure(
                request_id, "unavailable", f"Unable to deserialize {rvid}: {e.__class__.__name__}: {e}"
            )
        dry_run = action == "dry_run"
        ctx = handler.HandlerContext(resource, dry_run=dry_run)
        try:
            provider = handler.Commander.get_provider(self.agent, resource)
            provider.set_cache(self.cache)
            calls = _ServerCalls(request.get("dependency_changed"))
            provider._client = calls
        except Exception as e:
            return self._failure(request_id, "unavailable", f"Unable to find a handler for {rvid}: {e}")
        returned = None
        try:
            with self.cache:
                resource.resolve_all_references(ctx)
                _redact_stderr(resource)
                if action == "facts":
                    returned = provider.check_facts(ctx, resource)
                else:
                    provider.execute(ctx, resource, dry_run)
                    if (
                        not dry_run
                        and request.get("dependency_changed")
                        and getattr(resource, "receive_events", True)
                        and provider.can_reload()
                    ):
                        provider.do_reload(ctx, resource)
        except handler.SkipResource as e:
            ctx.set_resource_state(const.HandlerResourceState.skipped)
            ctx.warning(msg="Resource %(resource_id)s was skipped: %(reason)s", resource_id=rvid, reason=e.args)
        except Exception as e:
            ctx.set_resource_state(const.HandlerResourceState.failed)
            ctx.exception(
                "An error occurred during deployment of %(resource_id)s (exception: %(exception)s)",
                resource_id=rvid,
                exception=f"{e.__class__.__name__}('{e}')",
                traceback=traceback.format_exc(),
            )
        finally:
            try:
                provider.close()
            except Exception:
                pass
        return {
            "id": request_id,
            "resolved": _resolved(resource),
            "status": "deployed" if action == "facts" and ctx.resource_state is None else _status(ctx, dry_run),
            "change": getattr(ctx.change, "value", str(ctx.change)),
            "changes": _changes(ctx),
            "facts": _facts(ctx, returned),
            "logs": _logs(ctx),
            "discovered": calls.discovered,
        }


def _requests():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            yield json.loads(line)
        except ValueError as e:
            _send({"id": None, "error": f"the request is not JSON: {e}"})


def main():
    version = getattr(inmanta, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("inmanta-core")
        except Exception:
            version = "unknown"
    _send({"ready": True, "python": sys.version.split()[0], "inmanta_core": version})
    requests = _requests()
    executor = None
    for request in requests:
        if request.get("action") == "load":
            errors = _load_modules(request.get("code") or [], request.get("load") or [])
            executor = Executor(request.get("environment"))
            _send({"id": request.get("id"), "loaded": True, "errors": errors})
        elif executor is None:
            _send({"id": request.get("id"), "error": "the executor has no code loaded yet"})
        elif request.get("action") == "resolve":
            _send(_resolve_only(request))
        else:
            _send(executor.handle(request))


if __name__ == "__main__":
    main()
