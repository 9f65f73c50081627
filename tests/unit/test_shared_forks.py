"""The shared fork server's checks (supervise/shared_forks.py), without a process: a peer's
confinement read from recorded /proc contents, the socket's key, the switch, a planted file
at the socket's place."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from specialists.supervise import shared_forks

LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
"""
STATUS = """Name:\tpython
Umask:\t0022
Uid:\t1000\t1000\t1000\t1000
Gid:\t1000\t1000\t1000\t1000
Groups:\t1000 27
NoNewPrivs:\t0
Seccomp:\t0
Seccomp_filters:\t0
CapInh:\t0000000000000000
CapPrm:\t0000000000000000
CapEff:\t0000000000000000
CapBnd:\t000001ffffffffff
CapAmb:\t0000000000000000
Cpus_allowed_list:\t0-1
Mems_allowed_list:\t0
"""
STAT = "4242 (python (x)) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"


def recorded(root: Path, **changes: str) -> Path:
    """A /proc/<pid> directory as recorded from a process (two threads), with `changes`
    (a relative path -> its text; `ns/<x>` the link's target) applied."""
    files = {
        "cgroup": "0::/user.slice/user-1000.slice/session-2.scope\n",
        "limits": LIMITS,
        "oom_score_adj": "0\n",
        "attr/current": "unconfined\n",
        "task/4242/status": STATUS,
        "task/4242/stat": STAT,
        "task/4243/status": STATUS,
        "task/4243/stat": STAT.replace("4242 (", "4243 ("),
    }
    links = {f"ns/{ns}": f"{ns}:[40262{i}]" for i, ns in enumerate(shared_forks._NAMESPACES)}
    for name, text in changes.items():
        (links if name.startswith("ns/") else files)[name] = text
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(target)
    return root


def differences(tmp_path: Path, **changes: str) -> list[str]:
    own = shared_forks.confinement(recorded(tmp_path / "own"))
    theirs = shared_forks.confinement(recorded(tmp_path / "theirs", **changes))
    return sorted(k for k in own.keys() | theirs.keys() if own.get(k) != theirs.get(k))


def test_a_peer_recorded_alike_is_confined_alike(tmp_path: Path) -> None:
    assert differences(tmp_path) == []


@pytest.mark.parametrize(
    ("changes", "differ"),
    [
        ({"limits": LIMITS.replace("1024  ", "256   ")}, ["limits"]),  # prlimit --nofile
        ({"ns/mnt": "mnt:[4026599999]"}, ["ns/mnt"]),  # a bwrap sandbox
        ({"ns/net": "net:[4026599999]"}, ["ns/net"]),
        ({"ns/user": "user:[4026599999]"}, ["ns/user"]),
        ({"ns/pid_for_children": "pid:[4026599999]"}, ["ns/pid_for_children"]),
        ({"cgroup": "0::/system.slice/other.scope\n"}, ["cgroup"]),
        ({"oom_score_adj": "1000\n"}, ["oom_score_adj"]),
        ({"attr/current": "sandboxed (enforce)\n"}, ["attr/current"]),
        # One thread's: a launcher's thread under a seccomp filter, or without privileges.
        ({"task/4243/status": STATUS.replace("Seccomp:\t0", "Seccomp:\t2")}, ["threads"]),
        ({"task/4243/status": STATUS.replace("NoNewPrivs:\t0", "NoNewPrivs:\t1")}, ["threads"]),
        ({"task/4242/status": STATUS.replace("Groups:\t1000 27", "Groups:\t1000")}, ["threads"]),
        ({"task/4242/status": STATUS.replace("0-1", "1")}, ["threads"]),  # taskset
        ({"task/4243/stat": STAT.replace(" 20 0 1 ", " 39 19 1 ")}, ["threads"]),  # nice 19
    ],
)
def test_any_difference_in_confinement_is_one(
    tmp_path: Path, changes: dict[str, str], differ: list[str]
) -> None:
    assert differences(tmp_path, **changes) == differ


def test_what_cannot_be_read_is_never_alike_by_accident(tmp_path: Path) -> None:
    gone = recorded(tmp_path / "gone")
    (gone / "ns" / "net").unlink()  # a kernel without it: None, as for the server
    found = shared_forks.confinement(gone)
    assert found["ns/net"] is None
    assert shared_forks.confinement(tmp_path / "no-such-process")["threads"] != []


def test_a_peer_is_checked_against_the_server_itself() -> None:
    own = shared_forks.confinement(Path("/proc/self"))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        assert shared_forks.peer(ours)[:2] == (os.getpid(), os.getuid())
        assert shared_forks.refusal(ours, own) is None
        other = {**own, "limits": "Max open files 1 1 files\n"}
        assert shared_forks.refusal(ours, other) == "a launcher confined otherwise (limits)"


