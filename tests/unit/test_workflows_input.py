"""Bad input to workflows, each one clear error before anything launches (issue 11 item 11):
options, keys, schemas, caps, declarative documents, workflow sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.declarative import check_document
from specialists.features.workflows.launch import WorkflowRequest, workflow_record
from specialists.features.workflows.options import child_options, default_concurrency
from specialists.features.workflows.source import Source, find_workflow

OK = {"key": "k", "agent": "echo", "task": "t"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"key": ""}, "is not a stable key"),
        ({"key": "a b"}, "is not a stable key"),
        ({"key": 3}, "is not a stable key"),
        ({"task": ""}, "task must be a non-empty string"),
        ({"task": None}, "task is missing"),
        ({"task": "a\x00b"}, "NUL byte"),
        ({"agent": None}, "no agent"),
        ({"colour": "red"}, "unknown option 'colour'"),
        ({"context": "half"}, "context must be fresh or fork"),
        ({"schema": "string"}, "schema must be a JSON schema object"),
        ({"schema": {"type": "nothing"}}, "schema is not a valid JSON schema"),
        ({"schema": {"properties": {"a": {"minimum": "x"}}}}, "schema is not a valid JSON schema"),
        ({"schema": True}, "says nothing"),
        ({"timeout": 0}, "timeout must be a number of seconds"),
        ({"timeout": "1h"}, "timeout must be a number of seconds"),
        ({"max_turns": -1}, "max_turns must be a positive whole number"),
        ({"max_tokens": True}, "max_tokens must be a positive whole number"),
        ({"sandbox": "yes"}, "sandbox/worktree must be true or false"),
        ({"gate": "make test", "acceptance": "checked"}, "gate cannot be combined"),
        ({"acceptance": "sure"}, "acceptance level 'sure' is unknown"),
        ({"resume": {"workflow": "w", "key": "k", "latest": True}}, "resume and agent cannot"),
    ],
)
def test_bad_child_options_are_one_clear_error(change: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        child_options({**OK, **change})


def test_keyed_resume_needs_latest_true_and_refuses_a_gate() -> None:
    base = {"key": "k", "task": "t"}
    with pytest.raises(UserError, match="resume needs latest: true"):
        child_options({**base, "resume": {"workflow": "w", "key": "k"}})
    with pytest.raises(UserError, match="gate is not accepted on a resumed child"):
        child_options(
            {**base, "gate": "x", "resume": {"workflow": "w", "key": "k", "latest": True}}
        )


def test_the_default_concurrency_is_eight_agents_bounded_by_memory() -> None:
    """Agents wait on models, not cores: 8 at once, one per 512 MiB of available memory."""
    gib = 1024**3
    got = [default_concurrency(m) for m in (0, gib // 4, gib, 2 * gib, 4 * gib, 64 * gib)]
    assert got == [1, 1, 2, 4, 8, 8]
    assert 1 <= default_concurrency() <= 8  # this machine's, from /proc/meminfo


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "steps must be a non-empty list"),
        ({"steps": [], "x": 1}, "unknown field 'x'"),
        ({"steps": [{"loop": {}}]}, "unknown step 'loop'"),
        ({"steps": [{"run": OK, "all": []}]}, "exactly one of"),
        ({"steps": [{"run": {**OK, "task": "{env.HOME}"}}]}, "unknown placeholder"),
        ({"steps": [{"run": {**OK, "agent": None}}]}, "no agent"),
        ({"steps": [{"pipeline": {"items": [1], "stages": []}}]}, "non-empty list of stages"),
        ({"steps": [{"pipeline": {"items": "a,b", "stages": [OK]}}]}, "items must be a list"),
        ({"steps": [{"all": [OK] * 4097}]}, "more than 4096"),
        ({"steps": [{"all": {"items": [1], "child": OK, "x": 1}}]}, "unknown field 'x'"),
        ({"steps": [{"phase": ""}]}, "phase needs a name"),
    ],
)
def test_bad_declarative_documents_are_refused_whole(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_document(doc)


def test_python_workflows_come_only_from_the_project(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".specialists" / "workflows").mkdir(parents=True)
    outside = tmp_path / "evil.py"
    outside.write_text("async def main(runs, args):\n    return 1\n")
    with pytest.raises(UserError, match="outside the project"):
        find_workflow(project, str(outside))
    link = project / "link.py"
    link.symlink_to(outside)
    with pytest.raises(UserError, match="outside the project"):
        find_workflow(project, "link.py", cwd=project)
    with pytest.raises(UserError, match="unknown workflow 'nope'"):
        find_workflow(project, "nope")


def test_a_declarative_workflow_may_come_from_any_path(tmp_path: Path) -> None:
    """Declarative files need no interpreter, so their place is not policed; a link dressed
    as one that leads to Python outside the project is still refused (judged by its target)."""
    project = tmp_path / "p"
    project.mkdir()
    outside = tmp_path / "fan.yaml"
    outside.write_text("steps: []\n")
    assert find_workflow(project, str(outside)).kind == "declarative"
    with pytest.raises(UserError, match="outside the project"):  # as the MCP tool asks
        find_workflow(project, str(outside), any_path=False)
    evil = tmp_path / "evil.py"
    evil.write_text("async def main(runs, args):\n    return 1\n")
    (project / "dressed.yaml").symlink_to(evil)
    with pytest.raises(UserError, match="outside the project"):
        find_workflow(project, "dressed.yaml", cwd=project)
    with pytest.raises(UserError, match="does not exist"):
        find_workflow(project, str(tmp_path / "gone.yaml"))


def test_a_python_file_beside_the_recipes_is_not_a_recipe(tmp_path: Path) -> None:
    """The recipes folder is compared as a folder, not as a string prefix."""
    from specialists.features.workflows.source import RECIPES, _inside

    sibling = Path(str(RECIPES) + "_evil") / "x.py"
    with pytest.raises(UserError, match="outside the project"):
        _inside(tmp_path, sibling, "x.py")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("def main(runs, args):\n    return 1\n", "has no `async def main"),
        ("async def main(runs, args)\n", "syntax error at line 1"),
    ],
)
def test_a_broken_python_workflow_is_refused_before_a_job(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "w.py"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        workflow_record(tmp_path, WorkflowRequest(Source("python", "w", str(path)), {}))


def test_a_fifo_is_not_read_as_a_workflow(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="not a regular file"):
        workflow_record(tmp_path, WorkflowRequest(Source("declarative", "w", str(fifo)), {}))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"concurrency": 0}, "concurrency must be a whole number from 1 to 64"),
        ({"concurrency": 65}, "concurrency must be a whole number"),
        ({"args": {"big": "x" * 70000}}, "args are over 64 KiB"),
    ],
)
def test_bad_run_settings_are_refused(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    doc = {"steps": [{"run": OK}]}
    fields: dict[str, Any] = {"source": Source("declarative", "d", None, doc), "args": {}}
    with pytest.raises(UserError, match=message):
        workflow_record(tmp_path, WorkflowRequest(**{**fields, **change}))


def test_the_mcp_tools_never_run_or_schedule_a_python_workflow() -> None:
    """The rule of docs/workflows.md at the MCP edge: a Python workflow named over MCP is
    refused by the workflow tool and by the schedule tool, and nothing is created."""
    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool
    from tests.support.jobs import echo_project

    project = echo_project()
    folder = project / ".specialists" / "workflows"
    folder.mkdir(parents=True)
    (folder / "py.py").write_text("async def main(runs, args):\n    return 1\n")
    ctx = ServerContext()
    for name, args, says in (
        ("workflow", {"action": "run", "name": "py"}, "is Python, which the workflow tool"),
        ("workflow", {"action": "run"}, "give exactly one of document or name"),
        ("workflow", {"action": "run", "document": {"steps": []}}, "steps must be a non-empty"),
        ("workflow", {"action": "show"}, "missing required argument 'id'"),
        ("schedule", {"action": "create", "every": "1h", "workflow": "py"}, "is Python"),
    ):
        out = call_tool(ctx, name, args)
        assert out.is_error and says in out.text, out.text
    jobs = project / ".specialists" / "jobs"
    assert not jobs.exists() or not [p for p in jobs.iterdir() if not p.name.startswith(".")]
