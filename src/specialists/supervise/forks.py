"""The fork server: detached supervisors forked from a process that has their imports.

A supervisor started as `python -m specialists _supervise <job_dir>` pays a fresh
interpreter and its imports (and a native job the model SDK's) before it supervises; a
process that starts many jobs (the workflow engine) starts one fork server instead
(`python -m specialists _forks`, its child), which imports the supervisor once
(fork_imports.py) and forks one per job. Forked supervisors skip that CPU and share those
pages (lower PSS). A launcher without one asks its project's shared server (`_forks
--shared`, shared_forks.py), this same loop listening on a Unix socket besides.

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
import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from specialists.process.spawn import SpawnFailed, exit_fd, reaped, spawn
from specialists.store.proctree import MARK_ENV
from specialists.supervise import shared_forks
from specialists.supervise.argv import LOCK_FD_ENV
from specialists.supervise.fork_imports import import_fresh, learn_modules, tell_modules, warm
from specialists.supervise.keeper import LOG_FORMAT, after
from specialists.supervise.shared_forks import MAX_REQUEST, REPLY_S, Lost, Request, ask

log = logging.getLogger("specialists.forks")

SOCK_ENV = "SPECIALISTS_FORKS_FD"  # the server's end of the socket pair, a descriptor number
READY_S = 60.0  # how long a launch waits for the server's imports, then gives up on it
_MAX_FD = 65536
_PR_SET_CHILD_SUBREAPER = 36


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
        with self._lock:
            if self.broken is not None or not self._wait_ready():
                return None
            try:
                answer = ask(self._sock, job, REPLY_S)
            except Lost as exc:
                self._lost(str(exc))
                return None
        if isinstance(answer, str):
            log.warning("fork server: %s", answer)
            return None
        return answer

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


def serving() -> bool:
    """Whether this process has a fork server (`serve_here`) or is one (`main`)."""
    return _server is not None or _here is not None


def launch(job: Request) -> int | None:
    """A supervisor forked by this process's fork server, or by this process when it is one,
    or None (there is none, or it cannot now): start a fresh one."""
    if _here is not None:
        return _here.launch(job)
    return None if _server is None else _server.launch(job)


# --- the server's side ------------------------------------------------------------------


class _ForkHere:
    """A fork server's own launches (its keeper reviving a job: store/recovery.py), forked
    at once. Asked of its own socket, a launch would wait for an answer the server cannot
    give while it waits (SHARED_REPLY_S, every other launcher with it), then start fresh."""

    def __init__(
        self,
        kept: dict[int, Path],
        exits: dict[int, int],
        learning: dict[int, bytes],
        shut: Callable[[], None],
    ) -> None:
        self.kept, self.exits, self.learning, self.shut = kept, exits, learning, shut

    def launch(self, job: Request) -> int | None:
        data = shared_forks.request_data(job)
        if isinstance(data, str):
            log.warning("fork server: %s: a fresh supervisor starts", data)
            return None
        go_read, go_write = os.pipe()

        def shut() -> None:  # in the child: nor the go's write end, or its wait never ends
            self.shut()
            os.close(go_write)

        try:
            try:
                reply = _fork(data, [job.lock_fd, job.log_fd, go_read], self.learning, shut)
            finally:
                os.close(go_read)
            pid = reply.get("pid")
            if not isinstance(pid, int):
                log.warning("fork server: %s: a fresh supervisor starts", reply.get("error"))
                return None
            _keep(pid, job.dir, self.kept, self.exits)
            try:
                os.write(go_write, b"g")
            except OSError:  # the fork died before its go: it never supervised
                log.warning("fork server: the fork died before its go: a fresh one starts")
                return None
            return pid
        finally:
            os.close(go_write)


_here: _ForkHere | None = None  # in a fork server (`main`): its own launches


def main(argv: list[str]) -> int:
    """`python -m specialists _forks`: import the supervisor, then fork one per request until
    the launcher closes its end, keeping each until it exits. With `--shared RUN_FD NAME
    ROOT` (shared_forks.py): the project's shared server, holding the lock on the directory
    RUN_FD and listening at NAME in it until it keeps nothing and has been idle."""
    shared = argv[1:3] if argv[:1] == ["--shared"] and len(argv) == 4 else None
    if shared is None:
        first: socket.socket | None = socket.socket(fileno=int(os.environ.pop(SOCK_ENV)))
    else:
        first = None
    from specialists.base.lazy import Lazy
    from specialists.runners.registry import RUNNER_CLASSES

    # Its lines on its stderr (a shared server's: run/forks.log), as a keeper's on
    # supervisor.log: with no handler, logging would show its warnings bare and drop the rest.
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    _subreaper()
    listener = own = None
    if shared is not None:  # listening before the imports: a launch meanwhile waits for them
        run_fd, name = int(shared[0]), shared[1]  # (a second or so) instead of starting fresh
        try:
            listener = shared_forks.listen(run_fd, name)
        except OSError as exc:
            log.warning("shared fork server: cannot listen: %s", exc)
            return 0
        own = shared_forks.confinement(Path("/proc/self"))
    runners = (module for module, _ in RUNNER_CLASSES.values())
    modules = ["specialists.supervise.detached", "specialists.supervise.main"]
    import_fresh([*modules, "specialists.store.recovery", *runners, *sorted(Lazy.modules)])
    if first is not None:
        try:
            first.send(b"ready")
        except OSError:
            return 0  # its launcher died while it imported: nothing to serve or keep
    idle_s = shared_forks.idle_seconds()
    idle_since = time.monotonic()
    sock = first  # None once the launcher has closed its end
    conns: dict[int, socket.socket] = {}  # a shared server's launchers, accepted
    learning: dict[int, bytes] = {}  # a child's pipe -> the module names it sent so far
    kept: dict[int, Path] = {}  # a supervisor forked here -> its job's directory
    exits: dict[int, int] = {}  # a pidfd, readable once its supervisor exits -> the pid

    def shut() -> None:  # in a forked child: nothing of the server's
        for s in (sock, listener, *conns.values()):
            if s is not None:
                s.close()
        if shared is not None:
            with contextlib.suppress(OSError):
                os.close(int(shared[0]))  # the run directory, and its lock

    global _here
    _here = _ForkHere(kept, exits, learning, shut)
    while sock is not None or listener is not None or kept:
        _reap(kept)
        if kept:
            idle_since = time.monotonic()
        elif listener is not None and time.monotonic() - idle_since >= idle_s:
            shared_forks.unlisten(listener, run_fd, name)  # done: no launcher reaches it now
            listener = None
            for conn in conns.values():
                conn.close()
            conns.clear()
            continue
        listening = [s.fileno() for s in (sock, listener) if s is not None]
        readable = _readable([*listening, *conns, *learning, *exits], 1.0)
        for fd in readable:
            if fd in learning:
                learn_modules(fd, learning)
            elif fd in exits:  # reaped by the next _reap
                del exits[fd]
                os.close(fd)
        asking = [fd for fd in readable if fd in conns]  # before a new one takes a closed fd
        if listener is not None and own is not None and listener.fileno() in readable:
            idle_since = time.monotonic()
            _accept(listener, own, conns)
        for fd in asking:
            with conns.pop(fd) as conn:
                _answer(conn, kept, exits, learning, shut)
        if (
            sock is not None
            and sock.fileno() in readable
            and not _answer(sock, kept, exits, learning, shut)
        ):
            sock.close()  # the launcher is gone: the server only keeps what it forked
            sock = None
    return 0


def _accept(
    listener: socket.socket, own: dict[str, object], conns: dict[int, socket.socket]
) -> None:
    """Take a shared server's launcher in, unless it may not be served (then it starts
    a fresh supervisor)."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return  # it gave up meanwhile
    try:
        conn.settimeout(REPLY_S)
        why = shared_forks.refusal(conn, own)
    except OSError as exc:
        why = f"its launcher is unknown: {exc}"
    if why is None:
        conns[conn.fileno()] = conn
        return
    log.info("shared fork server: refused %s", why)
    with conn, contextlib.suppress(OSError):
        conn.send(json.dumps({"error": f"refused {why}"}).encode())


