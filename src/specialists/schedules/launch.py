"""The real `ScheduleLauncher`: a schedule's specialist run started as a background job.

It goes through the same path as `specialists run --background` (`Project.plan` ... here
`plan_job`, then `Project.start_background`), with one difference: the job's owner is the
schedule (`schedule-<id>`), so its completion notice lands in the schedule's inbox and not in
whichever session happened to run `run-due`. Scheduled runs never create a tracking bead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from specialists.schedules.model import Schedule, check_target, owner_key

if TYPE_CHECKING:
    from specialists.project import Project


class JobLauncher:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.warnings: list[str] = []

    def launch(self, schedule: Schedule, slot_ms: int) -> str:
        from specialists.supervise.plan import JobRequest, plan_job

        target = schedule.target
        check_target(target)
        if target.kind == "workflow":
            from specialists.workflows.launch import WorkflowRequest, workflow_record
            from specialists.workflows.source import find_workflow

            root = self.project.root
            if target.by_model:  # checked again at every firing: the file may have changed
                from specialists.workflows.consent import model_source

                source = model_source(root, target.workflow, via="schedule tool")
            else:
                source = find_workflow(root, target.workflow, cwd=root)
            record = workflow_record(root, WorkflowRequest(source, {}))
            record = record.replace(owner=[owner_key(schedule.id)])
            return self.project.start_background(record, self.warnings)
        if target.kind != "specialist":
            assert_never(target)
        request = JobRequest(
            specialist=target.specialist,
            prompt=target.prompt,
            cwd=Path(target.cwd) if target.cwd else self.project.root,
            runner=target.runner,
            model=target.model,
            timeout_ms=target.timeout_ms,
            track_bead=False,
        )
        record = plan_job(self.project.store, request, warnings=self.warnings)
        record = record.replace(owner=[owner_key(schedule.id)])
        return self.project.start_background(record, self.warnings)

    def is_active(self, job_id: str) -> bool:
        from specialists.jobs.view import current_status

        store = self.project.store
        if not store.job_dir(job_id).is_dir():
            return False  # collected by gc: long finished
        return current_status(store, job_id).active
