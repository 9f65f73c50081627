"""The goal driver: a goal mission keeps its owner moving until its budget is spent.

After each idle turn of a linked job (a keep-alive job answered and waits, or a job ended:
the moments its owner gets the job's own notice, news.py), the mission's owner gets one
needs-attention notice (an inbox `notice` event, details `needs_attention: true`) naming what
to do next: `state.nextReadyAction` if set, else the first open decision. It stops, with one
last notice that says so, when the tokens its linked jobs spent reach the budget; it says
nothing while the mission is paused, and nothing once it is closed. Reaching the budget is
never success: the notice says the goal stopped unfinished, and the mission stays open for a
person to close.

Every idle turn is counted once (its key kept in `goal.seen`, bounded), so the supervisor and
crash recovery reporting the same end post one notice; the event id is
`mission-<id>:notice:<n>`, fixed by the count under the mission's lock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, assert_never

from specialists.base.display import display_line
from specialists.features.missions.model import Mission

MAX_SEEN = 200
Where = Literal["state", "decision", "none"]
MAX_ACTION_CHARS = 600


@dataclass(frozen=True)
class Notify:
    kind: Literal["notify", "exhausted"]
    seq: int
    body: str
    details: dict[str, Any]


@dataclass(frozen=True)
class GoalQuiet:
    kind: Literal["quiet"]
    reason: str  # no goal, closed, budget-exhausted, paused, seen


Step = Notify | GoalQuiet


def next_action(mission: Mission, state: dict[str, Any]) -> tuple[Where, str]:
    """What the notice names: ("state", the nextReadyAction), ("decision", "d1: question"),
    or ("none", "")."""
    action = state.get("nextReadyAction")
    if action not in (None, ""):
        value = action if isinstance(action, str) else repr(action)
        return "state", display_line(value, MAX_ACTION_CHARS)
    for decision in mission.open_decisions():
        return "decision", display_line(f"{decision.id}: {decision.question}", MAX_ACTION_CHARS)
    return "none", ""


def goal_step(
    mission: Mission, turn: str, job_id: str, spent: int, state: dict[str, Any]
) -> tuple[Mission, Step]:
    """The pure decision for one idle turn `turn` of linked job `job_id`."""
    goal = mission.goal
    if goal is None:
        return mission, GoalQuiet("quiet", "no goal")
    if mission.terminal:
        return mission, GoalQuiet("quiet", "closed")
    if goal.ended is not None:
        return mission, GoalQuiet("quiet", goal.ended)
    if mission.status == "paused":
        return mission, GoalQuiet("quiet", "paused")
    if turn in goal.seen:
        return mission, GoalQuiet("quiet", "seen")
    seen = (*goal.seen, turn)[-MAX_SEEN:]
    seq = goal.notices + 1
    where, action = next_action(mission, state)
    details: dict[str, Any] = {
        "needs_attention": True,
        "mission_id": mission.id,
        "job_id": job_id,
        "spent_tokens": spent,
        "budget_tokens": goal.budget_tokens,
        "next_action": action or None,
        "next_action_from": where,
    }
    head = f"Mission {mission.id} ({display_line(mission.title, 80)})"
    budget = f"{spent} of {goal.budget_tokens} tokens spent"
    show = f"Run: specialists mission show {mission.id} (MCP tool: mission, action show)"
    if spent >= goal.budget_tokens:
        ended = goal.replace(spent_tokens=spent, notices=seq, seen=seen, ended="budget-exhausted")
        body = (
            f"{head}: the goal stopped because its token budget is spent ({budget}). It is NOT "
            f"done: nothing was checked or claimed finished. Review what the runs did, then "
            f"close the mission (completed, failed or cancelled) or start a new one with a new "
            f"budget. {show}"
        )
        details["goal"] = "budget-exhausted"
        step = Notify("exhausted", seq, body, details)
        return mission.replace(goal=ended), step
    if where == "state":
        what = f"Next ready action: {action}"
    elif where == "decision":
        what = f"First open decision: {action} (resolve it: specialists mission resolve)"
    elif where == "none":
        what = (
            "No next action is recorded: set state nextReadyAction, record a decision, or "
            "close the mission"
        )
    else:
        assert_never(where)
    body = f"{head} needs attention: job {job_id} is idle. {what}. ({budget}.) {show}"
    details["goal"] = "continue"
    step = Notify("notify", seq, body, details)
    return mission.replace(goal=goal.replace(spent_tokens=spent, notices=seq, seen=seen)), step


def turn_key(state_root: Path, job_id: str, status: str) -> str:
    """Which idle turn this is: a keep-alive job's n-th answer, or its end."""
    if status != "waiting":
        return f"{job_id}:end"
    try:
        answers = sum(1 for e in os.scandir(state_root / "jobs" / job_id / "answers"))
    except (FileNotFoundError, NotADirectoryError):
        answers = 0
    return f"{job_id}:answer:{answers}"
