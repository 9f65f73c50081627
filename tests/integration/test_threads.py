"""Threads end to end: real child jobs (command runner), real supervisors, the parent's inbox.

The handlers are called exactly as every front calls them (`call_tool` with the caller's
owner and job id), so what is proved here holds for the native, MCP and pi fronts alike.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from specialists.features.threads.listing import thread_rows
from specialists.features.threads.records import MAX_DEPTH, ThreadStore, new_thread_id
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.store.view import current_status
from tests.support.jobs import control_requests, new_job
from tests.support.threads import (
    ROOT_OWNER,
    call,
    inbox_events,
    job_caller,
    job_dirs,
    root_caller,
    shell_spec,
    spawn,
    thread_dirs,
    thread_project,
    unsupervised_child,
    wait_closed,
)
from tests.support.waiting import wait_until


def _store(project: Path) -> JobStore:
    return JobStore(project / ".specialists", news=None)


def test_a_child_without_tools_is_closed_by_the_runtime_with_its_final_text() -> None:
    """R-S9 and R-H3: spawn returns at once with a 128-bit id; the child (an agent with no
    tools) ends, and its parent's inbox holds exactly one child_closed carrying the final
    text, which starts with the header telling the child who it is and how to close."""
    project = thread_project()
    reply = spawn(root_caller(project), instructions="count the files")
    assert not reply.is_error, reply.text
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    assert tid.startswith("t-") and len(tid) == 34
    record = _store(project).read_record(job_id)
    assert record.thread == {"id": tid, "parent": ROOT_OWNER, "stack": ["root", tid]}
    assert record.owner == [ROOT_OWNER]
    event = wait_closed(project, tid)
    assert event.kind == "child_closed" and event.details["by"] == "runtime"
    assert event.details["final"] == "done" and event.details["failed"] is False
    assert f"You are thread {tid}, stack [root, {tid}]; your parent is root." in event.body
    assert "close_thread" in event.body and "count the files" in event.body
    assert event.source.tool == "spawn_thread" and event.source.call_id == "c1"
    ids = [e.id for e in inbox_events(project)]
    assert ids.count(f"{tid}:child_closed:1") == 1


def test_child_of_must_be_the_callers_real_stack() -> None:
    """R-H1: a plan inherited from the parent is refused with the guard's message, and
    nothing is created (no thread, no job)."""
    project = thread_project()
    other = new_thread_id()
    reply = spawn(root_caller(project), stack=["root", other])
    assert reply.is_error
    assert reply.text == (
        f"error: You are thread root with stack [root]. The spawn plan you inherited belongs "
        f"to [root, {other}]. Focus on your own task and do not spawn the parent's threads."
    )
    assert thread_dirs(project) == [] and job_dirs(project) == []


def _thread_job(project: Path, stack: list[str], **extra: object) -> JobRecord:
    """A job record that is a thread at `stack` (its supervisor never runs)."""
    record, lock = new_job(
        _store(project),
        project,
        runner="command",
        thread={"id": stack[-1], "parent": ROOT_OWNER, "stack": stack},
        **extra,
    )
    lock.release()
    return record


def test_a_child_reads_its_stack_from_its_own_record_not_from_its_word() -> None:
    """R-H1 inside a thread: the stack comes from the job record; the root's plan is
    refused there too, with the child's own id in the message."""
    project = thread_project()
    tid = new_thread_id()
    job = _thread_job(project, ["root", tid])
    reply = spawn(job_caller(project, job.id), stack=["root"])
    assert reply.is_error
    assert f"You are thread {tid} with stack [root, {tid}]" in reply.text
    assert "belongs to [root]" in reply.text


def test_depth_is_capped() -> None:
    """R-H9: a thread four levels below root may not spawn; nothing is created."""
    project = thread_project()
    stack = ["root", *(new_thread_id() for _ in range(MAX_DEPTH))]
    job = _thread_job(project, stack)
    before = job_dirs(project)
    reply = spawn(job_caller(project, job.id), stack=stack)
    assert reply.is_error and "depth limit" in reply.text
    assert job_dirs(project) == before and thread_dirs(project) == []


