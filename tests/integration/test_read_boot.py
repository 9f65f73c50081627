"""`status` boots no feature until a job's news needs them: a crash it finds is still told to
the job's owner, by the hooks the features register (store/news.py `boot`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.events import notices
from specialists.store.jobs import JobStore
from specialists.store.paths import state_dir
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import TEST_OWNER, echo_project, new_job, notice_ids
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
