"""A scripted in-memory Runner, for testing supervisors and interfaces without processes.

Script a run as a list of steps: runner events to emit (one `poll` each) or a float to wait
that many seconds of the supervisor's clock-free time (polls return nothing meanwhile).
Everything the supervisor asked for is recorded in `calls`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence

from specialists.errors import AgentUnavailable
from specialists.runners.base import AgentExited, LaunchSpec, RunFinished, RunnerEvent

Step = RunnerEvent | float


class ScriptedRunner:
    name = "scripted"

    def __init__(
        self,
        script: Sequence[Step] = (),
        *,
        follow_up_script: Sequence[Step] = (),
        steerable: bool = True,
        unavailable: str | None = None,
        exits_on_close: bool = True,
    ) -> None:
        self._steps: deque[Step] = deque(script)
        self._follow_up_script = list(follow_up_script)
        self._steerable = steerable
        self._unavailable = unavailable
        self._exits_on_close = exits_on_close
        self._wait_until = 0.0
        self.calls: list[tuple[str, str]] = []
        self.spec: LaunchSpec | None = None
        self.alive = False

    # Runner protocol -----------------------------------------------------------------------

    def start(self, spec: LaunchSpec) -> None:
        if self._unavailable:
            raise AgentUnavailable(self._unavailable)
        self.spec = spec
        self.alive = True
        self.calls.append(("start", spec.prompt))

    @property
    def pid(self) -> int | None:
        return None

    @property
    def session_ref(self) -> str | None:
        return "scripted-session"

    @property
    def supports_steer(self) -> bool:
        return self._steerable

    def poll(self, timeout: float) -> list[RunnerEvent]:
        now = time.monotonic()
        if now < self._wait_until:
            time.sleep(min(timeout, self._wait_until - now))
            return []
        while self._steps:
            step = self._steps.popleft()
            if isinstance(step, float | int):
                self._wait_until = time.monotonic() + float(step)
                return []
            if isinstance(step, AgentExited):
                self.alive = False
            return [step]
        time.sleep(min(timeout, 0.01))
        return []

    def follow_up(self, message: str) -> None:
        self.calls.append(("follow_up", message))
        self._steps.extend(self._follow_up_script or [RunFinished(text=f"re: {message}")])

    def steer(self, message: str) -> None:
        self.calls.append(("steer", message))

    def abort(self) -> None:
        self.calls.append(("abort", ""))
        self._steps.clear()
        self._wait_until = 0.0
        self._steps.append(RunFinished(text="", error="aborted"))

    def close(self) -> None:
        self.calls.append(("close", ""))
        if self.alive and self._exits_on_close:
            self._steps.append(AgentExited(0))

    def terminate(self) -> None:
        self.calls.append(("terminate", ""))
        if self.alive:
            self._steps.clear()
            self._wait_until = 0.0
            self._steps.append(AgentExited(None, signal=15))

    def kill(self) -> None:
        self.calls.append(("kill", ""))
        if self.alive:
            self._steps.clear()
            self._wait_until = 0.0
            self._steps.append(AgentExited(None, signal=9))
            self.alive = False

    def extend(self, steps: Iterable[Step]) -> None:
        self._steps.extend(steps)