def test_a_nested_child_gets_the_longer_stack_and_its_parent_its_events() -> None:
    """A thread spawns its own child: stack root > parent > child, events to the parent job."""
    project = thread_project()
    tid = new_thread_id()
    parent = _thread_job(project, ["root", tid])
    reply = spawn(job_caller(project, parent.id), stack=["root", tid])
    assert not reply.is_error, reply.text
    assert reply.data["stack"] == ["root", tid, reply.data["thread_id"]]
    child = _store(project).read_record(reply.data["job_id"])
    assert child.parent_id == parent.id
    wait_closed(project, reply.data["thread_id"], owner=f"job-{parent.id}")


def test_fork_is_refused_where_it_cannot_be_honest() -> None:
    """Context: without fresh_context a fork is asked for; a root session (no copy of its
    conversation) and a command job are refused with the advice to pass fresh_context."""
    project = thread_project()
    reply = call("spawn_thread", {"instructions": "x", "child_of": ["root"]}, root_caller(project))
    assert reply.is_error and "fresh_context: true" in reply.text
    job = _thread_job(project, ["root", new_thread_id()])
    stack = job.thread["stack"]
    reply = call(
        "spawn_thread", {"instructions": "x", "child_of": stack}, job_caller(project, job.id)
    )
    assert reply.is_error and "cannot fork a command conversation" in reply.text
    assert thread_dirs(project) == []


def test_reports_reach_the_parent_once_each_and_bad_reports_write_nothing() -> None:
    """R-H5, R-H6a, R-RLM2: each report is one child_report (ids numbered per thread); a
    report with both fields, mistyped evidence, or a range that ends before it starts is
    refused before anything is written."""
    project = thread_project(waiter="sleep 30")
    reply = spawn(root_caller(project), specialist="waiter")
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    child = job_caller(project, job_id)
    assert not call("report_to_parent", {"report": "half done"}, child).is_error
    structured = {
        "summary": "read a.py",
        "evidence": [{"source": "a.py", "start_line": 1, "end_line": 3, "claim": "defines f"}],
    }
    assert not call("report_to_parent", {"structured": structured}, child).is_error
    bad = [
        {"report": "x", "structured": {"summary": "y"}},
        {"structured": {"summary": "s", "evidence": [None]}},
        {"structured": {"summary": "s", "evidence": [{"source": "a", "start_line": "1"}]}},
        {
            "structured": {
                "summary": "s",
                "coverage": [{"source": "a", "start_line": 9, "end_line": 3, "status": "read"}],
            }
        },
        {"report": "x" * 100_001},
        {},
    ]
    for args in bad:
        assert call("report_to_parent", args, child).is_error, args
    events = [e for e in inbox_events(project) if e.kind == "child_report"]
    assert [e.id for e in events] == [f"{tid}:child_report:1", f"{tid}:child_report:2"]
    assert "half done" in events[0].body
    assert "a.py:1-3: defines f" in events[1].body and "not verified" in events[1].body
    assert len(ThreadStore(project / ".specialists").reports(tid)) == 2
    call("send_message_to_child", {"thread_id": tid, "message": "stop soon"}, root_caller(project))
    _stop(project, job_id)
    wait_closed(project, tid)


def test_a_root_cannot_report_and_a_closed_child_cannot_report_again() -> None:
    project = thread_project()
    reply = call("report_to_parent", {"report": "hi"}, root_caller(project))
    assert reply.is_error and "not a thread" in reply.text


def test_close_thread_carries_its_report_into_one_child_closed() -> None:
    """R-H6: close_thread claims the close with its report; the child_closed comes when the
    job ends, once, by the child; a second close changes nothing; reporting after is refused."""
    project = thread_project(waiter="sleep 30")
    reply = spawn(root_caller(project), specialist="waiter")
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    child = job_caller(project, job_id)
    closed = call("close_thread", {"structured": {"summary": "all done", "files": ["a"]}}, child)
    assert closed.yields and closed.data["terminate"] is True
    again = call("close_thread", {"report": "other"}, child)
    assert "already closing" in again.text
    assert call("report_to_parent", {"report": "late"}, child).is_error
    stopped = call(
        "send_message_to_child", {"thread_id": tid, "message": "x"}, root_caller(project)
    )
    assert stopped.is_error and "has begun closing" in stopped.text
    _stop(project, job_id)
    event = wait_closed(project, tid)
    assert event.details["by"] == "child" and event.details["failed"] is False
    assert "all done" in event.body and "files: a" in event.body and "other" not in event.body
    assert sum(e.kind == "child_closed" for e in inbox_events(project)) == 1


