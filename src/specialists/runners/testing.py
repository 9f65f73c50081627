"""A scripted in-memory runner, for testing supervisors and interfaces without processes.

Script a run as a list of steps: runner events to emit (one `poll` each), a number of seconds
to stay quiet, or a `Call` to make at that point (e.g. post a control request, so a test needs
no second thread). Time is the clock you pass, the supervisor's own: with a `FakeClock` a
30-second wait costs nothing and happens exactly when the script says. Every command the
runner was sent is kept, in order, in `commands`.

What the runner accepts follows its state, like a real one: `while_running` while a run is
going (the default is pi's: everything), `between_runs` after an answer (the default: a
follow-up, a steer that starts a run, or a close), only the always-accepted ones once closed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, assert_never

from specialists.base.clock import SleepingClock, SystemClock
from specialists.base.errors import AgentUnavailable
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    Command,
    CommandKind,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    not_accepted,
)


@dataclass(frozen=True)
class Call:
    """A script step that calls `fn` when the script reaches it (it emits nothing)."""

    fn: Callable[[], object]
    kind: Literal["call"] = "call"


Step = RunnerEvent | float | Call

_KINDS = frozenset[CommandKind]
STEERABLE: _KINDS = ALWAYS_ACCEPTED | _KINDS({"follow_up", "steer", "abort"})
ONE_SHOT_RUNNING: _KINDS = ALWAYS_ACCEPTED | _KINDS({"abort"})
ONE_SHOT_BETWEEN_RUNS: _KINDS = ALWAYS_ACCEPTED | _KINDS({"follow_up"})


class ScriptedRunner:
    name = "scripted"

    def __init__(
        self,
        script: Sequence[Step] = (),
        *,
        follow_up_script: Sequence[Step] = (),
        while_running: frozenset[CommandKind] = STEERABLE,
        between_runs: frozenset[CommandKind] = STEERABLE,
        unavailable: str | None = None,
        exits_on_close: bool = True,
        clock: SleepingClock | None = None,
    ) -> None:
        self._steps: deque[Step] = deque(script)
        self._follow_up_script = list(follow_up_script)
        self._while_running = while_running | ALWAYS_ACCEPTED
        self._between_runs = between_runs | ALWAYS_ACCEPTED
        self._unavailable = unavailable
        self._exits_on_close = exits_on_close
        self._clock = clock or SystemClock()
        self._wait_until = 0.0
        self.commands: list[Command] = []
        self.spec: LaunchSpec | None = None
        self.alive = False
        self.running = False  # a run is going (between start/follow-up and its RunFinished)
        self.closed = False
        self._acks: list[RunnerEvent] = []  # the agent's acknowledgement of each steer

    def start(self, spec: LaunchSpec) -> None:
        if self._unavailable:
            raise AgentUnavailable(self._unavailable)
        self.spec = spec
        self.alive = self.running = True

    @property
    def handle(self) -> AgentHandle:
        return AgentHandle(session_ref="scripted-session")

    def accepts(self) -> frozenset[CommandKind]:
        if self.closed or not self.alive:
            return ALWAYS_ACCEPTED
        return self._while_running if self.running else self._between_runs

    def poll(self, timeout: float) -> list[RunnerEvent]:
        if self._acks:  # acknowledged at once, as pi and the native loop do between steps
            acks, self._acks = self._acks, []
            return acks
        now = self._clock()
        if now < self._wait_until:
            self._clock.sleep(min(timeout, self._wait_until - now))
            return []
        while self._steps:
            step = self._steps.popleft()
            if isinstance(step, Call):
                step.fn()
                continue
            if isinstance(step, float | int):
                self._wait_until = self._clock() + float(step)
                return []
            if isinstance(step, RunFinished):
                self.running = False
            elif isinstance(step, AgentExited):
                self.alive = self.running = False
            return [step]
        self._clock.sleep(timeout)
        return []

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        self.commands.append(command)
        if command.kind == "follow_up":
            self.running = True
            self._steps.extend(
                self._follow_up_script or [RunFinished(text=f"re: {command.message}")]
            )
        elif command.kind == "steer":
            # Recorded and acknowledged; the script says what the agent does with it.
            self._acks.append(Activity("steer_ack", {"message": command.message[:80]}))
        elif command.kind == "abort":
            self._replace_rest([RunFinished(text="", error="aborted")])
        elif command.kind == "close":
            self.closed = True
            if self.alive and self._exits_on_close:
                self._steps.append(AgentExited(0))
        elif command.kind == "terminate":
            self.closed = True
            if self.alive:
                self._replace_rest([AgentExited(None, signal=15)])
        elif command.kind == "kill":
            self.closed = True
            if self.alive:
                self._replace_rest([AgentExited(None, signal=9)])
                self.alive = False
        else:
            assert_never(command)

    # for tests ------------------------------------------------------------------------------

    def extend(self, steps: Iterable[Step]) -> None:
        self._steps.extend(steps)

    def sent(self, kind: CommandKind) -> list[Command]:
        """The commands of one kind this runner was sent, in order."""
        return [c for c in self.commands if c.kind == kind]

    def _replace_rest(self, steps: list[Step]) -> None:
        self._steps.clear()
        self._wait_until = 0.0
        self._steps.extend(steps)
