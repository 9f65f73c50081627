"""A project's shared fork server: the launchers that have no fork server of their own.

A process that serves forks (forks.py `serve_here`: the workflow engine) forks its jobs'
supervisors from its own server. Every other launcher (a CLI `run --background`, an MCP
server's `run`, a reader's takeover) asks the project's shared one: a fork server
(`python -m specialists _forks --shared`) listening on a Unix socket in `.specialists/run/`.
The launch is the one the in-process server gets (`ask`): the request with the job's lock,
its supervisor.log and the go pipe as SCM_RIGHTS, the pid back, then the go. Any failure
(no server, a stale socket after a kill -9, a stopped server, a refusal, a timeout) starts
a fresh supervisor, as a launch the in-process server did not confirm does.

- Its place: `<root>/run/f<key>`, reached through `/proc/self/fd/<dir>/` (never longer than
  a socket address may be, wherever the project is). The key is a hash of the interpreter,
  the package's place, version and source stamp, and the PYTHON* environment: a server of
  another code version is never asked; it idles out, and the next server removes its socket.
- Its start: a launcher that finds none (nothing there, or nothing listening) starts a
  fresh supervisor, and a server only when another launch found none within the idle time
  before it (`run/launched`'s mtime): a lone launch starts none that would only idle out.
  It takes the lock (a flock on `run/` itself: no lock file to plant) and hands it to a
  detached server it does not wait for (its own session, the `:forks` mark that is no
  job's, stderr on `run/forks.log`). A launcher that cannot take the lock starts none: a
  server is starting or serving. So two launchers at once start one server (one a
  project: another version's serves out its jobs first). It listens before it imports: a
  launch that comes meanwhile waits for its imports (a second or so) rather than starting
  fresh.
  A launcher inside a job (its environment carries the job's mark) starts none: the server
  would live in that job's process tree.
- Its end: it keeps (keeper.py `after`) what it forked, and exits once it keeps nothing and
  no launch came for IDLE_S (SPECIALISTS_FORK_SERVER_IDLE_S): never a daemon.
- Its peers: a launcher gets no more than a fresh start would give it. The server refuses a
  peer of another user (SO_PEERCRED) and one whose confinement differs from its own
  (`confinement`: namespaces, cgroup, credentials, capabilities, no_new_privs, seccomp, CPU
  and memory affinity, nice, rlimits, LSM label, OOM score): a job's agent in a sandbox, a
  prlimit'ed launcher starts fresh. The directory is private (0700, ours, never a link).

SPECIALISTS_FORK_SERVER=off turns it off: every such launch starts a fresh supervisor.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.base.tuples import NamedTuple
from specialists.process.spawn import SpawnFailed, spawn
from specialists.store.files import create_private, displace, ensure_dir, open_dir
from specialists.store.locks import try_lock
from specialists.store.proctree import MARK_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

log = logger("specialists.forks")

OFF_ENV = "SPECIALISTS_FORK_SERVER"  # "off": no shared server
IDLE_ENV = "SPECIALISTS_FORK_SERVER_IDLE_S"
IDLE_S = 30.0  # a shared server with nothing to keep exits after this long without a launch
RUN_DIR = "run"
LOG_NAME = "forks.log"
LAUNCHED = "launched"  # its mtime: when a launch last found no server
MAX_LOG = 1 << 20  # a bigger log is emptied when the next server starts
MAX_REQUEST = 64 * 1024  # a bigger launch (a huge environment) starts a fresh interpreter
REPLY_S = 20.0  # how long a launch waits for its own server's fork (forks.py)
SHARED_REPLY_S = 10.0  # for the shared server's: every launch of a hung one pays it
CONNECT_S = 2.0
_NAMESPACES = ("mnt", "pid", "pid_for_children", "user", "net", "ipc", "uts", "cgroup", "time")
_THREAD_FIELDS = (
    *("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "Seccomp_filters"),
    *("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "Cpus_allowed_list", "Mems_allowed_list"),
)


class Request(NamedTuple):
    """What a supervisor is started with: its job, working directory, environment, the
    job's lock and supervisor.log descriptors, its extra arguments, and (runner, model),
    whose modules the server imports once for every child after it."""

    dir: Path
    cwd: str
    env: Mapping[str, str]
    lock_fd: int
    log_fd: int
    extra: Sequence[str]
    warm: tuple[str, str] = ("", "")


class Lost(Exception):
    """The server cannot be asked any more (it died, ended, or answered nonsense)."""


def launcher_state() -> dict[str, object] | None:
    """What a fresh supervisor would inherit from this thread besides its environment: the
    umask, the ignored and the blocked signals (None where /proc does not tell)."""
    try:
        with open("/proc/thread-self/status") as f:
            fields = dict(line.rstrip("\n").partition(":")[::2] for line in f)
        umask = int(fields["Umask"], 8)
        ignored, blocked = (int(fields[k], 16) for k in ("SigIgn", "SigBlk"))
    except (OSError, KeyError, ValueError):
        return None

    def signals(mask: int) -> list[int]:
        return [n for n in range(1, 65) if mask >> (n - 1) & 1]

    return {"umask": umask, "ignored": signals(ignored), "blocked": signals(blocked)}


def fresh_signals(ignored: set[int], blocked: set[int]) -> None:
    """A fresh interpreter's signals: what its launcher ignored stays ignored across the
    exec, all else is at its default; Python then ignores SIGPIPE and SIGXFSZ and turns a
    default SIGINT into KeyboardInterrupt. The launcher's blocked signals stay blocked."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):  # one the C library keeps for itself
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def request_data(job: Request) -> bytes | str:
    """The launch request for `job` (this thread's umask and signals with it), as a server
    reads it; or why there is none (a fresh supervisor must start)."""
    state = launcher_state()
    if state is None:
        return "this thread's umask and signals are unknown"
    request = {"dir": str(job.dir), "cwd": job.cwd, "env": dict(job.env),
               "extra": list(job.extra), "warm": list(job.warm), "state": state}  # fmt: skip
    data = json.dumps(request).encode("utf-8", "surrogateescape")
    if len(data) > MAX_REQUEST:
        return "the launch is too big to send"
    return data


