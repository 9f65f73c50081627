"""A `Children` fake for the runtime's tests: no processes, answers chosen by a function.

`FakeChildren(answer)` runs each launched child on the event loop: `answer(launch)` gives
its Outcome (or a string: a finished child with that output), and the child stays running
for `polls` looks before it ends. `launches` records every Launch with its job id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specialists.base.errors import UserError
from specialists.features.workflows.options import ChildOptions, KeyedResume, Resume
from specialists.features.workflows.results import Launch, Outcome

Answer = Callable[[Launch], Outcome | str]


@dataclass
class FakeChildren:
    answer: Answer = lambda launch: f"answer to {launch.prompt}"
    polls: int = 0
    sessions: bool = False  # every ended child keeps a session (can be continued)
    launches: list[tuple[str, Launch]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    gate: Callable[[object], bool] = lambda command: True
    receipts: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    retained: dict[str, str] = field(default_factory=dict)  # resumable job id -> its agent
    _left: dict[str, int] = field(default_factory=dict)
    _outcomes: dict[str, Outcome] = field(default_factory=dict)

    def launch(self, launch: Launch, on_created: Callable[[str, str], None]) -> str:
        job_id = f"{len(self.launches) + 1:08x}"
        on_created(job_id, "continued" if launch.continue_from else launch.options.context)
        self.launches.append((job_id, launch))
        got = self.answer(launch)
        self._outcomes[job_id] = Outcome("done", got) if isinstance(got, str) else got
        self._left[job_id] = self.polls
        return job_id

    def outcome(self, job_id: str) -> Outcome | None:
        if job_id in self.stopped:
            return Outcome("cancelled", "", "stopped")
        left = self._left.get(job_id, 0)
        if left > 0:
            self._left[job_id] = left - 1
            return None
        return self._outcomes.get(job_id)

    def spent(self, job_id: str) -> dict[str, Any] | None:
        """An ended child's tokens (as input), once `outcome` said how it ended."""
        o = self._outcomes.get(job_id)
        if o is None or self._left.get(job_id, 0) > 0:
            return None
        tokens = {"input": o.tokens, "output": 0, "cache_read": 0, "cache_write": 0}
        return {"tokens": tokens, "cost_usd": 0.0, "jobs": 1}

    def stop(self, job_id: str) -> None:
        self.stopped.append(job_id)

    def can_continue(self, job_id: str) -> bool:
        return self.sessions

    def keyed_resume(self, resume: Resume) -> tuple[str, str]:
        if not isinstance(resume, KeyedResume):
            if resume.job not in self.retained:
                raise UserError(f"job {resume.job} is not resumable")
            return resume.job, self.retained[resume.job]
        found = self.receipts.get((resume.workflow, resume.key))
        if found is None:
            raise UserError(f"workflow {resume.workflow} has no key {resume.key!r}")
        return found

    def read_output(self, job_id: str) -> str | None:
        o = self._outcomes.get(job_id)
        return o.output if o else None

    def finish(
        self, job_id: str, options: ChildOptions, outcome: Outcome
    ) -> tuple[Outcome, Mapping[str, Any] | None]:
        if options.gate is not None and outcome.status == "done":
            passed = self.gate(options.gate)
            detail = {"kind": "accepted" if passed else "rejected"}
            if not passed:
                return Outcome("error", outcome.output, f"gate `{options.gate}` failed"), detail
            return outcome, detail
        return outcome, None

    @property
    def keys(self) -> list[str]:
        return [launch.options.key for _, launch in self.launches]
