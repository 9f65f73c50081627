"""Helpers for thread tests: real child jobs on the command runner, callers, inbox reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specialists.events.inbox import Inbox
from specialists.events.model import Event
from specialists.features.threads.records import ThreadRecord, ThreadStore, new_thread_id
from specialists.native.agent_table import tool_named
from specialists.native.agent_tools import Caller, Reply, ToolCall, call_tool
from specialists.store.jobs import JobLock, JobStore
from specialists.store.records import JobRecord
from tests.support.jobs import echo_project, new_job
from tests.support.waiting import wait_until

ROOT_OWNER = "claude-tests"


def shell_spec(name: str, script: str) -> str:
    """A specialist whose agent is `sh -c script` in the job's cwd (the prompt on stdin)."""
    return (
        f"metadata:\n  name: {name}\n  description: test\n"
        f"execution:\n  runner: {{type: command, command: sh, args: [-c, {json.dumps(script)}]}}\n"
        'prompt:\n  task_template: "$prompt"\n'
    )


def thread_project(**shell: str) -> Path:
    """The test project with `echo` and one shell specialist per keyword (name=script)."""
    project = echo_project()
    for name, script in shell.items():
        (project / "specialists" / f"{name}.specialist.yaml").write_text(shell_spec(name, script))
    return project


def root_caller(project: Path, cwd: Path | None = None, owner: str = ROOT_OWNER) -> Caller:
    return Caller(project / ".specialists", owner, cwd or project)


def job_caller(project: Path, job_id: str, cwd: Path | None = None) -> Caller:
    return Caller(project / ".specialists", f"job-{job_id}", cwd or project, job_id=job_id)


def call(name: str, args: dict[str, Any], caller: Caller, call_id: str = "c1") -> Reply:
    tool = tool_named(name)
    assert tool is not None, name
    return call_tool(tool, ToolCall(args, caller, call_id=call_id))


def spawn(caller: Caller, stack: list[str] | None = None, **args: Any) -> Reply:
    args.setdefault("instructions", "do the part")
    args.setdefault("fresh_context", True)
    args.setdefault("specialist", "echo")
    reply = call("spawn_thread", {"child_of": stack or ["root"], **args}, caller)
    return reply


def inbox_events(project: Path, owner: str = ROOT_OWNER) -> list[Event]:
    inbox = Inbox(project / ".specialists", owner)
    return list(inbox.pending(max_events=10_000).events)


def wait_closed(project: Path, thread_id: str, owner: str = ROOT_OWNER) -> Event:
    def found() -> Event | None:
        return next(
            (e for e in inbox_events(project, owner) if e.id == f"{thread_id}:child_closed:1"),
            None,
        )

    return wait_until(found, what=f"child_closed of {thread_id}")


def wait_finished(project: Path, child: dict[str, object]) -> None:
    """The child's job has ended too: its child_closed comes before its final status (the
    owners hear of the end first), and a squash refuses a child still winding down (R-S5)."""
    jobs = JobStore(project / ".specialists", news=None)

    def ended() -> bool:
        st = jobs.read_status(str(child["job_id"]))
        return st is not None and not st.active

    wait_until(ended, what=f"the end of job {child['job_id']}")


def thread_dirs(project: Path) -> list[str]:
    """The thread directories (the spawn locks beside them are not threads)."""
    root = project / ".specialists" / "threads"
    return sorted(n for n in os.listdir(root) if n.startswith("t-")) if root.is_dir() else []


def job_dirs(project: Path) -> list[str]:
    root = project / ".specialists" / "jobs"
    return sorted(os.listdir(root)) if root.is_dir() else []


def unsupervised_child(
    project: Path, runner: str = "native", **extra: Any
) -> tuple[str, JobRecord, JobLock]:
    """A child of the root whose job was created but never started: while the test holds
    its lock it counts as running (its status names the test process as its supervisor)."""
    tid = new_thread_id()
    record, lock = new_job(
        JobStore(project / ".specialists", news=None),
        project,
        runner=runner,
        thread={"id": tid, "parent": ROOT_OWNER, "stack": ["root", tid]},
        **extra,
    )
    threads = ThreadStore(project / ".specialists")
    assert threads.reserve_id(tid)
    threads.write(ThreadRecord(tid, ROOT_OWNER, ("root", tid), record.id, "x", True, runner, 1))
    return tid, record, lock
