"""The project's shared fork server (supervise/shared_forks.py): launchers without a fork
server of their own (the CLI's `run --background`, this test process) have their jobs'
supervisors forked by one server per project, which keeps them, then exits once idle; every
failure (no server, a stale socket, a planted file, a peer confined otherwise) is a fresh
start, never a harm."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.store.proctree import job_mark
from specialists.supervise import shared_forks
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import start
from tests.integration.test_fork_server import (
    _cmdline,
    _fds,
    _hold,
    _mark,
    _parent,
    _seen_by_the_job,
    jobs_stopped,
    launcher_changed,
)
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.processes import alive, killed_after
from tests.support.waiting import wait_until
from tests.support.workflows import store, workflow_project

pytestmark = pytest.mark.integration

IDLE_S = 8.0  # long enough for the next CLI launch to find the server listening


@pytest.fixture(autouse=True)
def quick_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(shared_forks.IDLE_ENV, str(IDLE_S))
    monkeypatch.delenv(shared_forks.OFF_ENV, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project whose `hold` jobs wait for tmp_path/go; at the end they are let go and any
    shared server of the project still alive is killed."""
    # still: an agent that forks nothing while it waits (a shell that loops blocks every
    # signal each time it forks its next sleep, which a reading of its mask can catch).
    root = workflow_project(
        hold=_hold(tmp_path),
        quick="cat >/dev/null; echo quick",
        still="cat >/dev/null; exec sleep 120",
    )
    launched_lately(root)  # the next launch that finds no server starts one
    try:
        yield root
    finally:
        (tmp_path / "go").write_text("")
        with killed_after() as pids:
            pids.extend(_servers(root))


def launched_lately(project: Path) -> None:
    """What a launch that found no server a moment ago leaves: the next such launch starts
    one (a lone launch starts none: test_a_lone_launch_starts_no_server)."""
    run = project / ".specialists" / shared_forks.RUN_DIR
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    (run / shared_forks.LAUNCHED).touch()


def _servers(project: Path) -> list[int]:
    """The shared fork servers of `project`: they hold its run directory open (what they
    forked, which shows their command line, holds nothing of theirs)."""
    run = str(project / ".specialists" / "run")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if b"_forks\0--shared" in _cmdline(int(entry)) and run in _fds(int(entry)).values():
                found.append(int(entry))
        except OSError:
            continue
    return found


def _log(project: Path) -> str:
    """The shared server's log (its stderr)."""
    return (project / ".specialists" / "run" / shared_forks.LOG_NAME).read_text()


def _socket(project: Path) -> Path:
    return project / ".specialists" / "run" / shared_forks.socket_name()


def _answers(place: Path) -> bool:
    """Whether a server listens at `place` (a socket, not a link to one)."""
    if not place.is_socket() or place.is_symlink():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
        try:
            probe.connect(str(place))
        except OSError:
            return False
    return True


def _listening(project: Path) -> int:
    """The project's one shared server once it listens; its pid."""
    wait_until(lambda: _answers(_socket(project)), timeout=60, what="the server listening")
    servers = _servers(project)
    assert len(servers) == 1, servers
    return servers[0]


