"""The tests of tests/unit/test_store.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from specialists.store.jobs import JobStore
from specialists.store.liveness import process_start_time
from specialists.store.news import NEWS
from specialists.store.recovery import CRASHED, recover_if_dead
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job, notice_ids
from tests.unit.test_store import (
    _dead_pid,
    store,  # noqa: F401 - fixtures
)


def test_recovery_marks_dead_supervisor_and_kills_agent(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    lock.release()  # the "supervisor" is gone: nobody holds the lock
    agent = subprocess.Popen(["sleep", "30"], start_new_session=True)
    status = store.read_status(record.id)
    pid, start = _dead_pid()
    status.status = "running"
    status.supervisor_pid, status.supervisor_start_time = pid, start
    status.pid, status.agent_start_time = agent.pid, process_start_time(agent.pid)
    JobWriter(store, record.id).write_status(status)
    after = recover_if_dead(store, record.id, status)
    assert after.status == "error" and after.error == CRASHED
    assert agent.wait(5) == -9
    assert store.read_events(record.id)[-1]["event"] == "error"
    assert notice_ids(store, record.id) == [f"job-{record.id}:notice:1"]  # the owner is told


def test_recovery_respects_the_lock_of_a_live_supervisor(store, tmp_path):
    record, lock = new_job(store, tmp_path)  # we hold the lock, like a supervisor
    status = store.read_status(record.id)
    status.status = "running"
    status.supervisor_pid, status.supervisor_start_time = _dead_pid()
    assert recover_if_dead(store, record.id, status).status == "running"
    lock.release()


def test_a_bad_ttl_refuses_run_and_gc_with_one_line(tmp_path, monkeypatch, capsys):
    from specialists.fronts.cli.main import main

    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir()
    (project / "specialists" / "echo.specialist.yaml").write_text(
        "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
    )
    assert main(["run", "echo", "--prompt", "hi"]) == 0
    monkeypatch.setenv("SPECIALISTS_JOB_TTL_DAYS", "-1")
    for argv in (
        ["run", "echo", "--prompt", "again"],
        ["run", "echo", "--prompt", "again", "--background"],
        ["gc"],
    ):
        capsys.readouterr()
        assert main(argv) == 2
        out = capsys.readouterr()
        lines = out.err.splitlines()
        assert len(lines) == 1 and out.out == "", out
        assert lines[0].startswith("error: SPECIALISTS_JOB_TTL_DAYS='-1' is not a number")
    assert len(JobStore(project / ".specialists", news=NEWS).list_ids()) == 1  # no new job
