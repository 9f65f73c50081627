"""The tests of tests/unit/test_supervisor_faults.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from specialists.jobs.actions import stop_job
from specialists.jobs.control import post_request
from specialists.jobs.store import CONTROL_DIR
from specialists.supervise.launch import spawn_supervisor
from tests.support.jobs import new_job
from tests.support.supervising import Harness
from tests.support.waiting import wait_until
from tests.unit.test_supervisor_faults import (
    ENDED,
    _detached_job,
    _final_event,
    _state,
    h,  # noqa: F401 - fixtures
)


def test_a_supervisor_stuck_in_a_pre_script_stops_promptly_and_cancels_itself(
    h: Harness,
) -> None:
    """`stop` of a supervisor busy in a 60 s pre-script: SIGTERM cuts the script, and the
    supervisor itself ends the job `cancelled` (not recovery, long after, with `error`)."""
    marker = h.tmp_path / "script-started"
    job_id = _detached_job(
        h,
        runner_options={"command": "cat"},
        pre_scripts=[{"path": f"touch {marker}; sleep 60", "inject_output": False}],
    )
    wait_until(marker.exists, what="the pre-script to start")
    started = time.monotonic()
    outcome = stop_job(h.store, job_id)
    took = time.monotonic() - started
    assert outcome.status.status == "cancelled", outcome.status.error
    final = _final_event(h, job_id)
    assert final["event"] == "cancelled" and "recovered" not in final
    assert took < 10, f"stop took {took:.1f}s"  # stop_job's SIGKILL would come at 13.5 s


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_like_a_request_never_hangs_the_supervisor(h: Harness) -> None:
    """A FIFO planted in control/: the supervisor either skips it or, if reading it blocks,
    still answers SIGTERM within about a second and ends the job itself."""
    release = h.tmp_path / "release"
    code = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.02)\n"
    job_id = _detached_job(
        h, runner_options={"command": sys.executable, "args": ["-c", code + "print('ok')"]}
    )
    inbox = h.store.job_dir(job_id) / CONTROL_DIR
    wait_until(lambda: _state(h, job_id) == "running", what="the job to run")
    inbox.mkdir(exist_ok=True)
    os.mkfifo(inbox / "00000000000000000001-deadbeef.json")
    post_request(h.store.job_dir(job_id), "steer", "after the fifo")
    status = h.store.read_status(job_id)
    assert status is not None and status.supervisor_pid
    os.kill(status.supervisor_pid, signal.SIGTERM)
    wait_until(lambda: _state(h, job_id) in ENDED, what="the job to end")
    release.touch()
    final = _final_event(h, job_id)
    assert final["event"] in ("cancelled", "done") and "recovered" not in final


def test_a_supervisor_whose_job_json_is_damaged_ends_the_job_with_the_reason(
    h: Harness,
) -> None:
    rec, lock = new_job(h.store, h.tmp_path, runner="command")
    path = h.store.job_dir(rec.id) / "job.json"
    data = json.loads(path.read_text())
    data["max_turns"] = {"not": "a number"}
    data["runner"] = 12
    path.write_text(json.dumps(data))
    spawn_supervisor(h.store, rec, lock)
    wait_until(lambda: _state(h, rec.id) in ENDED, what="the job to end")
    status = h.store.read_status(rec.id)
    assert status is not None and status.status == "error" and status.error
    assert "Traceback" not in status.error