def ask(sock: socket.socket, job: Request, timeout: float) -> int | str:
    """Ask the server on `sock` to fork a supervisor for `job`, and give the fork its go: its
    pid, or why the server would not (a fresh one must start). Lost when the server is."""
    data = request_data(job)
    if isinstance(data, str):
        return data
    go_read, go_write = os.pipe()
    try:
        try:
            socket.send_fds(sock, [data], [job.lock_fd, job.log_fd, go_read])
            sock.settimeout(timeout)
            reply = sock.recv(4096)
        except OSError as exc:
            raise Lost(f"it could not be asked: {exc}") from None
        finally:
            os.close(go_read)
        try:
            answer = json.loads(reply)
            pid = answer.get("pid")
        except (ValueError, AttributeError):
            raise Lost("it ended" if not reply else "it answered nonsense") from None
        if not isinstance(pid, int):
            return str(answer.get("error"))
        try:
            os.write(go_write, b"g")
        except OSError:  # the fork died before its go: it never supervised
            return "the fork died before its go"
        return pid
    finally:
        os.close(go_write)  # without the go, a forked child exits unused


# --- the launcher's side ----------------------------------------------------------------


def off() -> bool:
    return os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "no", "false")


def launch(job: Request, root: Path) -> int | None:
    """A supervisor forked by the shared server of the store at `root`, or None: start a
    fresh one (and, when there was no server, one has been started for the next launches)."""
    if off() or not sys.platform.startswith("linux"):
        return None
    try:
        ensure_dir(root / RUN_DIR)
        run_fd = open_dir(root / RUN_DIR)
    except (OSError, SpecialistsError) as exc:
        log.info("no shared fork server: %s", exc)
        return None
    try:
        name = socket_name()
        try:
            sock = _connect(run_fd, name)
        except (FileNotFoundError, ConnectionRefusedError, _NotASocket):
            if _launched_lately(run_fd):  # a second launch: more may come
                _start_server(run_fd, name, root)  # for the next launches
            return None
        except OSError as exc:
            log.info("shared fork server not reached: %s", exc)
            return None
        with sock:
            try:
                answer = ask(sock, job, SHARED_REPLY_S)
            except Lost as exc:
                log.info("shared fork server lost (%s): a fresh supervisor starts", exc)
                return None
        if isinstance(answer, str):
            log.info("shared fork server: %s: a fresh supervisor starts", answer)
            return None
        return answer
    finally:
        os.close(run_fd)


