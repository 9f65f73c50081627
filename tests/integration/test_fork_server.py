"""The fork server (supervise/forks.py): a workflow's children's supervisors are forked from a
process that has their imports, and each is what a fresh `python -m specialists _supervise`
is: its own session, a keeper (the server), the job's lock, supervisor.log, no other
descriptor, its job's mark on what it starts. A kill -9 of the server, of a forked
supervisor, or a server that stops answering loses no job."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.proctree import MARK_ENV, job_mark
from specialists.store.records import JobStatus
from specialists.supervise import forks
from specialists.supervise.actions import stop_job
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import start
from tests.support.processes import alive, killed_after
from tests.support.waiting import wait_until
from tests.support.workflows import keys, launched_keys, store, wait_ended, workflow_project

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_shared_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about a fresh supervisor and its keeper (or this process's own
    server): the project's shared fork server is tested in test_shared_forks.py."""
    monkeypatch.setenv("SPECIALISTS_FORK_SERVER", "off")


HOLD = """
async def main(runs, args):
    return [r.output for r in await runs.all(
        [{"key": f"c{n}", "agent": "hold", "task": f"c{n}"} for n in range(int(args["n"]))])]
"""


def _hold(tmp_path: Path) -> str:
    """A child that writes its shell's pid, then waits for the flag file."""
    return (
        f"cat >/dev/null; echo $$ > {tmp_path}/pid-$SPECIALISTS_JOB_ID; "
        f"while [ ! -e {tmp_path}/go ]; do sleep 0.05; done; echo held"
    )


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rfind(")") + 2 :].split()


def _parent(pid: int) -> int:
    return int(_stat(pid)[1])


def _session(pid: int) -> int:
    return int(_stat(pid)[3])


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def _fds(pid: int) -> dict[int, str]:
    found = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
    return found


def _mark(pid: int) -> str:
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    key = MARK_ENV.encode() + b"="
    return next((e[len(key) :].decode() for e in env if e.startswith(key)), "")


def _run(capsys: pytest.CaptureFixture[str], n: int, concurrency: int) -> str:
    argv = ["workflow", "run", "hold", "--arg", f"n={n}", "--concurrency", str(concurrency)]
    assert main([*argv, "--detach"]) == 0
    return capsys.readouterr().out.strip()


def _running(project: Path, wf: str, key: str) -> str:
    """The job of `key` once its agent runs; its id."""

    def started() -> bool:
        state = keys(project, wf).get(key)
        st = store(project).read_status(state.job) if state and state.job else None
        return st is not None and st.status == "running" and bool(st.pid)

    wait_until(started, timeout=120, what=f"{key} running")
    return str(keys(project, wf)[key].job)


def _held_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int
) -> tuple[Path, str, str, JobStatus]:
    """A workflow of `n` held children, one at a time: its project, its id, and the first
    child's id and status once its agent runs."""
    project = workflow_project({"hold.py": HOLD}, hold=_hold(tmp_path))
    wf = _run(capsys, n, 1)
    child = _running(project, wf, "c0")
    st = store(project).read_status(child)
    assert st is not None and st.supervisor_pid and st.pid
    return project, wf, child, st


@pytest.fixture
def released(tmp_path: Path) -> Iterator[None]:
    """The held children are let go at the end, whatever the test did."""
    try:
        yield
    finally:
        (tmp_path / "go").write_text("")


def test_a_forked_supervisor_is_what_a_fresh_one_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], released: None
) -> None:
    project, wf, child, st = _held_child(tmp_path, capsys, 1)
    supervisor = st.supervisor_pid
    server = _parent(supervisor)  # its keeper: no keeper process of its own
    assert b"_forks" in _cmdline(server)  # forked, not a fresh interpreter
    assert b"sp-keeper" not in Path(f"/proc/{supervisor}/comm").read_bytes()
    assert _session(supervisor) == supervisor  # its own session
    job_dir = store(project).job_dir(child)
    fds = _fds(supervisor)
    assert fds[0] == os.devnull
    assert fds[1] == fds[2] == str(job_dir / "supervisor.log")
    # Nothing of the server's (its socket) or the launcher's: the job's own files, and
    # pipes (one tells the server what the child imported).
    foreign = [
        t for t in fds.values()
        if not t.startswith((str(job_dir), "pipe:", "anon_inode:", os.devnull))
    ]  # fmt: skip
    assert not foreign, fds
    # The server, its keeper, holds nothing of the job: not its lock, not its log.
    assert not [t for t in _fds(server).values() if t.startswith(str(job_dir))], _fds(server)
    assert len(os.listdir(f"/proc/{supervisor}/task")) == 1  # no thread came with the fork
    # The kernel shows the server's start-up environment for what it forked (no job's
    # mark), and the job's own mark on what the supervisor starts.
    assert _mark(supervisor).endswith(":forks") and _mark(supervisor) != job_mark(job_dir)
    assert _mark(st.pid) == job_mark(job_dir)
    assert not any(t.startswith("socket:") for t in _fds(st.pid).values())
    (tmp_path / "go").write_text("")
    status = wait_ended(project, wf)
    assert status.status == "done", status.error


