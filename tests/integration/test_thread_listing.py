"""The threads one session sees (threads/listing.rows_of, pi's `/specialists threads`): its
own children, and the children of jobs it owns (how a workflow's children reach the session
that started the workflow), never another session's; real spawns of command children."""

from __future__ import annotations

import pytest

from specialists.features.threads.listing import rows_of
from specialists.fronts.pi.commands import run_command
from specialists.fronts.pi.ops import Front
from specialists.store.jobs import JobStore
from tests.support.jobs import new_job
from tests.support.threads import job_caller, root_caller, spawn, thread_project, wait_closed

pytestmark = pytest.mark.integration


def test_a_session_sees_its_threads_and_those_of_its_jobs_and_no_one_elses() -> None:
    project = thread_project()
    state = project / ".specialists"
    mine = spawn(root_caller(project, owner="pi-sess1"), instructions="map the parser")
    theirs = spawn(root_caller(project, owner="pi-other"), instructions="someone else's")
    job, lock = new_job(JobStore(state, news=None), project, owner=["pi-sess1"])
    lock.release()
    of_job = spawn(job_caller(project, job.id), instructions="a workflow's child")
    for reply, owner in ((mine, "pi-sess1"), (theirs, "pi-other"), (of_job, f"job-{job.id}")):
        assert not reply.is_error, reply.text
        wait_closed(project, reply.data["thread_id"], owner)
    rows, problems = rows_of(state, {"pi-sess1"})
    assert problems == []
    listed = {c.record.id for c in rows}
    assert listed == {mine.data["thread_id"], of_job.data["thread_id"]}
    text = run_command(Front(state, "pi-sess1", project), "threads")
    assert text.startswith("2 thread(s):") and "map the parser" in text
    assert f"(of job-{job.id})" in text and "someone else's" not in text