class _NotASocket(Exception):
    """Something else is at the socket's place: never connected to (a server moves it)."""


def _connect(run_fd: int, name: str) -> socket.socket:
    st = os.stat(name, dir_fd=run_fd, follow_symlinks=False)
    if not stat.S_ISSOCK(st.st_mode):
        raise _NotASocket(name)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(CONNECT_S)
        sock.connect(f"/proc/self/fd/{run_fd}/{name}")
        pid, uid, _ = peer(sock)
        if uid != os.getuid():
            raise PermissionError(f"the server runs as user {uid}")
        if stopped(pid):  # it would answer no launch before SHARED_REPLY_S
            raise OSError(f"the server ({pid}) is stopped")
    except BaseException:
        sock.close()
        raise
    return sock


def peer(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of `sock`, as the kernel saw it."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return pid, uid, gid


def stopped(pid: int) -> bool:
    """Whether the process `pid` is stopped (SIGSTOP, or a tracer holds it); False when it
    cannot be seen (0: in another pid namespace) or has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read()
    except OSError:
        return False
    return line[line.rfind(b")") + 2 : line.rfind(b")") + 3] in (b"T", b"t")


def _is_socket_name(name: str) -> bool:
    return len(name) == 17 and name[0] == "f" and all(c in "0123456789abcdef" for c in name[1:])


def socket_name() -> str:
    """The server's socket name for this code: any change to the interpreter, the package
    (its place, version, or a file added, removed or replaced in one of its directories) or
    the PYTHON* environment names another server."""
    import hashlib

    import specialists

    package = os.path.dirname(os.path.realpath(specialists.__file__))
    stamp = [sys.executable, package, specialists.__version__]
    stamp += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PYTHON"))
    with os.scandir(package) as entries:
        stamp += sorted(f"{e.name}:{e.stat(follow_symlinks=False).st_mtime_ns}" for e in entries)
    digest = hashlib.sha256("\0".join(stamp).encode("utf-8", "surrogateescape"))
    return "f" + digest.hexdigest()[:16]


def _launched_lately(run_fd: int) -> bool:
    """Whether another launch found no server within the idle time before this one, which
    it records (LAUNCHED's mtime). A lone launch (a person's one job, an orchestrator's
    dispatch every few minutes) starts no server: it would import, serve nothing and idle
    out. Unknown (the mark cannot be read or written): True, a server as before."""
    try:
        try:
            before: float | None = os.stat(LAUNCHED, dir_fd=run_fd, follow_symlinks=False).st_mtime
        except FileNotFoundError:
            before = None
        fd = create_private(LAUNCHED, os.O_WRONLY, dir_fd=run_fd)  # a link or FIFO: moved aside
        try:
            os.utime(fd)
        finally:
            os.close(fd)
    except (OSError, SpecialistsError) as exc:
        log.info("the last launch's time is unknown (%s): a shared fork server starts", exc)
        return True
    return before is not None and time.time() - before < idle_seconds()


def _start_server(run_fd: int, name: str, root: Path) -> None:
    """Start the shared server for the next launches, unless one is starting or serving
    (the run directory's lock is taken) or this launcher runs inside a job. Never waits."""
    mark = os.environ.get(MARK_ENV, "")
    if mark and not mark.endswith(":forks"):
        return  # inside a job: the server would live in the job's process tree
    try:
        if not try_lock(run_fd):
            return  # another launcher's server is starting, or serving
        env = dict(os.environ)
        env[MARK_ENV] = f"{mark}:forks"  # no job's mark
        log_fd = create_private(LOG_NAME, os.O_WRONLY | os.O_APPEND, dir_fd=run_fd)
        try:
            if os.fstat(log_fd).st_size > MAX_LOG:
                os.ftruncate(log_fd, 0)
            argv = ["_forks", "--shared", str(run_fd), name, str(root)]  # root: for ps
            spawn(
                [sys.executable, "-m", "specialists", *argv],
                cwd=root.parent,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_fd,
                pass_fds=(run_fd,),  # and the lock with it: closing ours leaves it held
            )
        finally:
            os.close(log_fd)
    except (OSError, SpecialistsError) as exc:
        log.info("shared fork server not started: %s", exc)
    except SpawnFailed as exc:
        log.info("shared fork server not started: %s", exc.reason)


# --- the server's side ------------------------------------------------------------------


def idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(IDLE_ENV, IDLE_S)))
    except ValueError:
        return IDLE_S


