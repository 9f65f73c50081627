"""`specialists mcp --job <id>`: one job's server (a Claude Code or Codex thread child). It
acts as that job and serves only the agent tools offered to it; the runners put it on the
child's command line (claude --mcp-config, codex -c mcp_servers.specialists)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specialists.features.threads.transports import front_options
from specialists.fronts.cli.main import main
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import UnknownTool, call_tool, served_tools
from specialists.project import Project
from specialists.runners.base import LaunchSpec
from specialists.runners.claude import claude_argv
from specialists.runners.codex import codex_argv
from specialists.store.jobs import JobStore
from tests.support.jobs import new_job
from tests.support.threads import (
    inbox_events,
    thread_project,
    unsupervised_child,
)


def _root_job(root: Path) -> str:
    record, lock = new_job(JobStore(root / ".specialists", news=None), root)
    lock.release()
    return record.id


def test_a_job_server_acts_as_the_job_and_serves_only_its_agent_tools() -> None:
    """Owner job-<id> (never the client's session), no job tools, no `events`, and the child
    tools because the job is a thread; a job tool called by name is unknown to it, and a
    report made through it reaches the thread's parent as the child's."""
    root = thread_project()
    tid, record, lock = unsupervised_child(root)
    job_id = record.id
    ctx = ServerContext(project=Project(root), job_scope=job_id)
    assert ctx.keys() == (f"job-{job_id}",)
    names = {t.name for t in served_tools(ctx)}
    assert {"report_to_parent", "close_thread", "spawn_thread", "bg_run", "sleep"} <= names
    assert not {"run", "status", "result", "stop", "events", "schedule"} & names
    with pytest.raises(UnknownTool):
        call_tool(ctx, "run", {"specialist": "x", "prompt": "y"})
    reply = call_tool(ctx, "report_to_parent", {"report": "from the scoped server"})
    assert not reply.is_error, reply.text
    (event,) = inbox_events(root)
    assert event.id == f"{tid}:child_report:1" and "from the scoped server" in event.body
    lock.release()


def test_a_root_job_server_has_no_child_tools() -> None:
    root = Path(Project().root)
    ctx = ServerContext(project=Project(root), job_scope=_root_job(root))
    names = {t.name for t in served_tools(ctx)}
    assert "bg_run" in names and not {"report_to_parent", "close_thread", "run"} & names


@pytest.mark.parametrize(
    ("job", "message"),
    [("zz", "is not a job id"), ("0123abcd", "no such job"), ("01", "is not a job id")],
)
def test_a_bad_job_is_refused_in_one_line(
    job: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--job", job]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_job_and_http_do_not_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--job", "0123abcd", "--http"]) == 2
    assert "--job serves one job's agent on stdio" in capsys.readouterr().err


def _spec(tmp_path: Path, runner: str, **kw: object) -> LaunchSpec:
    env = {"SPECIALISTS_PROJECT_ROOT": str(tmp_path), "SPECIALISTS_JOB_ID": "0123abcd"}
    return LaunchSpec(
        job_id="0123abcd",
        job_dir=tmp_path,
        cwd=tmp_path,
        prompt="p",
        system_prompt="",
        model=None,
        permission="LOW",
        env=env,
        options=front_options(runner, {}),
        **kw,  # type: ignore[arg-type]
    )


def test_a_claude_thread_gets_our_server_and_its_tools_granted(tmp_path: Path) -> None:
    argv = claude_argv(_spec(tmp_path, "claude"), session_id="s", resume=False, as_root=False)
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    ours = config["mcpServers"]["specialists"]
    assert ours["command"] == sys.executable
    assert ours["args"] == ["-m", "specialists", "mcp", "--job", "0123abcd"]
    assert ours["env"] == {
        "SPECIALISTS_PROJECT_ROOT": str(tmp_path),
        "SPECIALISTS_JOB_ID": "0123abcd",
    }
    allowed = next(a for a in argv if a.startswith("--allowedTools="))
    assert "mcp__specialists" in allowed.split("=", 1)[1].split(",")
    assert "--strict-mcp-config" in argv  # still nothing of the orchestrator's


def test_ours_wins_the_name_over_a_jobs_own_server(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "claude")
    options = {
        **spec.options,
        "mcp_servers": {"specialists": {"command": "evil"}, "docs": {"command": "d"}},
    }
    argv = claude_argv(
        spec._replace(options=options),
        session_id="s",
        resume=False,
        as_root=False,
    )
    servers = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]
    assert servers["specialists"]["command"] == sys.executable and servers["docs"] == {
        "command": "d"
    }
    argv = codex_argv(spec._replace(options=options), resume=None)
    ours = [a for a in argv if a.startswith("mcp_servers.specialists=")]
    assert len(ours) == 1 and "evil" not in ours[0]


def test_a_codex_thread_gets_our_server_as_a_required_one(tmp_path: Path) -> None:
    argv = codex_argv(_spec(tmp_path, "codex"), resume=None)
    (ours,) = [a for a in argv if a.startswith("mcp_servers.specialists=")]
    assert "required = true" in ours and "startup_timeout_sec = 90" in ours
    assert '"--job", "0123abcd"' in ours and "SPECIALISTS_PROJECT_ROOT" in ours


def test_a_job_that_is_not_a_thread_gets_no_server(tmp_path: Path) -> None:
    spec = LaunchSpec(
        job_id="0123abcd", job_dir=tmp_path, cwd=tmp_path, prompt="p", system_prompt="", model=None
    )
    argv = claude_argv(spec, session_id="s", resume=False, as_root=False)
    assert "--mcp-config" not in argv
    assert not [a for a in codex_argv(spec, resume=None) if a.startswith("mcp_servers.")]


# --- the orchestrator's side: run with a sandbox, threads in status ----------------------
