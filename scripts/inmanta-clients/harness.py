"""The differential client harness: one scripted sequence of Inmanta's own clients against a server.

Runs, in the reference venv (inmanta-core 20.1), against the server at --host/--port:
  * every `inmanta-cli` command, subcommand and option, on a server holding a real exported,
    released and deployed version;
  * Inmanta's exporter (`inmanta export` with -d, --partial, --delete-resource-set, -j,
    --export-compile-data, --metadata) on the model in project/;
  * the `inmanta.protocol` client calls Inmanta's documentation shows (environments, versions,
    resources, params, dry runs, deploy).

Every step is written as one JSON line: exit code or HTTP status, and the output with ids, dates
and other per-run values normalised, so that the real server's record (record.jsonl, made once
with scripts/inmanta-clients/record.sh) can be compared with ours (compare.py).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
INMANTA = os.path.join(BIN, "inmanta")
FILE_DIR = "/tmp/inmanta-clients-harness"

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
SHA1 = re.compile(r"\b[0-9a-f]{40}\b")
PORT = re.compile(r"127\.0\.0\.1:\d+")
TMP = re.compile(r"/tmp/tmp[\w.-]+")
DURATION = re.compile(r"\b\d+\.\d+ ?s\b")


def normalise_text(text: str) -> str:
    text = UUID.sub("<id>", text)
    text = DATE.sub("<date>", text)
    text = SHA1.sub("<sha1>", text)
    text = PORT.sub("<server>", text)
    text = TMP.sub("<tmp>", text)
    text = DURATION.sub("<duration>", text)
    # Table widths follow the widest cell; what matters is the cells.
    text = re.sub(r"-{3,}", "---", text)
    text = re.sub(r"={3,}", "===", text)
    text = re.sub(r"[ \t]+", " ", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return normalise_text(value)
    return value


class Harness:
    def __init__(self, host: str, port: int, out: Any, token: str | None) -> None:
        self.host = host
        self.port = port
        self.out = out
        self.token = token
        self.work = tempfile.mkdtemp(prefix="inmanta-clients-")
        # COLUMNS: tables as wide as their cells, so that no date or id is wrapped over two lines.
        self.env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"), COLUMNS="400")
        self.env.pop("INMANTA_CONFIG_ENVIRONMENT", None)
        if token:
            self.env["INMANTA_CLIENT_REST_TRANSPORT_TOKEN"] = token
            self.env["INMANTA_CMDLINE_REST_TRANSPORT_TOKEN"] = token
            self.env["INMANTA_COMPILER_REST_TRANSPORT_TOKEN"] = token
        self.client = self.make_client()
        self.cli_env = {"COLUMNS": "400"}

    def make_client(self) -> Any:
        from inmanta import config
        from inmanta.protocol.endpoints import SyncClient

        config.Config.load_config()
        config.Config.set("client_rest_transport", "host", self.host)
        config.Config.set("client_rest_transport", "port", str(self.port))
        if self.token:
            config.Config.set("client_rest_transport", "token", self.token)
        return SyncClient("client", timeout=60)

    def record(self, step: str, **fields: Any) -> None:
        self.out.write(json.dumps({"step": step, **fields}, sort_keys=True) + "\n")
        self.out.flush()

    # ------------------------------------------------------------------ the three kinds of step

    def cli(self, step: str, *args: str) -> tuple[int, str]:
        """`inmanta-cli ARGS`, run in this process through click (a new interpreter per command
        would cost seconds of imports each): what a user sees, exit code, output, last error line."""
        from click.testing import CliRunner
        from inmanta.main import cmd

        cwd = os.getcwd()
        os.chdir(self.work)
        try:
            runner = CliRunner()
            result = runner.invoke(cmd, ["--host", self.host, "--port", str(self.port), *args], env=self.cli_env)
        finally:
            os.chdir(cwd)
        stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            # What the interpreter prints last for an uncaught exception.
            stderr += "".join(traceback.format_exception_only(result.exception))
        self.record(
            step,
            kind="cli",
            argv=normalise(list(args)),
            exit=result.exit_code,
            stdout=normalise_text(result.stdout),
            stderr=normalise_text(last_error_line(stderr)),
        )
        return result.exit_code, result.stdout

    def export(self, step: str, env_id: str, *args: str) -> int:
        argv = [INMANTA, "export", "-e", env_id, "--server_address", self.host, "--server_port", str(self.port), *args]
        project = os.path.join(self.work, "project")
        proc = subprocess.run(argv, cwd=project, env=self.env, capture_output=True, text=True, timeout=300)
        self.record(
            step,
            kind="export",
            argv=normalise(list(args)),
            exit=proc.returncode,
            result=normalise_text(export_outcome(proc.stdout + proc.stderr)),
        )
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
        return proc.returncode

    def call(self, step: str, method: str, **kwargs: Any) -> Any:
        result = getattr(self.client, method)(**kwargs)
        self.record(
            step,
            kind="client",
            call=method,
            args=normalise({k: str(v) for k, v in kwargs.items()}),
            status=result.code,
            result=normalise(result.result),
        )
        return result

    # ------------------------------------------------------------------ waiting

    def latest(self, env_id: str) -> int:
        versions = self.client.list_versions(tid=env_id).result["versions"]
        return max(v["version"] for v in versions)

    def wait_deployed(self, env_id: str) -> None:
        """Until no released resource is still to deploy (not recorded: timing differs)."""
        for _ in range(240):
            result = self.client.resource_list(tid=env_id, deploy_summary=True, limit=1)
            summary = (result.result or {}).get("metadata", {}).get("deploy_summary")
            if summary and summary["total"] > 0:
                states = summary["by_state"]
                if states.get("available", 0) == 0 and states.get("deploying", 0) == 0:
                    return
            time.sleep(0.5)
        raise SystemExit(f"the deployment of {env_id} did not finish")

    def wait_available(self, env_id: str, count: int) -> None:
        """Until `count` released resources wait for a deploy: the real server's scheduler takes
        a released version in a moment after the export returns (not recorded)."""
        for _ in range(240):
            result = self.client.resource_list(tid=env_id, filter={"status": ["available"]}, limit=1)
            if ((result.result or {}).get("metadata") or {}).get("total", 0) >= count:
                return
            time.sleep(0.5)
        raise SystemExit(f"no {count} resources of {env_id} became available")

    def environment_metrics(self, env_id: str) -> None:
        """`GET /api/v2/metrics` over a day long past (neither server recorded anything in it, so
        the answers are comparable value for value), rounded and not, and each refusal."""
        import datetime

        utc = datetime.timezone.utc
        day = {
            "start_interval": datetime.datetime(2020, 1, 1, tzinfo=utc),
            "end_interval": datetime.datetime(2020, 1, 2, tzinfo=utc),
        }
        every = [
            "resource.resource_count",
            "resource.agent_count",
            "orchestrator.compile_time",
            "orchestrator.compile_waiting_time",
            "orchestrator.compile_rate",
        ]
        metrics = "get_environment_metrics"
        self.call("client get_environment_metrics", metrics, tid=env_id, metrics=every, nb_datapoints=4, **day)
        self.call(
            "client get_environment_metrics rounded",
            metrics, tid=env_id, metrics=every, nb_datapoints=5, round_timestamps=True, **day,
        )
        self.call(
            "client get_environment_metrics unknown metric",
            metrics, tid=env_id, metrics=["no.such.metric"], nb_datapoints=4, **day,
        )
        self.call("client get_environment_metrics no metric", metrics, tid=env_id, metrics=[], nb_datapoints=4, **day)
        self.call("client get_environment_metrics 0 points", metrics, tid=env_id, metrics=every, nb_datapoints=0, **day)
        self.call(
            "client get_environment_metrics more points than minutes",
            metrics, tid=env_id, metrics=every, nb_datapoints=1440, **day,
        )
        self.call(
            "client get_environment_metrics rounded, fewer hours than points",
            metrics, tid=env_id, metrics=every, nb_datapoints=30, round_timestamps=True, **day,
        )
        self.call(
            "client get_environment_metrics end before start",
            metrics, tid=env_id, metrics=every, nb_datapoints=4,
            start_interval=day["end_interval"], end_interval=day["start_interval"],
        )

    # ------------------------------------------------------------------ the sequence

    def run(self) -> None:
        shutil.copytree(os.path.join(HERE, "project"), os.path.join(self.work, "project"))
        shutil.rmtree(FILE_DIR, ignore_errors=True)

        # Projects and environments: the Python client first, then every inmanta-cli form.
        project = self.call("client create_project", "create_project", name="clients").result["project"]
        self.call("client list_projects", "list_projects")
        self.call("client get_project", "get_project", id=project["id"])
        env = self.call(
            "client create_environment", "create_environment", project_id=project["id"], name="main"
        ).result["environment"]
        env_id = env["id"]
        self.call("client list_environments", "list_environments")
        self.call("client environment_list (v2)", "environment_list")
        self.call("client environment_get (v2)", "environment_get", id=env_id)

        self.cli("project create", "project", "create", "-n", "cli-project")
        self.cli("project list", "project", "list")
        self.cli("project show", "project", "show", "cli-project")
        self.cli("project modify", "project", "modify", "-n", "cli-project-2", "cli-project")
        self.cli("project show unknown", "project", "show", "no-such-project")
        self.cli("environment create", "environment", "create", "-n", "cli-env", "-p", "cli-project-2")
        self.cli(
            "environment create --repo-url --branch --save",
            "environment", "create", "-n", "cli-env-2", "-p", "cli-project-2",
            "-r", "https://example.invalid/model.git", "-b", "main", "--save",
        )
        self.cli("environment list", "environment", "list")
        self.cli("environment show", "environment", "show", "cli-env")
        self.cli(
            "environment show --format", "environment", "show", "--format",
            "{id} {name} {project} {repo_url} {repo_branch}", "cli-env-2",
        )
        self.cli(
            "environment modify", "environment", "modify", "-n", "cli-env-3",
            "-r", "https://example.invalid/other.git", "-b", "dev", "cli-env-2",
        )
        self.cli("environment modify name only", "environment", "modify", "-n", "cli-env-4", "cli-env-3")
        self.cli("environment save", "environment", "save", "cli-env")
        self.cli("environment setting list", "environment", "setting", "list", "-e", env_id)
        self.cli("environment setting set bool", "environment", "setting", "set", "-e", env_id, "-k", "auto_deploy", "-o", "false")
        self.cli("environment setting get", "environment", "setting", "get", "-e", env_id, "-k", "auto_deploy")
        self.cli("environment setting delete", "environment", "setting", "delete", "-e", env_id, "-k", "auto_deploy")
        self.cli("environment setting get after delete", "environment", "setting", "get", "-e", env_id, "-k", "auto_deploy")
        self.cli("environment setting set int", "environment", "setting", "set", "-e", env_id, "-k", "recompile_backoff", "-o", "2")
        self.cli("environment setting set unknown", "environment", "setting", "set", "-e", env_id, "-k", "no_such_setting", "-o", "1")
        self.cli("environment setting set server_compile", "environment", "setting", "set", "-e", env_id, "-k", "server_compile", "-o", "false")
        self.call("client environment_settings_list", "environment_settings_list", tid=env_id)
        self.call("client environment_setting_get", "environment_setting_get", tid=env_id, id="auto_deploy")
        self.call("client environment_settings_set", "environment_settings_set", tid=env_id, id="auto_deploy", value=False)

        # A version exported, released from the CLI and deployed; a second one with -d.
        self.export("export -j", env_id, "-j", os.path.join(self.work, "export.json"))
        self.export("export", env_id)
        first = str(self.latest(env_id))
        self.cli("version list", "version", "list", "-e", env_id)
        self.cli("version report before release", "version", "report", "-e", env_id, "-i", first)
        self.cli("version release", "version", "release", "-e", env_id, first)
        self.wait_deployed(env_id)
        self.cli("monitor", "monitor", "-e", env_id)
        self.cli("version release again", "version", "release", "-e", env_id, "--push", "--full", first)
        self.cli("version release unknown", "version", "release", "-e", env_id, "99")
        self.cli("version report", "version", "report", "-e", env_id, "-i", first)
        self.cli("version report -l", "version", "report", "-e", env_id, "-i", first, "-l")
        self.export(
            "export -d --metadata --export-compile-data", env_id, "-d",
            "--metadata", '{"type": "harness", "message": "second export"}', "--export-compile-data",
            "--export-compile-data-file", os.path.join(self.work, "compile-data.json"),
        )
        self.wait_deployed(env_id)
        self.export("export --partial", env_id, "--partial", "-f", "partial.cf")
        self.export("export --partial --delete-resource-set", env_id, "--partial", "-f", "partial.cf", "--delete-resource-set", "set-a", "-d")
        self.wait_deployed(env_id)
        self.export("export --metadata (plain text) -d --full", env_id, "-d", "--full", "--metadata", "plain message")
        self.wait_deployed(env_id)
        self.cli("version list after exports", "version", "list", "-e", env_id)
        self.cli("monitor after exports", "monitor", "-e", env_id)

        # Agents.
        self.cli("agent list", "agent", "list", "-e", env_id)
        self.cli("agent pause --agent", "agent", "pause", "-e", env_id, "--agent", "internal")
        self.cli("agent list paused", "agent", "list", "-e", env_id)
        self.cli("agent unpause --agent", "agent", "unpause", "-e", env_id, "--agent", "internal")
        self.cli("agent pause --all", "agent", "pause", "-e", env_id, "--all")
        self.cli("agent unpause --all", "agent", "unpause", "-e", env_id, "--all")
        self.cli("agent pause without agent", "agent", "pause", "-e", env_id)
        self.cli("agent pause both", "agent", "pause", "-e", env_id, "--agent", "internal", "--all")

        # Parameters.
        self.cli("param set", "param", "set", "-e", env_id, "--name", "color", "--value", "blue")
        self.cli("param set again", "param", "set", "-e", env_id, "--name", "color", "--value", "green")
        self.cli("param get", "param", "get", "-e", env_id, "--name", "color")
        self.cli("param get unknown", "param", "get", "-e", env_id, "--name", "no-such-param")
        self.cli("param list", "param", "list", "-e", env_id)
        rid = "std::testing::NullResource[internal,name=a]"
        self.cli("param get --resource (fact not known)", "param", "get", "-e", env_id, "--name", "size", "--resource", rid)

        # The resource action log of a deployed resource.
        latest = self.latest(env_id)
        # The first version is the one whose release deployed every resource.
        rvid = f"{rid},v={first}"
        self.cli("action-log list", "action-log", "list", "-e", env_id, "--rvid", rvid)
        self.cli("action-log list --action deploy", "action-log", "list", "-e", env_id, "--rvid", rvid, "--action", "deploy")
        self.cli("action-log list --action store", "action-log", "list", "-e", env_id, "--rvid", rvid, "--action", "store")
        logs = (self.client.get_resource(tid=env_id, id=rvid, logs=True, log_action="deploy").result or {}).get("logs")
        logs = logs or []
        action_id = logs[0]["action_id"] if logs else "00000000-0000-0000-0000-000000000000"
        self.cli("action-log show-messages", "action-log", "show-messages", "-e", env_id, "--rvid", rvid, "--action-id", action_id)

        # Tokens (authentication is off on the servers the harness runs against).
        self.cli("token create", "token", "create", "-e", env_id, "--api", "--compiler", "--agent")
        self.cli("token bootstrap", "token", "bootstrap")

        # The Python client calls of Inmanta's documentation.
        self.call("client list_versions", "list_versions", tid=env_id)
        self.call("client list_versions paged", "list_versions", tid=env_id, start=0, limit=1)
        self.call("client get_version", "get_version", tid=env_id, id=latest)
        self.call("client get_version include_logs", "get_version", tid=env_id, id=latest, include_logs=True, log_filter="deploy", limit=2)
        self.call("client get_version unknown", "get_version", tid=env_id, id=99)
        self.call("client list_desired_state_versions", "list_desired_state_versions", tid=env_id)
        self.call("client resource_list", "resource_list", tid=env_id)
        self.call("client resource_list deploy_summary", "resource_list", tid=env_id, deploy_summary=True)
        self.call("client resource_list limit=0", "resource_list", tid=env_id, deploy_summary=True, limit=0)
        self.call("client resource_list filtered", "resource_list", tid=env_id, filter={"agent": ["internal"]}, sort="resource_type.asc")
        self.call("client resource_details", "resource_details", tid=env_id, rid=rid)
        self.call("client resource_history", "resource_history", tid=env_id, rid=rid)
        self.call("client resource_logs", "resource_logs", tid=env_id, rid=rid)
        self.call("client get_resource", "get_resource", tid=env_id, id=rvid, logs=True)
        self.call("client get_resource unknown", "get_resource", tid=env_id, id=f"{rid[:-1]}x],v={latest}")
        self.call("client get_resource_actions", "get_resource_actions", tid=env_id, resource_type="std::testing::NullResource", limit=3)
        self.call("client get_resources_in_version", "get_resources_in_version", tid=env_id, version=latest)
        self.call("client get_resource_state_summary", "get_agents", tid=env_id)
        self.call("client list_params", "list_params", tid=env_id)
        self.call("client set_param", "set_param", tid=env_id, id="size", source="user", value="42")
        self.call("client set_param with resource", "set_param", tid=env_id, id="size", source="fact", value="7", resource_id=rid)
        self.call("client get_param", "get_param", tid=env_id, id="size", resource_id=rid)
        self.call("client get_parameters", "get_parameters", tid=env_id)
        self.call("client get_facts", "get_facts", tid=env_id, rid=rid)
        self.call("client delete_param", "delete_param", tid=env_id, id="size")
        dryrun = self.call("client dryrun_request", "dryrun_request", tid=env_id, id=latest).result or {}
        dryrun_id = dryrun.get("dryrun", {}).get("id", "00000000-0000-0000-0000-000000000000")
        self.wait_dryrun(env_id, dryrun_id)
        self.call("client dryrun_list", "dryrun_list", tid=env_id)
        self.call("client dryrun_report", "dryrun_report", tid=env_id, id=dryrun_id)
        trigger = self.call("client dryrun_trigger (v2)", "dryrun_trigger", tid=env_id, version=latest).result or {}
        trigger.setdefault("data", "00000000-0000-0000-0000-000000000000")
        self.wait_dryrun(env_id, trigger["data"])
        self.call("client list_dryruns (v2)", "list_dryruns", tid=env_id, version=latest)
        self.call("client get_dryrun_diff (v2)", "get_dryrun_diff", tid=env_id, version=latest, report_id=trigger["data"])
        # Issue 46: a dry run of what a ResourceFilter selects, with the caller's context.
        filtered = self.call(
            "client dryrun_filtered", "dryrun_filtered", tid=env_id,
            filter={"resourceType": {"eq": ["std::testing::NullResource"]}}, context={"harness": {"step": 1}},
        ).result or {}
        filtered_id = (filtered.get("data") or {}).get("id", "00000000-0000-0000-0000-000000000000")
        self.wait_dryrun(env_id, filtered_id)
        self.call("client get_dryrun_diff filtered", "get_dryrun_diff", tid=env_id, version=latest, report_id=filtered_id)
        pinned = self.call(
            "client dryrun_filtered not orphaned", "dryrun_filtered", tid=env_id,
            filter={"resourceType": {"eq": ["std::testing::NullResource"]}, "isOrphan": False},
            context={"harness": {"step": 2}},
        ).result or {}
        pinned_id = (pinned.get("data") or {}).get("id", "00000000-0000-0000-0000-000000000000")
        self.wait_dryrun(env_id, pinned_id)
        self.call("client get_dryrun_diff not orphaned", "get_dryrun_diff", tid=env_id, version=latest, report_id=pinned_id)
        self.call("client list_dryruns after filtered", "list_dryruns", tid=env_id, version=latest)
        self.call("client dryrun_filtered nothing matches", "dryrun_filtered", tid=env_id,
                  filter={"resourceIdValue": {"eq": ["no-such-resource"]}})
        self.call("client dryrun_filtered malformed", "dryrun_filtered", tid=env_id, filter={"nonsense": 1})
        # The web console's dates (`YYYY-MM-DD HH:mm:ss`, sent with a `+`) and other ISO 8601 forms.
        for bound in ["ge:2026-11-24 22:07:46", "ge:2000-01-01", "le:2999-W01-1T10:00", "lt:29991231T235959+0200"]:
            self.call(f"client get_compile_reports requested {bound}", "get_compile_reports", tid=env_id,
                      filter={"requested": [bound]})
            self.call(f"client list_desired_state_versions date {bound}", "list_desired_state_versions", tid=env_id,
                      filter={"date": [bound]})
            self.call(f"client get_parameters updated {bound}", "get_parameters", tid=env_id, filter={"updated": [bound]})
            self.call(f"client resource_logs timestamp {bound}", "resource_logs", tid=env_id, rid=rid,
                      filter={"timestamp": [bound]})
        self.call("client get_compile_reports requested yesterday", "get_compile_reports", tid=env_id,
                  filter={"requested": ["ge:yesterday"]})
        self.call("client deploy full", "deploy", tid=env_id, agent_trigger_method="push_full_deploy")
        self.wait_deployed(env_id)
        self.call("client deploy incremental", "deploy", tid=env_id, agent_trigger_method="push_incremental_deploy", agents=["internal"])
        self.wait_deployed(env_id)
        self.call("client release_version released", "release_version", tid=env_id, id=latest, push=False)
        self.call("client get_compile_queue", "get_compile_queue", tid=env_id)
        self.call("client get_pip_config", "get_pip_config", tid=env_id, version=latest)
        self.call("client get_pip_config unknown version", "get_pip_config", tid=env_id, version=latest + 1000)
        self.call("client get_reports", "get_reports", tid=env_id)
        self.call("client list_agents (v1)", "list_agents", tid=env_id)
        self.environment_metrics(env_id)
        self.graphql(env_id)

        # Compiles and clean-up.
        self.cli("environment recompile", "environment", "recompile", env_id)
        self.cli("environment recompile --update", "environment", "recompile", "-u", env_id)
        self.cli("environment delete", "environment", "delete", "cli-env-4")
        self.cli("environment delete unknown", "environment", "delete", "no-such-env")
        self.cli("project delete with environments", "project", "delete", "cli-project-2")
        self.cli("environment delete last", "environment", "delete", "cli-env")
        self.cli("project delete", "project", "delete", "cli-project-2")
        self.cli("project list at the end", "project", "list")
        self.call("client delete_version", "delete_version", tid=env_id, id=int(first))
        self.call("client clear_environment", "clear_environment", id=env_id)
        self.call("client delete_environment", "delete_environment", id=env_id)
        self.call("client delete_project", "delete_project", id=project["id"])
        self.compliance()

    def graphql(self, env_id: str) -> None:
        """`POST /api/v2/graphql`: the queries web-console 4.x sends (environment preview,
        notification badge, resources page), then filters, ordering, paging both ways and errors;
        and the shape of `GET /api/v2/graphql/schema` (types, fields, arguments; not the prose)."""
        preview = "query { environments { edges { node { name id halted isExpertMode isCompiling } } } }"
        self.call("graphql console environment preview", "graphql", query=preview)
        badge = (
            'query { notifications(filter: { cleared: false, environment: "%s" } '
            'orderBy: [{key: "created", order: "desc"}]) { edges { node { title severity read } } } }' % env_id
        )
        self.call("graphql console notifications", "graphql", query=badge)
        resources = """
          query GetResources($filter: ResourceFilter!, $environment: String!, $first: Int, $after: String,
                             $last: Int, $before: String, $orderBy: [StrawberryOrder!]) {
            resources(filter: $filter, first: $first, after: $after, last: $last, before: $before,
                      orderBy: $orderBy) {
              totalCount
              pageInfo { hasNextPage hasPreviousPage endCursor startCursor }
              edges { node { resourceId resourceType agent resourceIdValue requiresLength
                             state { isDeploying lastHandlerRun compliance blocked lastHandlerRunAt isOrphan } } }
            }
            resourceSummary(environment: $environment) { lastHandlerRun blocked compliance isDeploying totalCount }
          }"""

        def page(step: str, **variables: Any) -> Any:
            variables = {"environment": env_id, **variables}
            variables["filter"] = {"environment": env_id, **variables.get("filter", {})}
            answer = self.call(step, "graphql", query=resources, variables=variables, operationName="GetResources")
            data = ((answer.result or {}).get("data") or {}).get("data") or {}
            return (data.get("resources") or {}).get("pageInfo") or {}

        first = page("graphql console resources", first=2)
        second = page("graphql console resources next page", first=2, after=first.get("endCursor"))
        page("graphql console resources previous page", last=2, before=second.get("startCursor"))
        page("graphql resources ordered", first=20, orderBy=[{"key": "agent", "order": "desc"}, {"key": "resource_id_value", "order": "asc"}])
        page("graphql resources ordered by state", first=20, orderBy=[{"key": "last_handler_run", "order": "asc"}])
        page("graphql resources filter type", filter={"resourceType": {"contains": ["%Null%"]}})
        page("graphql resources filter value", filter={"resourceIdValue": {"eq": ["a"], "notContains": ["%z%"]}})
        page("graphql resources filter agent neq", filter={"agent": {"neq": ["internal"]}})
        page("graphql resources filter state", filter={"lastHandlerRun": {"eq": ["SUCCESSFUL"]}, "blocked": {"neq": ["BLOCKED"]}})
        page("graphql resources filter compliance", filter={"compliance": {"eq": ["COMPLIANT", "HAS_UPDATE"]}})
        page("graphql resources filter orphans", filter={"isOrphan": True})
        page("graphql resources filter not orphans", filter={"isOrphan": False, "isDeploying": False, "purged": False})
        page("graphql resources unknown environment", filter={"environment": "00000000-0000-0000-0000-000000000000"},
             environment="00000000-0000-0000-0000-000000000000")
        page("graphql error bad sort key", orderBy=[{"key": "no_such_key", "order": "asc"}])
        page("graphql error bad sort order", orderBy=[{"key": "agent", "order": "sideways"}])
        page("graphql error first and last", first=2, last=2)
        self.call(
            "graphql environments paged and filtered", "graphql",
            query="query($id: UUID) { environments(first: 1, filter: {id: $id}, orderBy: [{key: \"name\", order: \"desc\"}]) "
            "{ totalCount pageInfo { hasNextPage hasPreviousPage } edges { node { name halted description icon "
            "repoUrl repoBranch isMarkedForDeletion } } } }",
            variables={"id": env_id},
        )
        self.call(
            "graphql notifications all fields", "graphql",
            query='query { notifications(filter: {environment: "%s"}, first: 5) { totalCount '
            "edges { node { title message severity read cleared uri } } } }" % env_id,
        )
        schema = self.client.graphql_schema()
        self.record("graphql schema", kind="client", call="graphql_schema", status=schema.code, result=schema_shape(schema.result))

    def compliance(self) -> None:
        """Report-only resources in an environment of their own (compliance.cf): the compliance
        report and the summaries after a deploy, while a changed intent waits for its deploy
        (agent paused), and once it is deployed."""
        project = self.call("compliance create_project", "create_project", name="compliance").result["project"]
        env = self.call(
            "compliance create_environment", "create_environment", project_id=project["id"], name="compliance"
        ).result["environment"]
        env_id = env["id"]
        null = "std::testing::NullResource[internal,name={}]"
        ok, drift, fail, enforced = (null.format(n) for n in ("ro-ok", "ro-drift", "ro-fail", "enforced"))
        report = "get_compliance_report"
        self.export("compliance export -d", env_id, "-d", "-f", "compliance.cf")
        self.wait_deployed(env_id)
        self.call("compliance report", report, tid=env_id, resource_ids=[ok, drift, fail, enforced])
        self.call("compliance report one", report, tid=env_id, resource_ids=[drift])
        self.call("compliance report none", report, tid=env_id, resource_ids=[])
        self.call("compliance report unknown id", report, tid=env_id, resource_ids=[ok, null.format("nope")])
        self.call("compliance resource_list deploy_summary", "resource_list", tid=env_id, deploy_summary=True, sort="resource_id_value.asc")
        self.call(
            "compliance resource_list status non_compliant", "resource_list",
            tid=env_id, filter={"status": ["non_compliant"]},
        )
        self.call("compliance resource_details non_compliant", "resource_details", tid=env_id, rid=drift)
        self.call("compliance resource_details compliant", "resource_details", tid=env_id, rid=ok)

        # A new intent for ro-drift, released (auto_deploy) while the agent is paused: it has an
        # update until a deploy checks it.
        self.cli("compliance agent pause", "agent", "pause", "-e", env_id, "--agent", "internal")
        self.export("compliance export fixed", env_id, "-f", "compliance-fixed.cf")
        self.wait_available(env_id, 1)
        self.call("compliance report has_update", report, tid=env_id, resource_ids=[ok, drift, fail, enforced])
        self.cli("compliance agent unpause", "agent", "unpause", "-e", env_id, "--agent", "internal")
        self.call("compliance deploy", "deploy", tid=env_id, agent_trigger_method="push_incremental_deploy")
        self.wait_deployed(env_id)
        self.call("compliance report after fix", report, tid=env_id, resource_ids=[ok, drift, fail, enforced])
        self.call("compliance resource_list after fix", "resource_list", tid=env_id, deploy_summary=True, sort="resource_id_value.asc")

        self.call("compliance delete_environment", "delete_environment", id=env_id)
        self.call("compliance delete_project", "delete_project", id=project["id"])

    def wait_dryrun(self, env_id: str, dryrun_id: str) -> None:
        for _ in range(240):
            answer = self.client.dryrun_report(tid=env_id, id=dryrun_id)
            if answer.code != 200 or answer.result["dryrun"]["todo"] == 0:
                return
            time.sleep(0.5)
        raise SystemExit(f"dry run {dryrun_id} did not finish")


def last_error_line(stderr: str) -> str:
    """What a user reads of a failing command: its last line (tracebacks and warnings vary)."""
    lines = [
        line for line in stderr.strip().splitlines()
        if line.strip() and "RuntimeDirWarning" not in line and "user_runtime_dir" not in line
    ]
    return lines[-1] if lines else ""


def schema_shape(answer: Any) -> Any:
    """The GraphQL introspection without its prose: each type's kind, fields with their arguments
    and types, input fields and enum values."""
    def name(t: Any) -> str:
        if t["kind"] == "NON_NULL":
            return name(t["ofType"]) + "!"
        if t["kind"] == "LIST":
            return "[" + name(t["ofType"]) + "]"
        return t["name"]

    schema = ((answer or {}).get("data") or {}).get("__schema")
    if not schema:
        return answer
    shape = {}
    for t in schema["types"]:
        if t["name"].startswith("__"):
            continue
        fields = [
            f["name"] + "(" + ",".join(a["name"] + ":" + name(a["type"]) for a in f["args"]) + "):" + name(f["type"])
            for f in t.get("fields") or []
        ]
        inputs = [f["name"] + ":" + name(f["type"]) + "=" + str(f["defaultValue"]) for f in t.get("inputFields") or []]
        values = [v["name"] for v in t.get("enumValues") or []]
        shape[t["name"]] = {"kind": t["kind"], "fields": fields, "inputs": inputs, "values": values}
    return {"query": schema["queryType"]["name"], "types": shape}


def export_outcome(output: str) -> str:
    """The exporter's verdict: its banner and error lines, not its timings or log chatter."""
    keep = [
        line for line in output.splitlines()
        if "SUCCESS" in line or "FAILURE" in line or line.startswith("Error") or "caused by" in line
    ]
    return "\n".join(keep)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", default=None)
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    with open(options.out, "w") as out:
        harness = Harness(options.host, options.port, out, options.token)
        try:
            harness.run()
        finally:
            shutil.rmtree(harness.work, ignore_errors=True)


if __name__ == "__main__":
    main()
