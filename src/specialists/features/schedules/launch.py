"""What a schedule's firing starts: its target, planned as `specialists run --background`
plans a run (or a workflow as `workflow run` does), with one difference: the job's owner is
the schedule (`schedule-<id>`), so its completion notice lands in the schedule's inbox and not
in whichever session happened to run `run-due`. Scheduled runs never create a tracking bead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from specialists.features.schedules.model import (
    Schedule,
    SpecialistTarget,
    WorkflowTarget,
    check_target,
    owner_key,
)

if TYPE_CHECKING:
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobRecord


def schedule_record(
    store: JobStore, schedule: Schedule, warnings: list[str] | None = None
) -> JobRecord:
    """The launch record of one firing of `schedule` (no id yet)."""
    from specialists.supervise.plan import JobRequest, plan_job

    target = schedule.target
    check_target(target)
    root = store.root.parent
    if isinstance(target, WorkflowTarget):
        from specialists.features.workflows.launch import WorkflowRequest, workflow_record
        from specialists.features.workflows.source import find_workflow

        if target.by_model:  # checked again at every firing: the file may have changed
            from specialists.features.workflows.consent import model_source

            source = model_source(root, target.workflow, via="schedule tool")
        else:
            source = find_workflow(root, target.workflow, cwd=root)
        record = workflow_record(root, WorkflowRequest(source, {}))
    elif isinstance(target, SpecialistTarget):
        request = JobRequest(
            specialist=target.specialist,
            prompt=target.prompt,
            cwd=Path(target.cwd) if target.cwd else root,
            runner=target.runner,
            model=target.model,
            timeout_ms=target.timeout_ms,
            track_bead=False,
        )
        record = plan_job(store, request, warnings=warnings)
    else:
        assert_never(target)
    return record.replace(owner=[owner_key(schedule.id)])
