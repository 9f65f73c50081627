"""What a supervisor keeps between runs that status.json does not: the answers so far, the
follow-ups it holds, the steers not yet acknowledged, what it waits for. A takeover checkpoint
carries it to a successor (checkpoint.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from specialists.supervise import wake


class JobState:
    """The supervisor's own state between runs (status.json holds the rest); a checkpoint
    carries it to a successor."""

    __slots__ = (
        "answers", "delivery", "held", "idle_since", "interrupted", "last_answer", "nudged",
        "steers_out", "waiting_for_work", "why", "yielded",
    )  # fmt: skip

    def __init__(
        self,
        last_answer: str | None = None,
        answers: int = 0,
        held: deque[tuple[str, str]] | None = None,
        steers_out: deque[str] | None = None,
        interrupted: bool = False,
        waiting_for_work: bool = False,
        why: str = "",
        delivery: wake.Delivery | None = None,
        yielded: bool = False,
        nudged: bool = False,
        idle_since: float | None = None,
    ) -> None:
        self.last_answer = last_answer  # the latest good answer: the result if the job ends
        self.answers = answers
        self.held = deque() if held is None else held  # follow-ups: (id, text)
        # Steers handed to the agent and not yet acknowledged by it, oldest first: agents
        # acknowledge steers in the order they got them (pi's responses, the native loop).
        self.steers_out = deque() if steers_out is None else steers_out
        self.interrupted = interrupted  # a soft interrupt is under way: the run pauses the job
        self.waiting_for_work = waiting_for_work  # waiting for the events of its pending work
        self.why = why  # what it waits for
        self.delivery = delivery  # who delivers events; known once a run ended
        self.yielded = yielded  # the latest run ended on a yielding tool
        self.nudged = nudged  # the agent was told that nothing is pending
        self.idle_since = idle_since  # on the supervisor's clock

    def to_dict(self, now: float) -> dict[str, Any]:
        idle = self.idle_since
        return {
            "last_answer": self.last_answer,
            "answers": self.answers,
            "held": [list(h) for h in self.held],
            "steers_out": list(self.steers_out),
            "interrupted": self.interrupted,
            "waiting_for_work": self.waiting_for_work,
            "why": self.why,
            "delivery": self.delivery,
            "yielded": self.yielded,
            "nudged": self.nudged,
            "idle_s": None if idle is None else round(now - idle, 3),
        }

    @classmethod
    def from_dict(cls, job: Mapping[str, Any], now: float) -> JobState:
        answer, delivery, idle = job["last_answer"], job["delivery"], job["idle_s"]
        if delivery not in (None, "supervisor", "agent", "none"):
            raise ValueError(f"unknown delivery {delivery!r}")
        return cls(
            last_answer=None if answer is None else str(answer),
            answers=int(job["answers"]),
            held=deque((str(i), str(m)) for i, m in job["held"]),
            steers_out=deque(str(i) for i in job["steers_out"]),
            interrupted=bool(job["interrupted"]),
            waiting_for_work=bool(job["waiting_for_work"]),
            why=str(job["why"]),
            delivery=delivery,
            yielded=bool(job["yielded"]),
            nudged=bool(job["nudged"]),
            idle_since=None if idle is None else now - float(idle),
        )
