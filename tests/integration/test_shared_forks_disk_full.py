"""The shared fork server (supervise/shared_forks.py) and a full disk, on a real tmpfs: the
project's `.specialists/` is a small tmpfs, filled to its last byte, or nearly (room for
job.json, not for the job's reserve), or to its last inode (no new file or directory).

A launch on a full disk fails in one line and leaves no job and no server behind; a server
already running refuses nothing itself (the launcher fails before it asks), keeps and
recovers its jobs on the full disk without spinning, and serves again once space returns;
a disk that fills between a job's creation and its supervisor's start ends that job, not
the server."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specialists.supervise import shared_forks
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import start
from tests.integration.test_fork_server import _hold, _parent
from tests.integration.test_shared_forks import (
    _listening,
    _servers,
    _supervisor,
    launched_lately,
)
from tests.support.processes import killed_after
from tests.support.tmpfs import fill, fill_inodes, small_tmpfs
from tests.support.waiting import wait_until
from tests.support.workflows import store, workflow_project

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

NO_SPACE_LINE = (
    "error: could not create the job: No space left on device "
    "(free some space on the disk that holds .specialists/)\n"
)
NO_SPACE_END = "no space left on device"  # how a job that ran out of room ends (writer.py)
FULL = "full"
NEARLY_FULL = "nearly full"
NO_INODES = "no inodes"


@pytest.fixture(autouse=True)
def long_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server outlives each test's checks (it is killed at the end)."""
    monkeypatch.setenv(shared_forks.IDLE_ENV, "120")
    monkeypatch.delenv(shared_forks.OFF_ENV, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project whose store is a 2 MiB tmpfs of 1000 inodes; its `hold` jobs wait for
    tmp_path/go. At the end they are let go and its shared servers killed."""
    root = workflow_project(hold=_hold(tmp_path))
    try:
        with small_tmpfs(root / ".specialists", size="2m", inodes=1000):
            launched_lately(root)  # the next launch that finds no server starts one
            yield root
    finally:
        (tmp_path / "go").write_text("")
        with killed_after() as pids:
            pids.extend(_servers(root))


def _fill(project: Path, how: str) -> Callable[[], None]:
    """Fill the store's disk `how`; returns what frees the space again."""
    disk = project / ".specialists"
    if how == NO_INODES:
        crowd = fill_inodes(disk / "crowd")
        return lambda: shutil.rmtree(crowd)
    filler = fill(disk)
    if how == NEARLY_FULL:
        os.truncate(filler, filler.stat().st_size - 16384)  # job.json fits, its reserve not
    return filler.unlink


def _launch(project: Path, name: str = "echo") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "specialists", "run", name, "--prompt", "x", "--background"]
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=60)


def _started(project: Path, name: str = "echo") -> str:
    out = _launch(project, name)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _refused(project: Path) -> None:
    """A launch on the full disk: one line, a non-zero exit, no new job."""
    before = store(project).list_ids()
    out = _launch(project)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr == NO_SPACE_LINE  # one line, the hint, no traceback
    assert store(project).list_ids() == before  # no half-made job for `status` to show


def _ended(project: Path, job: str) -> str:
    """The status `job` ended with, as written in its status.json (not just as a reader
    would infer it)."""
    wait_until(lambda: not store(project).read_status(job).active, 60, f"{job} ended")
    return store(project).read_status(job).status


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _served_again(tmp_path: Path, project: Path, server: int) -> None:
    """Space is back: the next launch is forked by `server` and its job ends done."""
    (tmp_path / "go").unlink(missing_ok=True)
    job = _started(project, "hold")
    assert _parent(_supervisor(project, job)) == server
    (tmp_path / "go").write_text("")
    assert _ended(project, job) == "done"


@pytest.mark.parametrize("how", [FULL, NEARLY_FULL, NO_INODES])
def test_a_launch_on_a_full_disk_fails_in_one_line_and_the_next_is_served(
    tmp_path: Path, project: Path, how: str
) -> None:
    free = _fill(project, how)
    _refused(project)
    assert _servers(project) == []  # none started for a job that does not exist
    free()
    first = _started(project)  # no server yet: a fresh supervisor, and a server started
    assert _ended(project, first) == "done"
    _served_again(tmp_path, project, _listening(project))


@pytest.mark.parametrize("how", [FULL, NO_INODES])
def test_a_server_running_when_the_disk_fills_keeps_its_jobs_and_serves_again(
    tmp_path: Path, project: Path, how: str
) -> None:
    assert _ended(project, _started(project)) == "done"
    server = _listening(project)
    held = [_started(project, "hold") for _ in range(2)]
    supervisors = [_supervisor(project, job) for job in held]
    assert [_parent(pid) for pid in supervisors] == [server, server]
    began, cpu = time.monotonic(), _cpu_s(server)
    free = _fill(project, how)
    _refused(project)
    os.kill(supervisors[0], signal.SIGKILL)  # the server, its keeper, records the crash
    assert _ended(project, held[0]) == "error"
    (tmp_path / "go").write_text("")  # the other ends as the disk lets it: never running
    _ended(project, held[1])
    other = store(project).read_status(held[1])
    assert other.status == "done" or NO_SPACE_END in (other.error or ""), other
    spent, cpu = time.monotonic() - began, _cpu_s(server) - cpu
    assert cpu < max(spent / 2, 0.5), (cpu, spent)  # it waited; it did not spin
    assert _servers(project) == [server]  # it neither died nor was replaced
    free()
    _served_again(tmp_path, project, server)


@pytest.mark.parametrize("serving", [False, True], ids=["no server", "a server"])
def test_a_disk_that_fills_before_the_supervisor_starts_ends_the_job_not_the_server(
    tmp_path: Path, project: Path, serving: bool
) -> None:
    """The job is made, then the disk fills before its supervisor starts: the supervisor
    (forked by the server, or fresh while a server starts on the full disk) ends the job
    with why; the server lives on and forks the next job once space returns."""
    if serving:
        assert _ended(project, _started(project)) == "done"
        _listening(project)
    frees: list[Callable[[], None]] = []
    record = plan_job(store(project), JobRequest("echo", "go", cwd=project))
    job = start(
        store(project), record, check=False, created=lambda _: frees.append(_fill(project, FULL))
    ).id
    assert _ended(project, job) == "error"
    assert NO_SPACE_END in (store(project).read_status(job).error or "")
    server = _listening(project)  # the one there was, or one started on the full disk
    frees[0]()
    _served_again(tmp_path, project, server)
