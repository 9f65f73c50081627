"""The tests of tests/unit/test_mcp_job_scope.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from specialists.jobs.store import JobStore
from specialists.mcp.handlers import ServerContext
from specialists.mcp.table import call_tool
from specialists.project import Project
from tests.support.threads import (
    ROOT_OWNER,
    job_dirs,
    root_caller,
    spawn,
    thread_project,
)


def test_run_with_sandbox_puts_the_job_in_a_new_worktree() -> None:
    """MCP `run {sandbox: true}` does what `specialists run --sandbox` does: a worktree on a
    sandbox-<id> branch, the job's cwd inside it; the answer names the sandbox."""
    root = thread_project()
    ctx = ServerContext(project=Project(root), owner_keys=(ROOT_OWNER,))
    out = call_tool(ctx, "run", {"specialist": "echo", "prompt": "hi", "sandbox": True})
    assert not out.is_error, out.text
    sandbox = out.data["sandbox"]
    assert sandbox["branch"] == f"sandbox-{sandbox['id']}" and Path(sandbox["path"]).is_dir()
    record = JobStore(root / ".specialists", news=None).read_record(out.data["job_id"])
    assert record.sandbox == sandbox["id"] and Path(record.cwd) == Path(sandbox["path"])


def test_run_with_sandbox_outside_a_repository_creates_nothing(tmp_path: Path) -> None:
    root = thread_project()
    ctx = ServerContext(project=Project(root), owner_keys=(ROOT_OWNER,))
    args = {"specialist": "echo", "prompt": "hi", "sandbox": True, "cwd": str(tmp_path)}
    out = call_tool(ctx, "run", args)
    assert out.is_error and "needs a git repository" in out.text
    assert job_dirs(root) == [] and not (root / ".specialists" / "sandboxes").exists()


def test_status_lists_the_callers_threads_with_their_transport() -> None:
    """`status {threads: true}`: the client's own threads (not another session's), each with
    its phase, runner and what its transport supports."""
    root = thread_project()
    mine = spawn(root_caller(root), instructions="mine")
    other = spawn(root_caller(root, owner="claude-someone-else"), instructions="theirs")
    assert not mine.is_error and not other.is_error
    ctx = ServerContext(project=Project(root), owner_keys=(ROOT_OWNER,))
    out = call_tool(ctx, "status", {"threads": True})
    assert not out.is_error, out.text
    (row,) = out.data["threads"]
    assert row["id"] == mine.data["thread_id"] and row["parent"] == ROOT_OWNER
    assert row["runner"] == "command" and "reports by final text only" in row["transport"]
    assert "threads" not in call_tool(ctx, "status", {}).data
