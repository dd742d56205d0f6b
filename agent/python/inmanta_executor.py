"""The Python side of the agent's Python executor (docs/modules.md, "Python handlers").

One process per environment and handler-code version. It imports the modules' `inmanta_plugins`
packages (which registers their `@resource` classes and `@provider` handlers with inmanta-core),
then serves requests from the agent: one JSON object per line on stdin, one JSON reply per line on
the protocol descriptor. Everything else a handler prints goes to stderr, so it cannot corrupt the
protocol.

The handler machinery is inmanta-core's own (`Resource.deserialize`, `Commander.get_provider`,
`HandlerContext`, `AgentCache`, the handlers' `execute` and `check_facts`); this file only
translates between our JSON and those objects.

Requests:  {"id": n, "action": "deploy" | "dry_run" | "facts", "resource": {...},
            "dependency_changed": bool}
Replies:   {"id": n, "status": ..., "change": ..., "changes": {...}, "logs": [...], "facts": {...}}
First line written: {"ready": true, "python": "3.13.0", "inmanta_core": "20.1.0", "errors": {...}}
"""

import asyncio
import datetime
import importlib
import json
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


def _args():
    """--code DIR (repeatable), --load MODULE (repeatable), --environment UUID, --agent NAME."""
    code, load, environment = [], [], None
    argv = sys.argv[1:]
    i = 0
    while i < len(argv):
        flag, value = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        if flag == "--code":
            code.append(value)
        elif flag == "--load":
            load.append(value)
        elif flag == "--environment":
            environment = value
        i += 2
    return code, load, environment


CODE_DIRS, LOAD, ENVIRONMENT = _args()
for directory in reversed(CODE_DIRS):
    sys.path.insert(0, directory)

try:
    import inmanta
    import inmanta.agent.cache
    import inmanta.agent.executor
    import inmanta.const as const
    import inmanta.resources
    from inmanta.agent import handler
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


def _load_modules():
    errors = {}
    for module in LOAD:
        name = module if module.startswith("inmanta_plugins.") else "inmanta_plugins." + module
        try:
            importlib.import_module(name)
        except Exception:
            errors[module] = traceback.format_exc()
    return errors


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
    def __init__(self):
        self.agent = _Agent(ENVIRONMENT)
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
        except Exception as e:
            return self._failure(request_id, "unavailable", f"Unable to find a handler for {rvid}: {e}")
        returned = None
        try:
            with self.cache:
                resource.resolve_all_references(ctx)
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
            "status": "deployed" if action == "facts" and ctx.resource_state is None else _status(ctx, dry_run),
            "change": getattr(ctx.change, "value", str(ctx.change)),
            "changes": _changes(ctx),
            "facts": _facts(ctx, returned),
            "logs": _logs(ctx),
        }


def main():
    errors = _load_modules()
    version = getattr(inmanta, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("inmanta-core")
        except Exception:
            version = "unknown"
    _send({"ready": True, "python": sys.version.split()[0], "inmanta_core": version, "errors": errors})
    executor = Executor()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as e:
            _send({"id": None, "error": f"the request is not JSON: {e}"})
            continue
        _send(executor.handle(request))


if __name__ == "__main__":
    main()
