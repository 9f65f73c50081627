"""`status` boots no feature until a job's news needs them: a crash it finds is still told to
the job's owner, by the hooks the features register (store/news.py `boot`)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.events import notices
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive
from specialists.store.paths import state_dir
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import ECHO_SPEC, TEST_OWNER, echo_project, new_job, notice_ids, wait_for
from tests.unit.test_store import _dead_pid

pytestmark = pytest.mark.integration


def sp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_crash_status_finds_is_told_to_the_owner(tmp_path: Path) -> None:
    root = echo_project()
    store = JobStore(state_dir(root), news=notices)
    record, lock = new_job(store, root, specialist="echo")
    st = JobStatus(id=record.id, specialist="echo", status="running", started_at_ms=1000)
    st.supervisor_pid, st.supervisor_start_time = _dead_pid()
    JobWriter(store, record.id).write_status(st)
    lock.release()  # its supervisor is gone: the next reader records the crash
    assert notice_ids(store, record.id) == []
    done = sp("status", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["finished"]
    assert [(j["id"], j["error"]) for j in shown] == [(record.id, "supervisor crashed")]
    assert notice_ids(store, record.id, TEST_OWNER) != []  # the owner hears of it


def test_a_supervisor_killed_after_its_status_before_its_notice_is_told_once(
    tmp_path: Path,
) -> None:
    """Its final status is written, `telling`; it is killed -9 while it waits to post the
    completion notice (the owner's inbox locked). Its keeper, which the job's end spared,
    tells it under the same id once the inbox is free, with no reader: later readers find
    nothing left to tell."""
    root = echo_project()
    (root / "specialists" / "slow.specialist.yaml").write_text(
        ECHO_SPEC.replace("name: echo", "name: slow").replace(
            "command: cat}", 'command: sh, args: ["-c", "sleep 1; cat"]}'
        )
    )
    store = JobStore(state_dir(root), news=notices)
    launched = subprocess.run(
        [sys.executable, "-m", "specialists", "run", "slow", "--background", "--prompt", "hi"],
        cwd=root, capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPECIALISTS_OWNER": TEST_OWNER},
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    job_id = launched.stdout.strip()
    owner_dir = store.root / "owners" / TEST_OWNER
    owner_dir.mkdir(parents=True, exist_ok=True)
    with open(owner_dir / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the notice's post waits here
        wait_for(lambda: (store.read_status(job_id) or JobStatus("", "")).telling, 30, "its end")
        st = store.read_status(job_id)
        assert st is not None and st.status == "done" and st.supervisor_pid
        keeper = int(
            Path(f"/proc/{st.supervisor_pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        )
        os.kill(st.supervisor_pid, signal.SIGKILL)
        wait_for(lambda: not is_alive(st.supervisor_pid, st.supervisor_start_time), 10, "death")
        assert notice_ids(store, job_id) == []  # not yet: the inbox is held
        assert Path(f"/proc/{keeper}").exists()  # its keeper lives, waiting for the inbox
    wait_for(lambda: notice_ids(store, job_id) != [], 30, "the keeper's telling")
    wait_for(lambda: not Path(f"/proc/{keeper}").exists(), 30, "the keeper's exit")
    for _ in range(2):
        shown = sp("status", job_id, "--json", cwd=root)
        assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "done", shown
    assert notice_ids(store, job_id) == [f"job-{job_id}:notice:1"]
    lines = (owner_dir / "events.jsonl").read_text().splitlines()
    assert len([line for line in lines if f"job-{job_id}:notice:1" in line]) == 1  # told once
    assert (store.read_status(job_id) or st).telling is False