def test_messages_go_only_to_running_direct_children() -> None:
    """R-H7: unknown ids, another parent's child, a message its runner cannot take and a
    closed child are refused; a running child gets it in its control inbox."""
    project = thread_project(waiter="sleep 30")
    root = root_caller(project)
    bad = call("send_message_to_child", {"thread_id": "t-nope", "message": "x"}, root)
    assert bad.is_error and "unknown thread id" in bad.text
    unknown = call("send_message_to_child", {"thread_id": new_thread_id(), "message": "x"}, root)
    assert unknown.is_error and "unknown thread" in unknown.text
    reply = spawn(root, specialist="waiter")
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    stranger = root_caller(project, owner="claude-someoneelse")
    theirs = call("send_message_to_child", {"thread_id": tid, "message": "x"}, stranger)
    assert theirs.is_error and "not your direct child" in theirs.text
    plain = call("send_message_to_child", {"thread_id": tid, "message": "x"}, root)
    assert plain.is_error and "runs on command, which takes no messages" in plain.text
    _stop(project, job_id)
    wait_closed(project, tid)
    late = call("send_message_to_child", {"thread_id": tid, "message": "x"}, root)
    assert late.is_error and "is closed" in late.text and "spawn a new thread" in late.text


def test_a_message_to_a_running_native_child_lands_in_its_control_inbox() -> None:
    """The message travels as a control request its supervisor takes (steer or follow_up)."""
    project = thread_project()
    store = _store(project)
    tid, record, lock = unsupervised_child(project)
    try:
        for mode in ("steer", "follow_up"):
            args = {"thread_id": tid, "message": f"as {mode}", "mode": mode}
            sent = call("send_message_to_child", args, root_caller(project))
            assert not sent.is_error, sent.text
        kinds = [r["kind"] for r in control_requests(store, record.id)]
        assert kinds == ["steer", "follow_up"]
        bad = {"thread_id": tid, "message": "x", "mode": "shout"}
        assert call("send_message_to_child", bad, root_caller(project)).is_error
        blank = call(
            "send_message_to_child", {"thread_id": tid, "message": " "}, root_caller(project)
        )
        assert blank.is_error and "'message' must be a non-empty string" in blank.text
        assert [r["kind"] for r in control_requests(store, record.id)] == kinds  # none sent
    finally:
        lock.release()


def test_kill_9_of_a_childs_supervisor_gives_the_parent_a_failed_child_closed() -> None:
    """A supervisor killed with SIGKILL writes nothing; recovery (whoever looks next: here
    the parent's own depends_on check) records the crash, and the parent gets child_closed
    with the error, once."""
    project = thread_project(waiter="sleep 30")
    root = root_caller(project)
    reply = spawn(root, specialist="waiter")
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    pid = _supervisor_pid(project, job_id)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), what="the supervisor is gone")
    refused = spawn(root, depends_on=[tid])
    assert refused.is_error and f"prerequisite {tid} failed" in refused.text
    event = wait_closed(project, tid)
    assert event.details["failed"] is True and "supervisor crashed" in event.body
    assert sum(e.kind == "child_closed" for e in inbox_events(project)) == 1


def test_listing_the_threads_closes_a_killed_child_once() -> None:
    """`specialists threads` (thread_rows): the child's supervisor dies by SIGKILL, and the
    listing records the crash and sends the failed child_closed, once however often it looks."""
    project = thread_project(waiter="sleep 30")
    reply = spawn(root_caller(project), specialist="waiter")
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    pid = _supervisor_pid(project, job_id)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), what="the supervisor is gone")

    # Until recovery can prove the supervisor dead (its lock released), nothing is closed.
    def closed() -> list[str]:
        rows, _ = thread_rows(project / ".specialists")
        return [c.record.id for c in rows if c.closed is not None]

    assert wait_until(closed, what="the listing closes it") == [tid]
    event = wait_closed(project, tid)
    assert event.details["failed"] is True and event.details["final"] == "error"
    assert closed() == [tid]
    assert sum(e.kind == "child_closed" for e in inbox_events(project)) == 1


