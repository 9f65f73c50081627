"""The fork server: detached supervisors forked from a process that has their imports.

A supervisor started as `python -m specialists _supervise <job_dir>` pays a fresh
interpreter and its imports (and a native job the model SDK's) before it supervises; a
process that starts many jobs (the workflow engine) starts one fork server instead
(`python -m specialists _forks`, its child), which imports the supervisor once and forks one
per job. Forked supervisors skip that CPU and share those pages (lower PSS).

A forked supervisor is what a fresh one is: its own session (so its own process group), the
job's lock on an inherited descriptor, stdin /dev/null and stdout/stderr on supervisor.log,
no other descriptor, no thread (the server never starts one: it refuses to fork if an import
did), the launcher's environment with the job's mark, working directory, umask, ignored and
blocked signals (every other signal at its default, as after an exec). The kernel shows a
process's start-up environment in /proc/PID/environ, so a forked supervisor shows the
server's, whose mark (`<launcher's mark>:forks`) is no job's: like a fresh one marked with
its own job, it counts as another job's process to the launcher's job, so a workflow's end
never kills its children's supervisors (store/proctree.py).

The server is the keeper (keeper.py) of every supervisor it forked: a subreaper that runs the
keeper's `after` for each when it exits, instead of one keeper process a job (each a few MB
of memory no job could share). So it outlives its launcher while a supervisor it forked
lives, and exits once none does: never a daemon that outlives its jobs.

Nothing is lost when the server dies (kill -9) or misbehaves: a forked supervisor is its own
process (without a keeper then: the next reader recovers its job, store/recovery.py), and a
launch the server did not confirm falls back to a fresh interpreter. The child it forks
waits for the launcher's go (one byte on a pipe only the launcher can write) before it does
anything, so a fork whose pid never reached the launcher exits unused rather than
supervising the job beside the fallback's supervisor.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from specialists.base.tuples import NamedTuple
from specialists.process.spawn import SpawnFailed, exit_fd, reaped, spawn
from specialists.store.proctree import MARK_ENV
from specialists.supervise.argv import LOCK_FD_ENV
from specialists.supervise.keeper import after

log = logging.getLogger("specialists.forks")

SOCK_ENV = "SPECIALISTS_FORKS_FD"  # the server's end of the socket pair, a descriptor number
MAX_REQUEST = 64 * 1024  # a bigger launch (a huge environment) starts a fresh interpreter
READY_S = 60.0  # how long a launch waits for the server's imports, then gives up on it
REPLY_S = 20.0  # how long a launch waits for the server's fork
_SDKS = {"anthropic": "anthropic"}  # a native provider's api -> its SDK (else openai)
_MAX_FD = 65536
_MAX_TELL = 256 * 1024
_PR_SET_CHILD_SUBREAPER = 36


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


# --- the launcher's side ----------------------------------------------------------------


class ForkServer:
    """A launcher's handle on its fork server (one per process: `serve_here`)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ)
        env[SOCK_ENV] = str(theirs.fileno())
        env[MARK_ENV] = f"{os.environ.get(MARK_ENV, '')}:forks"  # no job's mark
        try:
            self.proc = spawn(
                [sys.executable, "-m", "specialists", "_forks"],
                cwd=None,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sys.stderr.fileno(),
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self._ready = False
        self.broken: str | None = None

    def launch(self, job: Request) -> int | None:
        """Fork a supervisor for `job`; its pid, or None when the server
        cannot (a fresh one must start)."""
        state = launcher_state()
        if state is None:
            return None
        request = {"dir": str(job.dir), "cwd": job.cwd, "env": dict(job.env),
                   "extra": list(job.extra), "warm": list(job.warm), "state": state}  # fmt: skip
        data = json.dumps(request).encode("utf-8", "surrogateescape")
        if len(data) > MAX_REQUEST:
            return None
        with self._lock:
            if self.broken is not None or not self._wait_ready():
                return None
            go_read, go_write = os.pipe()
            try:
                try:
                    socket.send_fds(self._sock, [data], [job.lock_fd, job.log_fd, go_read])
                    self._sock.settimeout(REPLY_S)
                    reply = self._sock.recv(4096)
                except OSError as exc:
                    self._lost(f"it could not be asked: {exc}")
                    return None
                finally:
                    os.close(go_read)
                try:
                    answer = json.loads(reply)
                    pid = answer.get("pid")
                except (ValueError, AttributeError):
                    self._lost("it ended" if not reply else "it answered nonsense")
                    return None
                if not isinstance(pid, int):
                    log.warning("fork server: %s", answer.get("error"))
                    return None
                try:
                    os.write(go_write, b"g")
                except OSError:  # the fork died before its go: it never supervised
                    return None
                return pid
            finally:
                os.close(go_write)  # without the go, a forked child exits unused

    def _wait_ready(self) -> bool:
        if self._ready:
            return True
        self._sock.settimeout(READY_S)
        try:
            hello = self._sock.recv(64)
        except OSError as exc:
            self._lost(f"it did not start: {exc}")
            return False
        if hello != b"ready":
            self._lost("it did not start")
            return False
        self._ready = True
        return True

    def _lost(self, why: str) -> None:
        self.broken = why
        log.warning("fork server lost (%s): supervisors start as fresh processes", why)
        with contextlib.suppress(OSError):
            self._sock.close()

    def close(self) -> None:
        """End the server (its EOF): it exits once no supervisor it forked lives."""
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(0.5)
            reaped(self.proc)


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


_server: ForkServer | None = None


def serve_here() -> ForkServer | None:
    """Start this process's fork server (Linux; call from the main thread: it dies with
    the thread that started it). None where there is no fork or it cannot start."""
    global _server
    if _server is None and sys.platform.startswith("linux"):
        try:
            _server = ForkServer()
        except SpawnFailed as exc:
            log.warning("no fork server: %s", exc.reason)
    return _server


def stop_serving() -> None:
    """End this process's fork server, if it has one (what it forked lives on)."""
    global _server
    if _server is not None:
        _server.close()
        _server = None


def launch(job: Request) -> int | None:
    """A supervisor forked by this process's fork server, or None (there is none, or it
    cannot now): start a fresh one."""
    return None if _server is None else _server.launch(job)


# --- the server's side ------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """`python -m specialists _forks`: import the supervisor, then fork one per request until
    the launcher closes its end, keeping each until it exits."""
    first = socket.socket(fileno=int(os.environ.pop(SOCK_ENV)))
    from specialists.base.lazy import Lazy
    from specialists.runners.registry import RUNNER_CLASSES

    _subreaper()
    runners = (module for module, _ in RUNNER_CLASSES.values())
    modules = ["specialists.supervise.detached", "specialists.supervise.main"]
    _import([*modules, "specialists.store.recovery", *runners, *sorted(Lazy.modules)])
    try:
        first.send(b"ready")
    except OSError:
        return 0  # its launcher died while it imported: nothing to serve or keep
    sock: socket.socket | None = first  # None once the launcher has closed its end
    learning: dict[int, bytes] = {}  # a child's pipe -> the module names it sent so far
    kept: dict[int, Path] = {}  # a supervisor forked here -> its job's directory
    exits: dict[int, int] = {}  # a pidfd, readable once its supervisor exits -> the pid
    while sock is not None or kept:
        _reap(kept)
        listening = [] if sock is None else [sock.fileno()]
        readable = _readable([*listening, *learning, *exits], 1.0)
        for fd in readable:
            if fd in learning:
                _learn(fd, learning)
            elif fd in exits:  # reaped by the next _reap
                del exits[fd]
                os.close(fd)
        if sock is None or sock.fileno() not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 8)
        except OSError:
            data, fds = b"", []
        if not data:  # the launcher is gone: the server only keeps what it forked
            sock.close()
            sock = None
            continue
        try:
            reply = _fork(sock, data, fds, learning)
        finally:
            for fd in fds:
                os.close(fd)
        pid = reply.get("pid")
        if isinstance(pid, int):
            kept[pid] = Path(json.loads(data)["dir"])
            if (pidfd := exit_fd(pid)) is not None:
                exits[pidfd] = pid
        try:
            sock.send(json.dumps(reply).encode())
        except OSError:
            sock.close()
            sock = None
    return 0


def _reap(kept: dict[int, Path]) -> None:
    """Reap every child that has exited (a subreaper inherits orphans); for a supervisor
    forked here, do what its keeper would."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        job_dir = kept.pop(pid, None)
        if job_dir is None:
            continue
        try:
            after(job_dir, pid, os.waitstatus_to_exitcode(status))
        except Exception:  # one job's trouble never ends the server
            log.exception("fork server: keeping job %s failed", job_dir.name)


def _subreaper() -> None:
    """Make the server the reaper of what its supervisors leave (their keeper)."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log.warning("fork server: not a subreaper: a dead supervisor's orphans go to init")


def _fork(
    sock: socket.socket, data: bytes, fds: list[int], learning: dict[int, bytes]
) -> dict[str, object]:
    """Fork a supervisor for the request `data`; the reply (its pid, or why not)."""
    try:
        request = json.loads(data)
        job_dir, cwd, env = Path(request["dir"]), str(request["cwd"]), dict(request["env"])
        extra = [str(x) for x in request["extra"]]
        runner, model = (str(x) for x in request["warm"])
        state = request["state"]
        inherited = (int(state["umask"]), set(state["ignored"]), set(state["blocked"]))
        lock_fd, log_fd, go_fd = fds
    except (ValueError, TypeError, KeyError) as exc:
        return {"error": f"a malformed request: {exc}"}
    _warm(runner, model)
    if threading.active_count() != 1:
        return {"error": "an import started a thread: forking is not safe here"}
    if not os.path.isdir(cwd):  # a fresh start says why, as it always did
        return {"error": f"no directory {cwd!r}"}
    tell_read, tell = os.pipe()
    known = frozenset(sys.modules)
    pid = os.fork()
    if pid != 0:
        os.close(tell)
        learning[tell_read] = b""
        return {"pid": pid}
    code = 1
    try:
        sock.close()
        for fd in (tell_read, *learning):
            os.close(fd)
        code = _child(job_dir, cwd, env, extra, inherited, (lock_fd, log_fd, go_fd, tell))
        _tell(tell, known)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        logging.getLogger("specialists.supervise").exception("the forked supervisor failed")
    finally:
        with contextlib.suppress(Exception):
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _child(
    job_dir: Path,
    cwd: str,
    env: dict[str, str],
    extra: list[str],
    inherited: tuple[int, set[int], set[int]],
    fds: tuple[int, ...],
) -> int:
    """In the forked child: wait for the launcher's go, become a fresh supervisor's equal
    (keeping only the job's lock and, closed on exec, the pipe that tells the server what
    it imported)."""
    lock_fd, log_fd, go_fd, tell = fds
    if os.read(go_fd, 1) != b"g":
        os._exit(0)  # the launcher never had our pid: a fresh supervisor runs the job
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    keep = sorted((lock_fd, tell))
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, _MAX_FD)
    os.chdir(cwd)
    umask, ignored, blocked = inherited
    os.umask(umask)
    _fresh_signals(ignored, blocked)
    os.environ.clear()
    os.environ.update(env)
    os.environ.pop(LOCK_FD_ENV, None)  # a fresh one takes it out of its environment too
    sys.argv = [sys.argv[0], "_supervise", str(job_dir), *extra]
    from specialists.supervise.main import supervise

    return supervise([str(job_dir), *extra], str(lock_fd))


def _fresh_signals(ignored: set[int], blocked: set[int]) -> None:
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


def _tell(fd: int, known: frozenset[str]) -> None:
    """Send the server the modules this supervisor (or keeper) imported that it lacks."""
    names = "\n".join(m for m in sys.modules if m not in known).encode()[:_MAX_TELL]
    with contextlib.suppress(OSError):
        os.write(fd, names)


def _learn(fd: int, learning: dict[int, bytes]) -> None:
    """Read a child's modules; once it has closed its pipe, import them here, so every
    child forked after it starts with them."""
    try:
        chunk = os.read(fd, _MAX_TELL)
    except OSError:
        chunk = b""
    if chunk:
        learning[fd] = (learning[fd] + chunk)[:_MAX_TELL]
        return
    os.close(fd)
    _import([n for n in learning.pop(fd).decode(errors="replace").split("\n") if n])


def _warm(runner: str, model: str) -> None:
    """Import a native job's SDK (and make its TLS context) here, once, so that every
    later child shares it."""
    from specialists.native.providers.registry import BUILTINS

    provider = BUILTINS.get(model.partition("/")[0]) if runner == "native" else None
    if provider is None or provider.api == "replay":
        return
    sdk = _SDKS.get(provider.api, "openai")
    if sdk not in sys.modules and _import([sdk]):
        from specialists.native.providers.common import tls_context

        tls_context()
        _freeze()


def _import(names: list[str]) -> bool:
    """Import `names` that are not yet (a module only a live job can import is skipped),
    then freeze: whether any was new."""
    fresh = [n for n in names if n not in sys.modules and "__main__" not in n]
    for name in fresh:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - whatever a module raises, it is skipped
            log.debug("fork server: %s not imported: %s", name, exc)
    if fresh:
        _freeze()
    return bool(fresh)


def _freeze() -> None:
    """Move every object so far out of the collector's sight: a collection in a child then
    never writes to (and so never copies) the pages it shares with us."""
    gc.collect()
    gc.freeze()


def _readable(fds: list[int], timeout: float) -> list[int]:
    """Those of `fds` with something to read or at their end (poll: no FD_SETSIZE limit)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(timeout * 1000)]
