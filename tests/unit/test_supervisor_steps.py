"""StepGuard: failing steps are reported once; a signal cuts a step that keeps it waiting.

These use the process's real signals (pytest runs each test in the main thread), and check
that the guard gives back a timer that was running before it (pytest-timeout's own).
"""

from __future__ import annotations

import os
import signal
import threading
import time

from specialists.supervise.steps import MAX_REPORTED, SIGNAL_RESPONSE_S, StepGuard


def test_a_failure_is_reported_once_and_then_only_logged() -> None:
    seen: list[str] = []
    guard = StepGuard(seen.append, enabled=False)

    def fail() -> None:
        raise ValueError("bad line")

    assert [guard.run("inbox", fail) for _ in range(50)] == [False] * 50
    assert seen == ["inbox failed: ValueError: bad line"]
    for i in range(MAX_REPORTED * 2):
        guard.run("request", lambda i=i: int(f"x{i}"))  # distinct failures
    assert len(seen) == MAX_REPORTED  # bounded: the log keeps the rest


def test_a_notice_that_cannot_be_written_does_not_raise() -> None:
    def no_disk(message: str) -> None:
        raise OSError(28, "No space left on device")

    assert StepGuard(no_disk, enabled=False).run("x", lambda: 1 / 0) is False


def _sigterm_soon(delay: float = 0.05) -> threading.Thread:
    thread = threading.Thread(
        target=lambda: (time.sleep(delay), os.kill(os.getpid(), signal.SIGTERM))
    )
    thread.start()
    return thread


def test_sigterm_cuts_a_step_stuck_in_a_blocking_call() -> None:
    seen: list[str] = []
    guard = StepGuard(seen.append)
    before = signal.getitimer(signal.ITIMER_REAL)
    guard.install()
    try:
        thread = _sigterm_soon()
        started = time.monotonic()
        assert guard.run("inbox", lambda: time.sleep(60)) is True  # cut, not failed
        took = time.monotonic() - started
        thread.join()
    finally:
        guard.uninstall()
    assert guard.signal == signal.SIGTERM
    assert seen == ["inbox interrupted by SIGTERM"]
    assert SIGNAL_RESPONSE_S <= took < 30
    after = signal.getitimer(signal.ITIMER_REAL)
    if before[0]:  # pytest-timeout's timer survives, less the time spent
        assert 0 < after[0] <= before[0]


def test_code_marked_not_interruptible_is_never_cut() -> None:
    """Real time by necessity: the code must still be running when the real alarm fires."""
    guard = StepGuard(lambda _m: None)
    guard.install()
    try:
        thread = _sigterm_soon()
        with guard.interruptible(allowed=False):
            deadline = time.monotonic() + SIGNAL_RESPONSE_S + 0.5
            while time.monotonic() < deadline:  # busy, past the alarm
                time.sleep(0.01)
        thread.join()
        guard.answered()  # the loop acts on the signal; no alarm is left to fire
    finally:
        guard.uninstall()
    assert guard.signal == signal.SIGTERM


def test_an_alarm_that_is_not_the_guards_goes_to_the_handler_before_it() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, _frame: fired.append(signum))
    try:
        guard = StepGuard(lambda _m: None)
        guard.install()
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            deadline = time.monotonic() + 30
            while not fired and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            guard.uninstall()
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert fired == [signal.SIGALRM]


def test_a_disabled_guard_leaves_signals_alone() -> None:
    """In-process supervisors off the main thread (the MCP server's) own no signals."""
    handler = signal.getsignal(signal.SIGTERM)
    guard = StepGuard(lambda _m: None, enabled=False)
    guard.install()
    assert signal.getsignal(signal.SIGTERM) is handler
    guard.uninstall()
