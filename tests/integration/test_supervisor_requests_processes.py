"""The tests of tests/unit/test_supervisor_requests.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from specialists.jobs.control import post_request
from specialists.runners.command import CommandRunner
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job
from tests.support.supervising import Harness
from tests.support.waiting import wait_until


def test_follow_up_to_a_running_command_job_is_refused_and_the_answer_kept(
    tmp_path: Path,
) -> None:
    """A `command` job answers while a follow-up arrives: the follow-up is refused at once
    (delivered false, with the reason) and the job ends done with its answer."""
    h = Harness(tmp_path)
    release = tmp_path / "release"
    code = (
        "import os, sys, time\n"
        "sys.stdin.read()\n"
        f"while not os.path.exists({str(release)!r}): time.sleep(0.01)\n"
        "print('the answer')\n"
    )
    options = {"command": sys.executable, "args": ["-c", code]}
    record, lock = new_job(h.store, tmp_path, runner="command", runner_options=options)
    sup = Supervisor(h.store, record, CommandRunner(), handle_signals=False)
    thread = threading.Thread(target=sup.run)
    thread.start()
    try:
        wait_until(lambda: (h.store.read_status(record.id) or sup.status).status == "running")
        request = post_request(h.store.job_dir(record.id), "follow_up", "and more")
        ack = wait_until(
            lambda: next(
                (e for e in h.store.read_events(record.id) if e.get("request") == request.id),
                None,
            ),
            what="the follow-up ack",
        )
        assert ack["delivered"] is False
        assert ack["reason"] == "the command runner does not take a follow-up while a run is going"
        release.touch()
        thread.join(60)
    finally:
        release.touch()
        thread.join(60)
        lock.release()
    assert sup.status.status == "done", sup.status.error
    assert h.store.read_result(record.id) == "the answer\n"