def test_the_socket_is_keyed_by_the_code_and_its_python_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = shared_forks.socket_name()
    assert name == shared_forks.socket_name() and len(name) == 17
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert shared_forks.socket_name() != name
    monkeypatch.delenv("PYTHONPATH")
    monkeypatch.setattr(shared_forks.sys, "executable", "/other/python3")
    assert shared_forks.socket_name() != name


@pytest.mark.parametrize(("value", "off"), [("off", True), ("OFF", True), ("0", True),
                                            ("", False), ("on", False)])  # fmt: skip
def test_the_switch(monkeypatch: pytest.MonkeyPatch, value: str, off: bool) -> None:
    monkeypatch.setenv(shared_forks.OFF_ENV, value)
    assert shared_forks.off() is off


def test_a_bad_idle_time_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(shared_forks.IDLE_ENV, "soon")
    assert shared_forks.idle_seconds() == shared_forks.IDLE_S
    monkeypatch.setenv(shared_forks.IDLE_ENV, "2.5")
    assert shared_forks.idle_seconds() == 2.5


@pytest.mark.parametrize("planted", ["symlink", "fifo", "file"])
def test_nothing_but_a_socket_is_connected_to(tmp_path: Path, planted: str) -> None:
    decoy = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    decoy.bind(str(tmp_path / "decoy"))
    decoy.listen(1)
    decoy.setblocking(False)
    place = tmp_path / "fsock"
    if planted == "symlink":
        place.symlink_to(tmp_path / "decoy")
    elif planted == "fifo":
        os.mkfifo(place)
    else:
        place.write_text("")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(shared_forks._NotASocket):
            shared_forks._connect(fd, "fsock")
        with pytest.raises(FileNotFoundError):
            shared_forks._connect(fd, "nothing")
        os.unlink(place)
        os.symlink("decoy", place)
        with pytest.raises(shared_forks._NotASocket):
            shared_forks._connect(fd, "fsock")
        with pytest.raises(BlockingIOError):
            decoy.accept()  # never reached
        assert shared_forks._connect(fd, "decoy").close() is None  # a socket: connected
    finally:
        os.close(fd)
        decoy.close()


def test_a_launch_with_the_switch_off_asks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(shared_forks.OFF_ENV, "off")
    job = shared_forks.Request(tmp_path / "jobs" / "x", str(tmp_path), {}, -1, -1, ())
    assert shared_forks.launch(job, tmp_path) is None
    assert not (tmp_path / shared_forks.RUN_DIR).exists()


def test_a_launcher_inside_a_job_starts_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server would live in the job's process tree: it is left to other launchers (a
    unit test starts no process: one started here would fail the test)."""
    monkeypatch.setenv(shared_forks.MARK_ENV, str(tmp_path / "jobs" / "abcd1234"))
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        shared_forks._start_server(fd, "fsock", tmp_path)
    finally:
        os.close(fd)
    assert not (tmp_path / shared_forks.LOG_NAME).exists()


def test_a_stopped_process_is_told_from_a_running_or_gone_one() -> None:
    assert not shared_forks.stopped(os.getpid())
    assert not shared_forks.stopped(0)  # in another pid namespace: cannot be seen
    assert not shared_forks.stopped(2**22 + 1)  # above any pid_max: gone


def _launched_lately(run: Path) -> bool:
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return shared_forks._launched_lately(fd)
    finally:
        os.close(fd)


def test_only_a_launch_soon_after_another_asks_for_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(shared_forks.IDLE_ENV, "30")
    mark = tmp_path / shared_forks.LAUNCHED
    assert _launched_lately(tmp_path) is False  # the first launch ever: lone
    assert mark.is_file() and mark.stat().st_mode & 0o777 == 0o600
    assert _launched_lately(tmp_path) is True  # a second soon after
    old = mark.stat().st_mtime - 120
    os.utime(mark, (old, old))
    assert _launched_lately(tmp_path) is False  # long after the last: lone again
    assert _launched_lately(tmp_path) is True


@pytest.mark.parametrize("planted", ["symlink", "fifo", "directory"])
def test_a_planted_launch_mark_is_moved_aside_never_followed(tmp_path: Path, planted: str) -> None:
    mark = tmp_path / "run" / shared_forks.LAUNCHED
    mark.parent.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    before = target.stat().st_mtime_ns
    if planted == "symlink":
        mark.symlink_to(target)
    elif planted == "fifo":
        os.mkfifo(mark)
    else:
        mark.mkdir()
    _launched_lately(mark.parent)  # whichever answer: it neither blocks nor follows
    assert mark.is_file() and not mark.is_symlink()
    assert target.read_text() == "theirs" and target.stat().st_mtime_ns == before
