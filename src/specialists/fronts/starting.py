"""Starting a `run`: the one sequence behind the CLI's `run` and `resume` and the MCP `run`
tool. Each front plans its job its own way (`Project.plan`); what a run asks for beyond its
plan (a sandbox, a mission, spend limits, a gate) is applied here once, so the fronts cannot
drift apart again (an MCP run on a mission once escaped the mission's spend ceiling).

A plain run stays light: the mission and sandbox rooms are imported only when asked for.
"""

from __future__ import annotations

from specialists.base.tuples import NamedTuple

TYPE_CHECKING = False  # no `typing` at run time: a foreground run imports none
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from specialists.features.missions.launch import MissionChoice
    from specialists.project import Project
    from specialists.store.records import JobRecord
    from specialists.supervise.start import Started


class Wishes(NamedTuple):
    """What a run asks for beyond its plan (no dataclass: a foreground run imports none)."""

    sandbox: bool = False  # a new git worktree (a definition may require one anyway)
    mission: MissionChoice | None = None  # None: no mission, and the room is not imported
    limits: Mapping[str, Any] | None = None  # job.json `ceiling`, checked
    gate: dict[str, object] | None = None  # job.json `gate`, parsed


class StartedRun(NamedTuple):
    job: Started
    record: JobRecord  # as planned, with its id (its cwd is outside any sandbox)
    sandbox: dict[str, str] | None  # the new sandbox's id, path and branch
    mission_id: str | None  # the mission the job is linked to


def start_run(
    project: Project,
    plan: Callable[[], JobRecord],
    wishes: Wishes,
    start: Callable[[JobRecord], Started],
    warnings: list[str],
) -> StartedRun:
    """Plan the job, then start it by `start` (detached or here) as `wishes` asks. A bad
    mission id fails before anything is planned (planning may make a bead); a launch that
    fails leaves no sandbox; a mission that cannot be written only warns."""
    state_root = project.store.root
    mission = wishes.mission
    if mission is not None:
        from specialists.features.missions.launch import check_before_launch, followed

        check_before_launch(state_root, mission)
    record = plan()
    if mission is not None:
        mission = followed(state_root, mission, record.parent_id)
    ceiling = dict(wishes.limits or {})
    if mission is not None and mission.mission_id:
        ceiling["mission"] = mission.mission_id  # the mission's ceiling covers the job too
    if ceiling:
        record = record.replace(ceiling=ceiling)
    if wishes.gate is not None:
        record = record.replace(gate=wishes.gate)
    if wishes.sandbox or record.requires_worktree:
        from specialists.features.threads.sandboxing import launch_in_sandbox

        job, made = launch_in_sandbox(project.root, record, start, wanted=True)
    else:
        job, made = start(record), None
    record = record.replace(id=job.id)
    linked = None
    if mission is not None:
        from specialists.features.missions.launch import Launched, link_after_launch

        linked = link_after_launch(state_root, mission, Launched.of(record), warnings)
    return StartedRun(job, record, made, linked)