def _cli(project: Path, *prefix: str, name: str = "hold") -> str:
    argv = [*prefix, sys.executable, "-m", "specialists", "run", name, "--prompt", "x"]
    out = subprocess.run(
        [*argv, "--background"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _command_job(project: Path, name: str = "hold") -> str:
    record = plan_job(store(project), JobRequest(name, "go", cwd=project))
    return start(store(project), record, check=False).id


def _supervisor(project: Path, job: str) -> int:
    """The supervisor of `job` once its agent runs."""

    def running() -> bool:
        st = store(project).read_status(job)
        return st is not None and st.status == "running" and bool(st.pid)

    wait_until(running, timeout=60, what=f"job {job} running")
    st = store(project).read_status(job)
    assert st is not None and st.supervisor_pid
    return st.supervisor_pid


def _fresh(pid: int) -> bool:
    """Whether the supervisor `pid` is a fresh interpreter (its keeper is an sp-keeper)."""
    return Path(f"/proc/{_parent(pid)}/comm").read_text().strip() == "sp-keeper"


def _wait_ended(project: Path, *jobs: str) -> None:
    for job in jobs:
        wait_until(lambda j=job: not store(project).read_status(j).active, 60, f"{job} ended")
        assert store(project).read_status(job).status == "done", job


def test_jobs_started_one_by_one_share_one_server_which_exits_when_idle(
    tmp_path: Path, project: Path
) -> None:
    first = _cli(project)  # no server yet: a fresh supervisor, and a server for the next
    assert _fresh(_supervisor(project, first))
    server = _listening(project)
    assert _mark(server) == ":forks"  # no job's mark
    assert os.stat(_socket(project).parent).st_mode & 0o777 == 0o700
    assert not [t for t in _fds(server).values() if t.startswith(("/dev/pts", "/dev/tty"))]
    later = [_cli(project), _cli(project)]
    supervisors = [_supervisor(project, job) for job in later]
    assert [_parent(s) for s in supervisors] == [server, server]  # its keeper, as forks.py
    for job, pid in zip(later, supervisors, strict=True):
        assert _mark(store(project).read_status(job).pid) == job_mark(store(project).job_dir(job))
        assert os.getsid(pid) == pid
    (tmp_path / "go").write_text("")
    _wait_ended(project, first, *later)
    time.sleep(IDLE_S / 2)
    assert alive(server), "it left before its idle time"
    wait_until(lambda: not alive(server), timeout=IDLE_S + 10, what="the idle server's exit")
    assert not _socket(project).exists()  # it removed its socket on the way out


def test_a_lone_launch_starts_no_server_and_the_next_one_soon_after_does(
    project: Path,
) -> None:
    """A server only pays when launches come together: a lone launch (a person's one job,
    a dispatch every few minutes) starts none that would import, serve nothing and idle
    out; the second within the idle time starts one, and the third is forked by it."""
    mark = project / ".specialists" / shared_forks.RUN_DIR / shared_forks.LAUNCHED
    old = time.time() - IDLE_S - 60
    os.utime(mark, (old, old))  # the last launch was long ago
    lone = _cli(project)
    assert _servers(project) == [] and _fresh(_supervisor(project, lone))
    assert time.time() - mark.stat().st_mtime < IDLE_S  # this launch is recorded
    second = _cli(project)  # soon after: a server for the next ones
    server = _listening(project)
    assert _fresh(_supervisor(project, second))
    third = _cli(project)
    assert _parent(_supervisor(project, third)) == server


def _a_shared_fork(project: Path) -> tuple[int, str, int]:
    """A server started by a first job, and a held job it forked: (server, job, supervisor)."""
    _cli(project, name="quick")
    server = _listening(project)
    job = _cli(project)
    supervisor = _supervisor(project, job)
    assert _parent(supervisor) == server
    return server, job, supervisor


def test_a_killed_server_leaves_a_stale_socket_the_next_launch_replaces(
    tmp_path: Path, project: Path
) -> None:
    server, kept, kept_supervisor = _a_shared_fork(project)
    os.kill(server, signal.SIGKILL)
    wait_until(lambda: not alive(server), timeout=20, what="the server's death")
    assert _socket(project).is_socket()  # stale: nothing listens
    after = _cli(project)
    assert _fresh(_supervisor(project, after))  # refused connect: fresh
    second = _listening(project)  # and a new server, on the same place
    assert second != server
    forked = _cli(project)
    assert _parent(_supervisor(project, forked)) == second
    assert alive(kept_supervisor)  # what the dead server forked lives on
    (tmp_path / "go").write_text("")
    _wait_ended(project, kept, after, forked)


def test_a_new_server_removes_the_sockets_dead_servers_left(project: Path) -> None:
    run = project / ".specialists" / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = run / "f0123456789abcdef"  # another code version's server, killed
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as gone:
        gone.bind(str(dead))
    planted = run / "f00000000000000ff"  # a socket's name, but no socket: not ours to remove
    planted.write_text("keep")
    other = run / "notes"
    other.write_text("keep")
    _command_job(project, "quick")
    _listening(project)
    assert not dead.exists()
    assert planted.read_text() == other.read_text() == "keep"


def test_launchers_racing_start_one_server(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(shared_forks.IDLE_ENV, "60")  # it outlives the checks (then killed)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "specialists", "run", "quick", "--prompt", "x", "--background"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    jobs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        jobs.append(out.decode().strip())
    _listening(project)  # one, not four
    time.sleep(1.0)  # a late loser would show now
    assert len(_servers(project)) == 1
    _wait_ended(project, *jobs)


def test_a_second_start_while_one_is_starting_starts_none(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock, held by the starting server, is the arbiter: the second start is a no-op."""
    monkeypatch.setenv(shared_forks.IDLE_ENV, "60")
    run = project / ".specialists" / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    for _ in range(2):  # two launchers: each its own open directory
        fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
        try:
            shared_forks._start_server(fd, shared_forks.socket_name(), project / ".specialists")
        finally:
            os.close(fd)
    _listening(project)
    time.sleep(1.0)
    assert len(_servers(project)) == 1


@pytest.mark.parametrize("planted", ["symlink", "fifo"])
def test_a_planted_file_at_the_socket_is_never_connected_to(
    tmp_path: Path, project: Path, planted: str
) -> None:
    """A symlink (to a socket that would answer) or a FIFO at the socket's place: the launch
    starts fresh without touching it; the server started then moves it aside."""
    place = _socket(project)
    place.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    decoy = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    decoy.bind(str(tmp_path / "decoy"))
    decoy.listen(8)
    decoy.setblocking(False)
    if planted == "symlink":
        place.symlink_to(tmp_path / "decoy")
    else:
        os.mkfifo(place)
    try:
        job = _cli(project)
        assert _fresh(_supervisor(project, job))
        with pytest.raises(BlockingIOError):
            decoy.accept()  # nobody connected through the link
        server = _listening(project)
        aside = [p for p in place.parent.iterdir() if ".displaced-" in p.name]
        assert len(aside) == 1, aside
        assert aside[0].is_symlink() if planted == "symlink" else aside[0].is_fifo()
        assert _parent(_supervisor(project, _cli(project))) == server
    finally:
        decoy.close()


@pytest.mark.parametrize(
    "prefix",
    [("prlimit", "--nofile=321:321"), ("unshare", "--ipc"), ("unshare", "--uts")],
    ids=lambda p: " ".join(p),
)
def test_a_launcher_confined_otherwise_starts_fresh(project: Path, prefix: tuple[str, ...]) -> None:
    """A launcher whose rlimits or namespaces differ from the server's would get the
    server's through a fork: it is refused, and its job starts fresh with its own. The
    server's log says whom it refused and why."""
    if os.geteuid() != 0 and prefix[0] == "unshare":
        pytest.skip("unshare needs root")
    _cli(project, name="quick")
    server = _listening(project)
    job = _cli(project, *prefix)
    supervisor = _supervisor(project, job)
    assert _fresh(supervisor)
    differs = "limits" if prefix[0] == "prlimit" else f"ns/{prefix[1][2:]}"
    assert f"INFO specialists.forks: shared fork server: refused a launcher confined " \
        f"otherwise ({differs})" in _log(project)  # fmt: skip
    if prefix[0] == "prlimit":
        limits = Path(f"/proc/{supervisor}/limits").read_text()
        assert any(line.startswith("Max open files") and " 321 " in line
                   for line in limits.splitlines()), limits  # fmt: skip
    assert _parent(_supervisor(project, _cli(project))) == server  # the control: served


def test_a_job_forked_by_the_shared_server_is_what_a_fresh_one_is(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server started under this process's umask, signals, environment and directory;
    the launcher changed them all since. The shared server's fork has the launcher's,
    exactly what a fresh one (the switch off) has."""
    _command_job(project, "quick")
    server = _listening(project)
    monkeypatch.chdir(project)
    seen, jobs = {}, []
    with launcher_changed(monkeypatch), jobs_stopped(project, jobs):
        for how in ("shared", "fresh"):
            if how == "fresh":
                monkeypatch.setenv(shared_forks.OFF_ENV, "off")
            jobs.append(job := _command_job(project, "still"))
            supervisor = _supervisor(project, job)
            assert (_parent(supervisor) == server) == (how == "shared"), how
            seen[how] = _seen_by_the_job(project, job)
    env = dict(seen["fresh"]["env"])  # type: ignore[call-overload]
    env.pop(shared_forks.OFF_ENV.encode())
    assert seen["shared"] == {**seen["fresh"], "env": env}
    assert seen["fresh"]["Umask"] == "0027"
    assert env[b"SP_FORK_PROBE"] == b"the launcher's"


def test_a_kill_9_of_a_shared_forked_supervisor_is_recovered_by_the_server(
    project: Path,
) -> None:
    server, job, supervisor = _a_shared_fork(project)
    agent = store(project).read_status(job).pid
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: store(project).read_status(job).status != "running", 30, "its end")
    wait_until(lambda: not alive(agent), timeout=30, what="the agent killed by the server")
    ended = store(project).read_status(job)
    assert ended.status == "error" and "supervisor" in (ended.error or "")
    assert alive(server)  # one job's crash never ends the server
    said = f"WARNING specialists.keeper: supervisor {supervisor} of job {job} died (killed by"
    assert said in _log(project)  # its keeper's lines land in its log, as a keeper's do


def test_a_stopped_server_is_passed_over_without_waiting(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_forks, "SHARED_REPLY_S", 120.0)
    _command_job(project, "quick")
    server = _listening(project)
    os.kill(server, signal.SIGSTOP)
    try:  # a signal is delivered when the kernel gets to it: look once it has
        wait_until(lambda: shared_forks.stopped(server), timeout=30, what="the server stopped")
        began = time.monotonic()
        job = _command_job(project, "quick")
        waited = time.monotonic() - began
    finally:
        os.kill(server, signal.SIGCONT)
    assert waited < 60, waited  # a wait for its answer would have been 120 s
    _wait_ended(project, job)
    assert alive(server)


def test_a_hung_server_leaves_the_job_to_a_fresh_supervisor(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch gives up on a server that does not answer; the fork it makes once it runs
    again never had the go, and exits without supervising."""
    monkeypatch.setattr(shared_forks, "SHARED_REPLY_S", 1.0)
    monkeypatch.setattr(shared_forks, "stopped", lambda pid: False)  # as if hung, not stopped
    _command_job(project, "quick")
    server = _listening(project)
    os.kill(server, signal.SIGSTOP)
    try:
        job = _command_job(project, "quick")
    finally:
        os.kill(server, signal.SIGCONT)
    _wait_ended(project, job)
    time.sleep(1.0)  # the late fork has had its chance to do harm
    assert store(project).read_status(job).status == "done"
    events = (store(project).job_dir(job) / "events.jsonl").read_text()
    assert events.count('"event":"starting"') == 1  # one supervisor, not two
    assert alive(server)


NATIVE_MEDIUM = (
    "metadata: {name: natcmd, description: t}\n"
    "execution: {runner: native, model: openai/mock-model, permission_required: MEDIUM}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)


def test_a_job_started_by_a_forked_supervisor_is_forked_by_the_server_not_by_it(
    project: Path, mock_llm: MockLLM
) -> None:
    """A supervisor the server forked starts a job of its own (its agent's bg_run): the new
    supervisor is the server's fork too, as a fresh supervisor's launch would make it. The
    fork forgets the server's own launcher (forks._here), or it would fork the new one from
    itself, a copy of a supervisor mid-job."""
    (project / "specialists" / "natcmd.specialist.yaml").write_text(NATIVE_MEDIUM)
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bg_run", {"command": "exec sleep 120"}),)))
    mock_llm.set_default(Reply("Dispatched; waiting for it."))
    quick = _command_job(project, "quick")
    server = _listening(project)
    jobs: list[str] = []
    with jobs_stopped(project, jobs):
        jobs.append(parent := _command_job(project, "natcmd"))

        def waiting() -> bool:
            return store(project).read_status(parent).current_event == "waiting_for_events"

        wait_until(waiting, 60, "the agent waiting for its command")
        assert _parent(store(project).read_status(parent).supervisor_pid) == server
        jobs.append(command := (set(store(project).list_ids()) - {parent, quick}).pop())
        assert _parent(_supervisor(project, command)) == server