def _stop(project: Path, job_id: str) -> None:
    """Stop a running child the way `specialists stop` does: SIGTERM to its supervisor."""
    pid = _supervisor_pid(project, job_id)
    os.kill(pid, signal.SIGTERM)


def _supervisor_pid(project: Path, job_id: str) -> int:
    """The child's own supervisor (the first status.json names its launcher: us)."""

    def pid() -> int | None:
        status = current_status(_store(project), job_id)
        assert status.active, status.to_dict()
        found = status.supervisor_pid
        return found if found and found != os.getpid() else None

    return wait_until(pid, what=f"job {job_id}'s supervisor")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not yet reaped by its parent) is gone for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_depends_on_refuses_unknown_unfinished_and_failed_prerequisites() -> None:
    """R-H6b: before anything is created; a finished one lets the spawn through."""
    project = thread_project(waiter="sleep 30", failer="exit 3")
    root = root_caller(project)
    unknown = spawn(root, depends_on=[new_thread_id()])
    assert unknown.is_error and "unknown thread" in unknown.text
    twice_id = new_thread_id()
    assert "twice" in spawn(root, depends_on=[twice_id, twice_id]).text
    running = spawn(root, specialist="waiter")
    failing = spawn(root, specialist="failer")
    fine = spawn(root)
    wait_closed(project, failing.data["thread_id"])
    wait_closed(project, fine.data["thread_id"])
    before = (thread_dirs(project), job_dirs(project))
    busy = spawn(root, depends_on=[running.data["thread_id"]])
    assert busy.is_error and "has not finished (running)" in busy.text
    failed = spawn(root, depends_on=[failing.data["thread_id"]])
    assert failed.is_error and "failed" in failed.text
    assert (thread_dirs(project), job_dirs(project)) == before
    ok = spawn(root, depends_on=[fine.data["thread_id"]])
    assert not ok.is_error, ok.text
    _stop(project, running.data["job_id"])
    wait_closed(project, running.data["thread_id"])
    wait_closed(project, ok.data["thread_id"])


def test_a_failed_launch_leaves_no_thread_and_no_sandbox() -> None:
    """R-H7a: an unknown specialist is found after the sandbox was made: the sandbox, its
    branch and the thread record are all removed again, and no job exists."""
    project = thread_project()
    reply = spawn(root_caller(project), specialist="nosuchone", sandbox=True)
    assert reply.is_error and "nosuchone" in reply.text
    assert thread_dirs(project) == [] and job_dirs(project) == []
    sandboxes = project / ".specialists" / "sandboxes"
    kept = sandboxes.iterdir() if sandboxes.exists() else []
    assert not [p for p in kept if p.name not in ("lock", ".lock")]  # the record's lock
    from tests.support.gitrepo import git

    assert "sandbox-" not in git(project, "branch", "--list")


def test_bad_arguments_are_one_clear_error_and_create_nothing(tmp_path: Path) -> None:
    """Item 8: mistyped arguments, and a sandbox outside a repository (R-S1)."""
    project = thread_project()
    root = root_caller(project)
    for args in [
        {"instructions": "", "child_of": ["root"], "fresh_context": True},
        {"instructions": "x", "child_of": "root", "fresh_context": True},
        {"instructions": "x", "child_of": ["root"], "fresh_context": "yes"},
        {"instructions": "x", "child_of": ["root"], "fresh_context": True, "depends_on": [1]},
        {"instructions": "x", "child_of": ["root"], "fresh_context": True, "bogus": 1},
        {"instructions": "  ", "child_of": ["root"], "fresh_context": True},
        {"instructions": "x", "child_of": ["root"] * 65, "fresh_context": True},
        {"instructions": "x", "child_of": [""], "fresh_context": True},
    ]:
        reply = call("spawn_thread", args, root)
        assert reply.is_error and reply.text.startswith("error: ") and "\n" not in reply.text
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    reply = spawn(root_caller(project, cwd=outside), sandbox=True)
    assert reply.is_error and "needs a git repository" in reply.text
    assert thread_dirs(project) == [] and job_dirs(project) == []