def test_a_kill_9_of_the_server_loses_no_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], released: None
) -> None:
    """The running child lives on and ends well; the children after it start as fresh
    supervisors; the workflow completes."""
    project, wf, _, st = _held_child(tmp_path, capsys, 3)
    server = _parent(st.supervisor_pid)
    assert b"_forks" in _cmdline(server)
    os.kill(server, signal.SIGKILL)
    wait_until(lambda: not alive(server), timeout=20, what="the server's death")
    (tmp_path / "go").write_text("")
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    assert launched_keys(project, wf) == ["c0", "c1", "c2"]
    assert all(s.status == "done" for s in keys(project, wf).values())


def test_a_kill_9_of_a_forked_supervisor_is_recovered_by_the_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], released: None
) -> None:
    project, wf, child, st = _held_child(tmp_path, capsys, 1)
    os.kill(st.supervisor_pid, signal.SIGKILL)
    # Recorded by its keeper, the server (read_status never recovers), the agent killed.
    wait_until(
        lambda: store(project).read_status(child).status != "running", 30, "the keeper's end"
    )
    wait_until(lambda: not alive(st.pid), timeout=30, what="the agent killed by the keeper")
    ended = store(project).read_status(child)
    assert ended is not None and ended.status == "error"
    assert "supervisor" in (ended.error or "")
    status = wait_ended(project, wf)
    assert status.status == "error"


@pytest.fixture
def server_here() -> Iterator[forks.ForkServer]:
    server = forks.serve_here()
    assert server is not None
    try:
        yield server
    finally:
        forks.stop_serving()


def _command_job(project: Path, name: str) -> str:
    record = plan_job(store(project), JobRequest(name, "go", cwd=project))
    return start(store(project), record, check=False).id


