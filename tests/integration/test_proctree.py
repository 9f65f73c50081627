"""jobs/proctree.py: finding and killing every process of a job. Real processes: setsid
grandchildren that ignore SIGTERM, env-cleared daemons, other jobs' processes, reused pids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.jobs import proctree
from specialists.jobs.proctree import MARK_ENV, Proc, identify, job_mark, kill_job
from tests.support.processes import alive, killed_after, wait_dead

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

# A parent that starts a grandchild in a new session (as pi does for its bash tool); the
# grandchild ignores SIGTERM and may clear its environment. The parent prints its pid, exits.
SPAWNER = textwrap.dedent(
    """
    import os, subprocess, sys
    keep_env = sys.argv[1] == "keep"
    child = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", child],
        start_new_session=True,
        env=None if keep_env else {"PATH": os.environ.get("PATH", "")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    print(p.pid, flush=True)
    """
)


@pytest.fixture
def strays() -> Iterator[list[int]]:
    with killed_after() as pids:
        yield pids


def marked_env(job_dir: Path) -> dict[str, str]:
    return {**os.environ, MARK_ENV: job_mark(job_dir)}


def grandchild(job_dir: Path | None, strays: list[int], *, keep_env: bool = True) -> int:
    if job_dir is not None:
        env = marked_env(job_dir)
    else:
        env = {k: v for k, v in os.environ.items() if k != MARK_ENV}
    out = subprocess.run(
        [PY, "-c", SPAWNER, "keep" if keep_env else "clear"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    pid = int(out.stdout.split()[0])
    strays.append(pid)
    return pid


def test_a_setsid_grandchild_that_ignores_sigterm_is_found_by_its_mark_and_killed(
    tmp_path: Path, strays: list[int]
) -> None:
    """Its parent is gone and it left the group: only the inherited mark ties it to the job."""
    pid = grandchild(tmp_path, strays)
    assert identify(pid) in proctree.marked(job_mark(tmp_path))
    killed = kill_job(tmp_path)
    assert [p.pid for p in killed] == [pid]
    wait_dead(pid)


def test_another_jobs_processes_and_the_unmarked_are_spared(
    tmp_path: Path, strays: list[int]
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    other = grandchild(theirs, strays)
    unmarked = grandchild(None, strays)
    mine = grandchild(ours, strays)
    kill_job(ours)
    wait_dead(mine)
    assert alive(other) and alive(unmarked)


def test_a_tree_walk_stops_at_another_jobs_process(tmp_path: Path, strays: list[int]) -> None:
    """A job started from inside a job (its supervisor carries its own mark) is not ours."""
    ours, nested = tmp_path / "ours", tmp_path / "nested"
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        env = dict(os.environ, {MARK_ENV}={job_mark(nested)!r})
        inner = subprocess.Popen(["sleep", "300"], env=env)
        mine = subprocess.Popen(["sleep", "300"])
        print(inner.pid, mine.pid, flush=True)
        time.sleep(300)
        """
    )
    parent = subprocess.Popen(
        [PY, "-c", code], env=marked_env(ours), stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    inner, mine = (int(x) for x in parent.stdout.readline().split())
    strays.extend([parent.pid, inner, mine])
    found = {p.pid for p in proctree.descendants([parent.pid], job_mark(ours))}
    assert found == {mine}
    kill_job(ours)
    parent.wait(10)
    wait_dead(mine)
    assert alive(inner)


def test_the_ledger_kills_what_cleared_its_environment(tmp_path: Path, strays: list[int]) -> None:
    pid = grandchild(tmp_path, strays, keep_env=False)
    assert proctree.marked(job_mark(tmp_path)) == []  # no mark: invisible to the scan
    proc = identify(pid)
    assert proc is not None
    proctree.write_ledger(tmp_path, [proc])
    assert proctree.read_ledger(tmp_path) == [proc]
    assert kill_job(tmp_path) == [proc]
    wait_dead(pid)


def test_a_reused_pid_is_never_killed(tmp_path: Path, strays: list[int]) -> None:
    """A ledger (or agent) entry whose pid now names another process, by its start time."""
    stranger = subprocess.Popen(["sleep", "300"])
    strays.append(stranger.pid)
    now = identify(stranger.pid)
    assert now is not None
    old = Proc(stranger.pid, now.start - 1)  # same pid, an earlier process
    proctree.write_ledger(tmp_path, [old])
    assert kill_job(tmp_path, agent=old) == []
    assert proctree.kill_tree(old) == []
    time.sleep(0.2)  # a signal, had one been sent, is delivered by now
    assert stranger.poll() is None and alive(stranger.pid)
    stranger.kill()
    stranger.wait()


def test_the_caller_is_never_killed_even_when_it_carries_the_mark(tmp_path: Path) -> None:
    """`specialists status` run by the job's own agent recovers the job without dying."""
    code = (
        "from pathlib import Path; from specialists.jobs.proctree import kill_job; "
        f"kill_job(Path({str(tmp_path)!r})); print('alive')"
    )
    out = subprocess.run(
        [PY, "-c", code], env=marked_env(tmp_path), capture_output=True, text=True, timeout=30
    )
    assert out.stdout.strip() == "alive", out.stderr


def test_a_process_forking_all_the_time_is_stopped_then_killed(tmp_path: Path) -> None:
    """Stop-before-kill: children forked while the job is collected are caught too."""
    code = textwrap.dedent(
        """
        import subprocess, time
        while True:
            subprocess.Popen(["sleep", "300"], start_new_session=True)
            time.sleep(0.01)
        """
    )
    spawner = subprocess.Popen([PY, "-c", code], env=marked_env(tmp_path))
    mark = job_mark(tmp_path)
    deadline = time.monotonic() + 20
    while len(proctree.marked(mark)) < 10:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    kill_job(tmp_path)
    spawner.wait(10)
    deadline = time.monotonic() + 10
    while proctree.marked(mark):
        assert time.monotonic() < deadline, f"left: {proctree.marked(mark)}"
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge", "malformed", "bad rows"])
def test_a_planted_or_damaged_ledger_is_ignored(tmp_path: Path, kind: str) -> None:
    ledger = tmp_path / proctree.LEDGER_FILE
    if kind == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text(json.dumps({"v": 1, "processes": [[1, 1]]}))
        ledger.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(ledger)  # opening it for reading must not block
    elif kind == "huge":
        ledger.write_text('{"v": 1, "processes": [' + "[1, 1]," * 200_000 + "[1, 1]]}")
    elif kind == "malformed":
        ledger.write_bytes(b"\xff{not json")
    else:
        ledger.write_text(json.dumps({"v": 1, "processes": [[1], ["a", 2], [2**70, 1], 5]}))
    assert proctree.read_ledger(tmp_path) == []


def test_a_supervisor_that_adopts_orphans_records_and_reaps_them(tmp_path: Path) -> None:
    """In a child process (a subreaper for the test process would adopt every test's
    orphans): the orphaned grandchild is re-parented to it, recorded in the ledger, and
    reaped once killed."""
    code = textwrap.dedent(
        f"""
        import json, os, signal, time
        from pathlib import Path
        from specialists.jobs import proctree
        from specialists.process import orphans
        from specialists.process.agent import AgentProcess
        from specialists.process.jobenv import agent_env

        job = Path({str(tmp_path)!r})
        assert proctree.adopt_orphans(job)
        p = AgentProcess(["sh", "-c", "setsid sleep 300 & echo $!"], cwd=job, env=agent_env(job))
        lines = []
        while not p.done:
            lines += p.read(0.1)
        orphan = int(lines[0])
        deadline = time.monotonic() + 10
        while proctree._stat(orphan).ppid != os.getpid():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        orphans._tended_at = 0.0
        orphans.tend_orphans()
        ledger = [p.pid for p in proctree.read_ledger(job)]
        os.kill(orphan, signal.SIGKILL)
        while proctree._stat(orphan).state != b"Z":
            time.sleep(0.02)
        orphans._tended_at = 0.0
        orphans.tend_orphans()
        print(json.dumps({{"orphan": orphan, "ledger": ledger,
                          "reaped": proctree._stat(orphan) is None}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert facts["orphan"] in facts["ledger"]
    assert facts["reaped"] is True