def test_close_thread_ends_a_keep_alive_child_that_would_wait_forever() -> None:
    """A keep-alive child would wait for a follow-up after its close: close_thread asks its
    supervisor to stop it (a waiting job ends with its last answer)."""
    project = thread_project()
    store = _store(project)
    _, record, lock = unsupervised_child(project, keep_alive=True)
    try:
        reply = call("close_thread", {"report": "done"}, job_caller(project, record.id))
        assert not reply.is_error, reply.text
        (request,) = control_requests(store, record.id)
        assert request["kind"] == "stop"
    finally:
        lock.release()


def test_launch_and_concurrency_limits_refuse_before_anything_is_created() -> None:
    """R-RLM4 and R-H11's fixed limit: over maxConcurrent open children, or maxLaunches in
    all, a spawn is refused at once with what to do; concurrent spawns of one parent cannot
    pass the limit together (they are counted under one lock)."""
    import threading

    from specialists.native.tool_settings import Settings, ThreadsSettings

    project = thread_project(waiter="sleep 30")
    limited = Settings(threads=ThreadsSettings(max_concurrent=2, max_launches=3))
    root = root_caller(project).replace(settings=limited)
    replies: list[object] = []
    barrier = threading.Barrier(4)

    def try_spawn() -> None:
        barrier.wait()
        replies.append(spawn(root, specialist="waiter"))

    workers = [threading.Thread(target=try_spawn) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ok = [r for r in replies if not r.is_error]  # type: ignore[attr-defined]
    refused = [r for r in replies if r.is_error]  # type: ignore[attr-defined]
    assert len(ok) == 2 and len(refused) == 2
    assert all("concurrency limit reached" in r.text for r in refused)  # type: ignore[attr-defined]
    assert len(thread_dirs(project)) == 2
    first = ok[0].data  # type: ignore[attr-defined]
    _stop(project, first["job_id"])
    wait_closed(project, first["thread_id"])
    third = spawn(root, specialist="echo")
    assert not third.is_error, third.text
    fourth = spawn(root, specialist="echo")
    assert fourth.is_error and "launch limit reached" in fourth.text
    _stop(project, ok[1].data["job_id"])  # type: ignore[attr-defined]
    wait_closed(project, ok[1].data["thread_id"])  # type: ignore[attr-defined]


def test_adaptive_concurrency_refuses_over_the_current_limit_and_grows_with_successes() -> None:
    """R-H11: initial 1, one success to grow. With one child open a second spawn is refused
    (nothing created, not counted as a failure); once that child has closed well, two may
    run at once."""
    from specialists.native.tool_settings import AdaptiveConcurrency, Settings, ThreadsSettings

    project = thread_project(waiter="sleep 30")
    gate = project / "gate"
    (project / "specialists" / "gated.specialist.yaml").write_text(
        shell_spec("gated", f"while [ ! -e {gate} ]; do sleep 0.05; done; echo through")
    )
    adaptive = AdaptiveConcurrency(True, 1, 1, 3, 1, 0.5)
    settings = Settings(threads=ThreadsSettings(adaptive_concurrency=adaptive))
    root = root_caller(project).replace(settings=settings)
    first = spawn(root, specialist="gated")
    assert not first.is_error, first.text
    refused = spawn(root, specialist="waiter")
    assert refused.is_error and "adaptive concurrency limit reached" in refused.text
    assert "now 1" in refused.text and len(thread_dirs(project)) == 1
    gate.touch()
    wait_closed(project, first.data["thread_id"])
    a, b = spawn(root, specialist="waiter"), spawn(root, specialist="waiter")
    assert not a.is_error and not b.is_error, (a.text, b.text)
    third = spawn(root, specialist="waiter")
    assert third.is_error and "now 2" in third.text
    for reply in (a, b):
        _stop(project, reply.data["job_id"])
        wait_closed(project, reply.data["thread_id"])
