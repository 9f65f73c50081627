"""Seed 004's runtime names resolve wherever a specialist is named: an alias and a dotted
`package.name` start the same specialist through the MCP `run` tool, a declarative workflow's
child, and spawn_thread; each child job records the canonical runtime name. Real jobs on the
command runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from tests.support.threads import ROOT_OWNER, root_caller, spawn, wait_closed
from tests.support.waiting import wait_until
from tests.support.workflows import result, store, wait_ended, workflow_project

pytestmark = pytest.mark.integration

AGENT = (
    "---\nname: echo2\npackage: tools\naliases: say, parrot\n"
    "runner: {type: command, command: cat}\n---\n"
)


def _project():
    project = workflow_project(
        {
            "names.yaml": "steps:\n"
            "  - run: {key: by-alias, agent: say, task: one}\n"
            "  - run: {key: by-package, agent: tools.echo2, task: two}\n"
        }
    )
    (project / ".pi" / "agents").mkdir(parents=True)
    (project / ".pi" / "agents" / "echo2.md").write_text(AGENT)
    return project


def test_a_workflow_child_resolves_an_alias_and_a_dotted_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _project()
    assert main(["workflow", "run", "names", "--detach"]) == 0
    wf = capsys.readouterr().out.strip()
    assert wait_ended(project, wf).status == "done"
    out = result(project, wf)
    assert out["by-alias"]["output"] == "one" and out["by-package"]["output"] == "two"
    s = store(project)
    children = [j for j in s.list_ids() if s.read_record(j).parent_id == wf]
    assert len(children) == 2
    assert {s.read_record(j).specialist for j in children} == {"tools.echo2"}


def test_spawn_thread_resolves_an_alias(capsys: pytest.CaptureFixture[str]) -> None:
    project = _project()
    reply = spawn(root_caller(project), specialist="parrot", instructions="hello thread")
    assert not reply.is_error, reply.text
    thread = reply.data["thread_id"]
    closed = wait_closed(project, thread, ROOT_OWNER)
    assert "hello thread" in closed.body
    job = reply.data["job_id"]
    assert store(project).read_record(job).specialist == "tools.echo2"


def test_the_mcp_run_tool_resolves_an_alias() -> None:
    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool

    project = _project()
    ctx = ServerContext()
    try:
        out = call_tool(ctx, "run", {"specialist": "say", "prompt": "via mcp"})
        assert not out.is_error, out
        s = store(project)
        (job,) = s.list_ids()
        wait_until(lambda: not s.read_status(job).active, what="the job's end")
        assert s.read_record(job).specialist == "tools.echo2"
        assert s.read_result(job) == "via mcp"
        unknown = call_tool(ctx, "run", {"specialist": "echo2", "prompt": "x"})
        assert unknown.is_error and "tools.echo2" in str(unknown.data), unknown
    finally:
        ctx.jobs.stop_all(grace=2.0)


def test_run_and_the_record_use_the_canonical_name(capsys: pytest.CaptureFixture[str]) -> None:
    """`specialists run <alias>` and `run <package.name>` start the same specialist; the job
    records its canonical runtime name."""
    import json

    from specialists.fronts.cli.main import main

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    path = root / ".pi" / "agents" / "echo.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nname: echo\npackage: tools\naliases: say\n"
        "runner: {type: command, command: cat}\n---\n"
    )
    for name in ("say", "tools.echo"):
        assert main(["run", name, "--prompt", f"via {name}"]) == 0
        assert f"via {name}" in capsys.readouterr().out
    assert main(["status", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    rows = listed["active"] + listed["finished"]
    assert len(rows) == 2 and {r["specialist"] for r in rows} == {"tools.echo"}