def test_a_server_that_does_not_answer_leaves_the_job_to_a_fresh_supervisor(
    tmp_path: Path, server_here: forks.ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launch gives up on a stopped server and starts a fresh supervisor; the fork the
    server makes once it runs again never had the go, and exits without supervising."""
    project = workflow_project(quick="cat >/dev/null; echo quick")
    first = _command_job(project, "quick")
    wait_until(lambda: not store(project).read_status(first).active, timeout=60, what="first")
    assert store(project).read_status(first).status == "done"
    monkeypatch.setattr(forks, "REPLY_S", 1.0)
    os.kill(server_here.proc.pid, signal.SIGSTOP)
    try:
        second = _command_job(project, "quick")
    finally:
        os.kill(server_here.proc.pid, signal.SIGCONT)
    assert server_here.broken is not None
    wait_until(lambda: not store(project).read_status(second).active, timeout=60, what="second")
    time.sleep(1.0)  # the late fork has had its chance to do harm
    assert store(project).read_status(second).status == "done"
    events = (store(project).job_dir(second) / "events.jsonl").read_text()
    assert events.count('"event":"starting"') == 1  # one supervisor, not two


def _proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict((k, v.strip()) for k, _, v in (line.partition(":") for line in lines))


def _environ(pid: int) -> dict[bytes, bytes]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.partition(b"=")[::2] for p in pairs if p)


@contextmanager
def launcher_changed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's environment, umask and signals, changed after its fork server started
    (what a forked supervisor must have is the launcher's, never the server's)."""
    monkeypatch.setenv("SP_FORK_PROBE", "the launcher's")
    old_mask = os.umask(0o027)
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    old_usr2 = signal.signal(signal.SIGUSR2, lambda *_: None)  # caught: a fresh one has SIG_DFL
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        yield
    finally:
        os.umask(old_mask)
        signal.signal(signal.SIGHUP, old_hup)
        signal.signal(signal.SIGUSR2, old_usr2)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextmanager
def jobs_stopped(project: Path, jobs: list[str]) -> Iterator[None]:
    """The jobs put in `jobs` are stopped at the end, whatever happened."""
    try:
        yield
    finally:
        for job in jobs:
            stop_job(store(project), job)


def _seen_by_the_job(project: Path, job: str) -> dict[str, object]:
    """What a job's supervisor got from its launcher, as its agent and /proc show it, once
    the agent sleeps: before its exec, its environ is what its supervisor started with (a
    shared server's fork starts with the server's), not what it was handed."""

    def asleep() -> bool:
        s = store(project).read_status(job)
        return s is not None and bool(s.pid) and _cmdline(s.pid).startswith(b"sleep")

    wait_until(asleep, timeout=60, what=f"the agent of {job} asleep")
    st = store(project).read_status(job)
    assert st is not None and st.supervisor_pid and st.pid
    job_dir = str(store(project).job_dir(job))
    fields = _proc_status(st.supervisor_pid)
    env = _environ(st.pid)  # the agent's: the supervisor's environment, handed on
    job_keys = {b"SPECIALISTS_JOB_ID", b"SPECIALISTS_JOB_DIR"}
    return {
        **{k: fields[k] for k in ("Umask", "SigIgn", "SigBlk", "SigCgt")},
        "agent": {
            k: v for k, v in _proc_status(st.pid).items() if k in ("Umask", "SigIgn", "SigBlk")
        },
        "cwd": os.readlink(f"/proc/{st.supervisor_pid}/cwd"),
        "fds": sorted(
            t.replace(job_dir, "JOB")
            for t in _fds(st.supervisor_pid).values()
            if not t.startswith(("pipe:", "anon_inode:"))
        ),
        "env": {
            k: v.replace(job_dir.encode(), b"JOB") for k, v in env.items() if k not in job_keys
        },
    }


def test_a_forked_supervisor_inherits_its_launcher_never_the_server(
    server_here: forks.ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server started under one umask, environment, working directory and signals; the
    launcher changed all of them since. A forked supervisor has the launcher's, exactly what
    a fresh one (started right after, without the server) has."""
    # The agent forks nothing while it is read: a looping shell blocks every signal each
    # time it forks its next sleep, and under load two readings can land there.
    project = workflow_project(still="cat >/dev/null; exec sleep 120")
    monkeypatch.chdir(project)
    seen, jobs = {}, []
    with launcher_changed(monkeypatch), jobs_stopped(project, jobs):
        for how in ("forked", "fresh"):
            jobs.append(job := _command_job(project, "still"))
            seen[how] = _seen_by_the_job(project, job)
            supervisor = store(project).read_status(job).supervisor_pid
            server = b"_forks" in _cmdline(_parent(supervisor))
            assert server == (how == "forked"), how
            forks.stop_serving()  # the next one starts fresh
    assert seen["forked"] == seen["fresh"]
    assert seen["fresh"]["Umask"] == "0027"
    assert int(str(seen["fresh"]["SigIgn"]), 16) >> (signal.SIGHUP - 1) & 1
    assert not int(str(seen["fresh"]["SigCgt"]), 16) >> (signal.SIGUSR2 - 1) & 1
    assert int(str(seen["fresh"]["SigBlk"]), 16) >> (signal.SIGUSR1 - 1) & 1
    env = seen["fresh"]["env"]
    assert isinstance(env, dict) and env[b"SP_FORK_PROBE"] == b"the launcher's"
    assert seen["fresh"]["cwd"] == str(project)


def test_the_server_keeps_its_jobs_after_its_launcher_then_exits(
    tmp_path: Path, server_here: forks.ForkServer, strays: list[int]
) -> None:
    """The launcher closes its end while a forked supervisor runs: the server lives on as
    its keeper; a kill -9 of the supervisor, whose agent left a grandchild with no mark
    (`env -i`, a session of its own), is recorded by the server and the grandchild killed;
    with no supervisor left the server exits."""
    pid_file = tmp_path / "grandchild.pid"
    project = workflow_project(
        unmarked=f"cat >/dev/null; env -i PATH=/usr/bin:/bin setsid sh -c "
        f"'trap \"\" TERM; echo $$ > {pid_file}; exec sleep 300' & sleep 300"
    )
    job = _command_job(project, "unmarked")
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 60, "the grandchild")
    grandchild = int(pid_file.read_text())
    strays.append(grandchild)
    st = store(project).read_status(job)
    assert st is not None and st.supervisor_pid
    server = server_here.proc.pid
    assert _parent(st.supervisor_pid) == server
    forks.stop_serving()  # the launcher's EOF
    time.sleep(1.0)
    assert alive(server), "the server left its job without a keeper"
    os.kill(st.supervisor_pid, signal.SIGKILL)
    wait_until(lambda: not alive(grandchild), 20, "the grandchild killed by the server")
    ended = store(project).read_status(job)
    assert ended is not None and ended.status == "error" and "supervisor" in (ended.error or "")
    wait_until(lambda: not alive(server), 20, "the server's exit once it keeps nothing")


@pytest.fixture
def strays() -> Iterator[list[int]]:
    with killed_after() as pids:
        yield pids
