"""The one place that starts a process: agents, short commands, the native bash tool.

Every child starts in a new session (its own process group, no controlling terminal): a stop
or a timeout signals the whole group, and a terminal's Ctrl-C never reaches it. An agent can
also ask to die with the thread that started it (PR_SET_PDEATHSIG).

Children started here are registered until their Popen has reaped them. A supervisor that
adopts orphans (see jobs/proctree.py) reaps only processes that are not registered, so it
never takes the exit status a Popen object is still waiting for.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

# After a process has exited, how long a reader keeps taking output from its pipes. All the
# process wrote is in the pipe by then, so reading stops as soon as nothing more is there; the
# limit only bounds a descendant that inherited the pipe and keeps writing.
DRAIN_LIMIT_S = 1.0
_PR_SET_PDEATHSIG = 1
_lock = threading.Lock()
_live: set[int] = set()  # pids started here whose Popen has not reaped them yet


MISSING = "not installed or not on PATH"  # the reason a missing executable is given


class SpawnFailed(Exception):
    """The process could not be started; `reason` says why in a few words."""

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing  # the executable itself does not exist


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    # The C library is already loaded into this process: no find_library (which runs
    # `ldconfig -p` in a subprocess, tens of milliseconds).
    return ctypes.CDLL(None, use_errno=True).prctl


# Looked up once here: the child runs only the call, never the library loader, between fork
# and exec (a parent with threads must not take locks in that window).
_prctl = _load_prctl()


def _die_with_parent() -> None:
    """preexec hook: SIGKILL this child when the thread that spawned it ends."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: int | IO[bytes],
    stdout: int | IO[bytes],
    stderr: int | IO[bytes],
    die_with_parent: bool = False,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start `argv` in a new session; SpawnFailed (with the reason) if it cannot start.
    `pass_fds`: descriptors the child keeps (every other one is closed)."""
    args = list(argv)
    try:
        with _lock:
            proc = subprocess.Popen(
                args,
                cwd=None if cwd is None else str(cwd),
                env=None if env is None else dict(env),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=_die_with_parent if die_with_parent else None,
                pass_fds=tuple(pass_fds),
            )
            _live.add(proc.pid)
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == str(cwd):
            raise SpawnFailed(f"its working directory {str(cwd)!r} does not exist") from exc
        raise SpawnFailed(MISSING, missing=True) from exc
    except PermissionError as exc:
        raise SpawnFailed("not executable (a directory, a special file, or no x bit)") from exc
    except ValueError as exc:  # "embedded null byte"
        raise SpawnFailed(f"cannot be started: {exc}") from exc
    except OSError as exc:
        raise SpawnFailed(f"cannot be started: {exc.strerror or exc}") from exc
    return proc


def reaped(proc: subprocess.Popen[bytes]) -> None:
    """Call once `proc.returncode` is set: its pid may name another process from now on."""
    with _lock:
        _live.discard(proc.pid)


@contextmanager
def spawns_paused() -> Iterator[frozenset[int]]:
    """Hold off every spawn; yields the pids still owned by a Popen (not to be reaped)."""
    with _lock:
        yield frozenset(_live)


def exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits (a pidfd, Linux >= 5.3), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def exit_status(returncode: int | None) -> tuple[int | None, int | None]:
    """Popen returncode -> (exit_code, signal)."""
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    return returncode, None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
