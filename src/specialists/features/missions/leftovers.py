"""Missions that plain runs used to open, closed once their one run has ended.

Until plain runs stopped making missions (launch.py), every `specialists run` created one
titled `<specialist>: <first line of the task>` with that job linked, and nothing closed it:
after 20 runs a project had 14 open missions, and every Claude Code session was told of them.
Whoever next lists missions (`mission list`, the MCP `mission` tool, the SessionStart hook)
closes such a leftover once its job has ended, with the job's outcome (done: completed,
error: failed, cancelled or gone: cancelled) and a summary that says why.

A mission is a leftover only while it still looks exactly as a plain run left it: active, one
run, the automatic title, and nothing recorded by anyone since (no decision, artifact,
receipt, label, goal or state). Anything a person or an agent added keeps it open.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from specialists.base.errors import SpecialistsError, reason
from specialists.features.missions import model, ops
from specialists.features.missions.model import Mission, auto_title
from specialists.features.missions.state import STATE_FILE
from specialists.features.missions.store import MissionStore
from specialists.store.jobs import JobStore
from specialists.store.records import TERMINAL_STATES

CLOSED_AS = {"done": "completed", "error": "failed", "cancelled": "cancelled"}


def looks_left_over(mission: Mission) -> bool:
    """Exactly what a plain run's automatic mission was, untouched since (pure)."""
    if mission.status != "active" or len(mission.runs) != 1:
        return False
    if mission.decisions or mission.artifacts or mission.receipts or mission.labels:
        return False
    if mission.goal is not None or mission.extra:
        return False
    run = mission.runs[0]
    return bool(run.specialist) and mission.title == auto_title(run.specialist, mission.objective)


def close_left_over(store: MissionStore, jobs: JobStore) -> tuple[list[str], list[str]]:
    """Close every leftover whose run has ended; (closed ids, warnings). Never raises for a
    mission or job that cannot be read: it stays open and a warning says why."""
    closed: list[str] = []
    warnings: list[str] = []
    for item in store.all():
        if not isinstance(item, Mission) or not looks_left_over(item):
            continue
        try:
            if _has_state(store, item.id):
                continue
            view, _why = ops.read_run(jobs, item.runs[0])
            gone = not view.live
            if not gone and view.status not in TERMINAL_STATES:
                continue  # still running: closed by a later look
            status = "cancelled" if gone else CLOSED_AS.get(view.status, "completed")
            ended = "is gone" if gone else f"ended {view.status}"
            summary = (
                f"Closed by specialists: its one run (job {item.runs[0].job_id}) {ended}. "
                "Plain runs no longer keep a mission open; workflows get one per launch."
            )
            store.update(item.id, _closing(status, summary))
            closed.append(item.id)
        except (SpecialistsError, OSError) as exc:
            why = reason(exc)
            warnings.append(f"mission {item.id} left open: {why}")
    return closed, warnings + store.warnings


def _closing(status: str, summary: str) -> Callable[[Mission], tuple[Mission, Mission]]:
    def close(mission: Mission) -> tuple[Mission, Mission]:
        if not looks_left_over(mission):  # changed since it was read: someone uses it
            return mission, mission
        after = model.close(mission, status, summary, ops.now_ms())
        return after, after

    return close


def _has_state(store: MissionStore, mission_id: str) -> bool:
    try:
        return os.lstat(store.dir(mission_id) / STATE_FILE).st_size > 2  # more than "{}"
    except FileNotFoundError:
        return False
