"""Helpers for tests that start processes meant to die: track them, wait for their death."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

from specialists.store.proctree import identify


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
