"""A thread's parent hears of its child's end once: the child_closed, not also the generic
"job ended" notice (supervise/news.py) for the same end. Real child jobs under their real
supervisors (command runner)."""

from __future__ import annotations

from specialists.features.threads.records import new_thread_id
from specialists.store.view import current_status
from tests.integration.test_threads import _store, _thread_job
from tests.support.threads import inbox_events, job_caller, spawn, thread_project, wait_closed
from tests.support.waiting import wait_until


def test_a_thread_parent_gets_child_closed_and_no_second_end_notice() -> None:
    """The parent job's inbox holds the child's child_closed and no notice from the child's
    job, after the child's final status is written (the notice would come before it)."""
    project = thread_project()
    tid = new_thread_id()
    parent = _thread_job(project, ["root", tid])
    owner = f"job-{parent.id}"
    reply = spawn(job_caller(project, parent.id), stack=["root", tid])
    assert not reply.is_error, reply.text
    child = reply.data["job_id"]
    wait_closed(project, reply.data["thread_id"], owner=owner)
    store = _store(project)
    wait_until(lambda: not current_status(store, child).active, what="the child's end")
    ids = [e.id for e in inbox_events(project, owner)]
    assert ids == [f"{reply.data['thread_id']}:child_closed:1"], ids