def _answer(
    conn: socket.socket,
    kept: dict[int, Path],
    exits: dict[int, int],
    learning: dict[int, bytes],
    shut: Callable[[], None],
) -> bool:
    """Fork what the launch request waiting on `conn` asks for and answer it; whether the
    launcher can still be answered."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 8)
    except OSError:
        data, fds = b"", []
    try:
        if not data:
            return False
        reply = _fork(data, fds, learning, shut)
    finally:
        for fd in fds:
            os.close(fd)
    pid = reply.get("pid")
    if isinstance(pid, int):
        _keep(pid, Path(json.loads(data)["dir"]), kept, exits)
    try:
        conn.send(json.dumps(reply).encode())
    except OSError:
        return False
    return True


def _keep(pid: int, job_dir: Path, kept: dict[int, Path], exits: dict[int, int]) -> None:
    """Keep the supervisor `pid` forked here: its exit wakes the server, which reaps it."""
    kept[pid] = job_dir
    if (pidfd := exit_fd(pid)) is not None:
        exits[pidfd] = pid


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
    data: bytes, fds: list[int], learning: dict[int, bytes], shut: Callable[[], None]
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
    warm(runner, model)
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
        shut()
        for fd in (tell_read, *learning):
            os.close(fd)
        code = _child(job_dir, cwd, env, extra, inherited, (lock_fd, log_fd, go_fd, tell))
        tell_modules(tell, known)
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
    shared_forks.fresh_signals(ignored, blocked)
    os.environ.clear()
    os.environ.update(env)
    os.environ.pop(LOCK_FD_ENV, None)  # a fresh one takes it out of its environment too
    logging.root.handlers.clear()  # the server's: the supervisor sets up its own, as a fresh one
    global _here
    _here = None  # a job it revives is the shared server's to fork, as a fresh one's is
    sys.argv = [sys.argv[0], "_supervise", str(job_dir), *extra]
    from specialists.supervise.main import supervise

    return supervise([str(job_dir), *extra], str(lock_fd))


def _readable(fds: list[int], timeout: float) -> list[int]:
    """Those of `fds` with something to read or at their end (poll: no FD_SETSIZE limit)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(timeout * 1000)]
