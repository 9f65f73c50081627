"""Helpers for tests that start processes meant to die: track them, wait for their death."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from specialists.store.proctree import MARK_ENV, identify


@contextmanager
def killed_after() -> Iterator[list[int]]:
    """Yields a list to put pids in; whatever of them still lives at the end is SIGKILLed."""
    pids: list[int] = []
    try:
        yield pids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue


def alive(pid: int) -> bool:
    """The process runs (a zombie is dead)."""
    return identify(pid) is not None


def wait_dead(pid: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} survived"
        time.sleep(0.02)


def left_behind(roots: list[str]) -> dict[int, str]:
    """Processes (not this one nor its ancestors) that belong to a test's directories: a job's
    (its mark, SPECIALISTS_JOB_DIR, under a root) or one whose command line names a path under
    a root. Each with its command line."""
    roots = [os.path.realpath(r) + os.sep for r in roots]
    ours = _ancestors(os.getpid())
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in ours:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:  # gone, or not ours to read
            continue
        marks = [e[len(MARK_ENV) + 1 :].decode(errors="replace") for e in env
                 if e.startswith(MARK_ENV.encode() + b"=")]  # fmt: skip
        named = [a for a in argv if "/" in a] + [m + os.sep for m in marks]
        if any(a.startswith(r) for a in named for r in roots) and alive(int(name)):
            found[int(name)] = " ".join(argv)[:200]
    return found


def end_left_behind(roots: list[str], grace: float = 5.0) -> dict[int, str]:
    """Stop what a test left running under `roots`: SIGTERM (a supervisor ends its job), then
    SIGKILL what outlives `grace`. Returns what was found."""
    found = left_behind(roots)
    for pid in found:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in found):
        time.sleep(0.05)
    for pid in [*found, *left_behind(roots)]:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return found


def _ancestors(pid: int) -> set[int]:
    seen = {pid}
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            break
        pid = int(text[text.rfind(")") + 2 :].split()[1])
        seen.add(pid)
    return seen