def listen(run_fd: int, name: str) -> socket.socket:
    """The server's listening socket at `name` (it holds the lock: whatever is there is a
    dead server's socket, removed, or something planted, moved aside). Raises OSError."""
    _remove_dead_sockets(run_fd, name)
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=run_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None  # the place is free
    if st is not None and stat.S_ISSOCK(st.st_mode):
        os.unlink(name, dir_fd=run_fd)
    elif st is not None:
        log.warning("fork server: %s is not a socket: moved aside", name)
        displace(name, dir_fd=run_fd)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        sock.bind(f"/proc/self/fd/{run_fd}/{name}")
        sock.listen(64)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.setblocking(False)
    return sock


def _remove_dead_sockets(run_fd: int, name: str) -> None:
    """Remove the sockets other code versions' servers left (a server holds the lock while
    it lives, so under it every one is dead): a kill -9 or an upgrade leaves them behind."""
    with os.scandir(run_fd) as entries:
        dead = [e.name for e in entries if _is_socket_name(e.name) and e.name != name]
    for other in dead:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.stat(other, dir_fd=run_fd, follow_symlinks=False).st_mode):
                os.unlink(other, dir_fd=run_fd)


def unlisten(sock: socket.socket, run_fd: int, name: str) -> None:
    """Stop serving: no launcher reaches this server any more (a pending one starts fresh)."""
    try:  # while it holds the lock, what is at its place is its own socket
        if stat.S_ISSOCK(os.stat(name, dir_fd=run_fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=run_fd)
    except OSError as exc:
        log.warning("fork server: its socket could not be removed: %s", exc)
    sock.close()


def refusal(conn: socket.socket, own: dict[str, object]) -> str | None:
    """Why the launcher at the other end of `conn` may not be served (None: it may): another
    user, or a confinement unlike the server's own `own`."""
    pid, uid, _ = peer(conn)
    if uid != os.getuid():
        return f"a launcher of user {uid}"
    theirs = confinement(Path(f"/proc/{pid}"))
    differ = sorted(k for k in own.keys() | theirs.keys() if own.get(k) != theirs.get(k))
    return f"a launcher confined otherwise ({', '.join(differ)})" if differ else None


def confinement(proc: Path) -> dict[str, object]:
    """What a process's children inherit that a launch request does not carry: its
    namespaces, cgroup, rlimits, LSM label and OOM score, and each thread's credentials,
    capabilities, no_new_privs, seccomp, affinity and nice (`proc`: its /proc directory)."""
    found: dict[str, object] = {}
    for ns in _NAMESPACES:
        try:
            found[f"ns/{ns}"] = os.readlink(proc / "ns" / ns)
        except FileNotFoundError:
            found[f"ns/{ns}"] = None  # a kernel without it
        except OSError as exc:
            found[f"ns/{ns}"] = f"unreadable: {exc.errno}"
    for name in ("cgroup", "limits", "oom_score_adj", "attr/current"):
        found[name] = _read(proc / name)
    threads: set[tuple[str, ...]] = set()
    try:
        tids = os.listdir(proc / "task")
    except OSError as exc:
        tids, threads = [], {(f"unreadable: {exc.errno}",)}
    for tid in tids:
        status = _read(proc / "task" / tid / "status")
        stat_line = _read(proc / "task" / tid / "stat")
        if status is None or stat_line is None:
            continue  # the thread ended meanwhile
        fields = dict(line.partition(":")[::2] for line in status.splitlines())
        nice = stat_line[stat_line.rfind(")") + 2 :].split()[16:17]
        threads.add((*(fields.get(k, "").strip() for k in _THREAD_FIELDS), *nice))
    found["threads"] = sorted(threads)
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.errno}"
