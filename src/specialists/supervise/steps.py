"""Steps that cannot kill the supervisor's loop, and signals that reach a stuck one.

`StepGuard.run(name, fn)` runs one step. An exception is logged with its traceback and
reported as a `notice` event (the same failure again is only logged, so a step failing on
every tick cannot flood events.jsonl); the caller learns False and decides what follows (a
broken runner ends the job).

SIGTERM and SIGINT set `signal`; the loop acts on it at its next step. A step stuck in a
blocking call (a script, a special file planted in the job directory) would never get
there, so the signal also arms a timer: when the loop has not answered within
SIGNAL_RESPONSE_S, the alarm raises `StepInterrupted` inside the stuck step. Only code marked
`interruptible` is cut that way (every step is; writing the final status is not). The timer
is the process's ITIMER_REAL: one that was running before (a host's, pytest-timeout's) is
passed its alarms and given back, less the time spent, when the guard is uninstalled.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from specialists.base.lazy import logger
from specialists.store.files import is_out_of_space

log = logger("specialists.supervisor")

SIGNAL_RESPONSE_S = 1.0  # how long a signal may wait for the loop before a step is cut
_RECHECK_S = 0.2  # the alarm came at a point that may not be cut: look again this soon
MAX_REPORTED = 20  # distinct step failures reported as events; later ones only logged


def signal_name(number: int | None) -> str:
    if number is None:
        return "a signal"
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class StepInterrupted(BaseException):
    """Raised by the alarm inside a step that kept a signal waiting.

    A BaseException, like KeyboardInterrupt: code that catches Exception lets it through.
    """


class StepGuard:
    def __init__(self, notice: Callable[[str], None], *, enabled: bool = True) -> None:
        """`notice(message)` records one event; `enabled`: own the process's signals."""
        self.signal: int | None = None
        self._notice = notice
        self._enabled = enabled
        self._reported: set[str] = set()
        self._interruptible = False
        self._answered = False
        self._previous: dict[int, Any] = {}
        self._on_second_interrupt: Callable[[], object] | None = None
        self._timer_before: tuple[float, float] = (0.0, 0.0)
        self._installed_at = 0.0
        self._took_timer = False
        self.last_failure: Exception | None = None  # what the last failed step raised

    # --- signals ------------------------------------------------------------------------

    def install(self, *, on_second_interrupt: Callable[[], object] | None = None) -> None:
        if not self._enabled:
            return
        self._on_second_interrupt = on_second_interrupt
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        self._previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
        self._timer_before = signal.getitimer(signal.ITIMER_REAL)
        self._installed_at = time.monotonic()

    def uninstall(self) -> None:
        if not self._enabled:
            return
        if self._took_timer:  # give the timer that ran before back, less the time spent
            delay, interval = self._timer_before
            left = delay - (time.monotonic() - self._installed_at) if delay else 0.0
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001) if delay else 0.0, interval)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def answered(self) -> None:
        """The loop has acted on the signal (an ending is under way): no alarm needed."""
        if self.signal is not None and not self._answered:
            self._answered = True
            if self._took_timer:
                signal.setitimer(signal.ITIMER_REAL, 0)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.signal is not None and signum == signal.SIGINT and self._on_second_interrupt:
            self._on_second_interrupt()  # a second Ctrl-C: no more patience
        self.signal = signum
        if not self._answered:
            self._took_timer = True
            signal.setitimer(signal.ITIMER_REAL, SIGNAL_RESPONSE_S)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self._answered or self.signal is None:  # not ours: pass it on
            previous = self._previous.get(signal.SIGALRM)
            if callable(previous):
                previous(signum, frame)
            return
        if self._interruptible:
            raise StepInterrupted(f"{signal_name(self.signal)} waited too long for a step")
        signal.setitimer(signal.ITIMER_REAL, _RECHECK_S)

    @contextmanager
    def interruptible(self, *, allowed: bool = True) -> Iterator[None]:
        """Mark the code inside as one the alarm may cut (or, allowed=False, may not)."""
        previous = self._interruptible
        self._interruptible = allowed
        try:
            yield
        finally:
            self._interruptible = previous

    # --- steps --------------------------------------------------------------------------

    def run(self, name: str, fn: Callable[[], object]) -> bool:
        """Run one step; False when it raised (reported). An interrupted step counts as run."""
        try:
            with self.interruptible():
                fn()
        except StepInterrupted:
            self.report(f"{name} interrupted by {signal_name(self.signal)}")
        except Exception as exc:
            self.last_failure = exc
            message = f"{name} failed: {type(exc).__name__}: {exc}"[:500]
            if message in self._reported:
                log.debug("supervisor step %r failed again: %s", name, exc)
            elif is_out_of_space(exc):  # not a bug: one line, no traceback in the foreground
                log.warning("supervisor step %r: %s", name, exc)
            else:
                log.exception("supervisor step %r failed", name)
            self.report(message)
            return False
        return True

    def report(self, message: str) -> None:
        message = message[:500]
        if message in self._reported:
            return
        if len(self._reported) >= MAX_REPORTED:
            log.warning("not reported as an event (too many distinct failures): %s", message)
            return
        self._reported.add(message)
        try:
            self._notice(message)
        except Exception:  # events.jsonl itself failing: the log is all that is left
            log.exception("could not record the notice %r", message)
