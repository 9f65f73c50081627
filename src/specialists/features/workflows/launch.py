"""Starting a workflow job, and resuming one: the record, checked before anything exists.

A workflow job's record: runner `workflow`, specialist `workflow`, prompt = its name, and in
`runner_options` the source (a file, or an inline declarative document), the args, the
concurrency, the depth (0, or 1 for a nested workflow), the job that started it (for
`context: fork`), and for a resume the workflow it resumes and the keys accepted as changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.owner import JOB_ENV
from specialists.base.reader import Invalid, check_tree
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.features.missions.launch import (
    Launched,
    MissionChoice,
    discard_unused,
    link_after_launch,
    open_before_launch,
)
from specialists.features.missions.store import MissionStore
from specialists.features.workflows.options import MAX_CONCURRENCY, default_concurrency
from specialists.features.workflows.source import Source, find_workflow, load_document, load_python
from specialists.store import keys
from specialists.store.files import read_object
from specialists.store.ids import is_job_id
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import JobRecord
from specialists.store.view import current_status
from specialists.supervise.start import live, resume_key

WORKFLOW_SPECIALIST = "workflow"
MAX_ARGS_BYTES = 64 * 1024


@dataclass(frozen=True)
class WorkflowRequest:
    source: Source
    args: Mapping[str, Any]
    concurrency: int | None = None
    budget_tokens: int | None = None  # no child launches once its children spent this many
    resume_of: str | None = None
    rerun_changed: Sequence[str] | bool = ()


def check_source(source: Source, args: Mapping[str, Any] | None = None) -> None:
    """Refuse a workflow that cannot run before a job exists for it."""
    if source.kind == "python":
        if source.path is None:
            raise UserError("a Python workflow must be a file in the project")
        load_python(Path(source.path))  # syntax errors and a missing main, now
        return
    from specialists.features.workflows.declarative import check_document

    check_document(load_document(source), args)


def workflow_record(
    project_root: Path,
    request: WorkflowRequest,
    *,
    cwd: Path | None = None,
    origin_job: str | None = None,
    depth: int = 0,
) -> JobRecord:
    args = dict(request.args)
    try:  # from any front (an MCP client's included): depth refused as input
        check_tree(args, "the workflow args", max_nodes=None)
        size = len(json.dumps(args, ensure_ascii=False).encode("utf-8"))  # as job.json holds it
    except Invalid as exc:
        raise UserError(exc.problem) from None
    except UnicodeEncodeError:  # a lone surrogate: a job.json holding one cannot be read back
        raise UserError(
            "text in the workflow args is not valid Unicode (a lone surrogate)"
        ) from None
    except (TypeError, ValueError) as exc:
        raise UserError(f"workflow args are not JSON: {exc}") from None
    if size > MAX_ARGS_BYTES:
        raise UserError("workflow args are over 64 KiB", hint="put long material in a file")
    check_source(request.source, args)
    c = request.concurrency
    if c is not None and (
        isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CONCURRENCY
    ):
        raise UserError(
            f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}; got {c!r}"
        )
    b = request.budget_tokens
    if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
        raise UserError(f"budget_tokens must be a whole number of at least 1; got {b!r}")
    rerun: list[str] | bool = (
        True if request.rerun_changed is True else [str(k) for k in request.rerun_changed or ()]
    )
    return JobRecord(
        id="",
        specialist=WORKFLOW_SPECIALIST,
        prompt=request.source.name,
        task=request.source.name,
        runner=WORKFLOW_RUNNER,
        model=None,
        cwd=str((cwd or project_root).resolve()),
        created_at_ms=now_ms(),
        runner_options={
            "source": request.source.to_dict(),
            "args": args,
            "concurrency": c or default_concurrency(),
            "budget_tokens": b,
            "depth": depth,
            "origin_job": origin_job,
            "resume_of": request.resume_of,
            "rerun_changed": rerun,
        },
    )


def nested_record(
    project_root: Path, parent: JobRecord, name: str, args: Mapping[str, Any]
) -> JobRecord:
    if int(parent.runner_options.get("depth", 0)) >= 1:
        raise UserError("workflows nest one level deep")
    source = find_workflow(project_root, name, cwd=Path(parent.cwd))
    request = WorkflowRequest(source, args, parent.runner_options.get("concurrency"))
    return workflow_record(project_root, request, cwd=Path(parent.cwd), depth=1)


def resume_request(
    store: JobStore, ref: str, *, rerun_changed: Sequence[str] | bool = ()
) -> tuple[WorkflowRequest, JobRecord]:
    """A new run of workflow `ref`'s source and args that skips its finished keys."""
    job_id = store.resolve(ref)
    record = store.read_record(job_id)
    if record.runner != WORKFLOW_RUNNER:
        raise UserError(f"job {job_id} is not a workflow (its runner is {record.runner})")
    status = current_status(store, job_id)
    if status.active:
        raise UserError(
            f"workflow {job_id} is still {status.status}",
            hint=f"wait for it, or stop it with `specialists stop {job_id}`",
        )
    if status.status == "cancelled":
        raise UserError(
            f"workflow {job_id} was stopped, and a stopped run is final",
            hint="start it again with `specialists workflow run`",
        )
    _not_resumed_already(store, job_id)
    options = record.runner_options
    source = Source.from_dict(dict(options.get("source") or {}))
    if source.path is not None and not os.path.isfile(source.path):
        raise UserError(f"workflow {job_id}'s file {source.path} is gone")
    request = WorkflowRequest(
        source,
        dict(options.get("args") or {}),
        options.get("concurrency"),
        options.get("budget_tokens"),
        resume_of=job_id,
        rerun_changed=rerun_changed,
    )
    return request, record


def _not_resumed_already(store: JobStore, job_id: str) -> None:
    """A run resumed once is continued from its newest resume: resuming an older one again
    would re-run what the newer finished (and two resumes at once, everything twice)."""
    holder = _resumed_by(store, job_id)
    if holder is None:
        return  # never resumed, or the resume failed before it was created
    if live(store, holder) is not None:
        raise UserError(
            f"workflow {job_id} is being resumed by job {holder}; one resume at a time",
            hint=f"wait for it or stop it: specialists status {holder}",
        )
    latest = holder
    for _ in range(100):  # a chain of resumes, newest last (bounded: a planted loop)
        after = _resumed_by(store, latest)
        if after is None:
            break
        latest = after
    raise UserError(
        f"workflow {job_id} was resumed already, as job {holder}",
        hint=f"resume the newest run of it: specialists workflow resume {latest}",
    )


def _resumed_by(store: JobStore, run_id: str) -> str | None:
    """The job that resumed `run_id` (its start key; before 0.2, a `resume.lease` in the
    run's directory), if that job exists."""
    holder = keys.holder(store.root, resume_key(run_id))
    if holder is None:
        try:
            lease = read_object(store.job_dir(run_id) / "resume.lease", 4096)
        except (OSError, SpecialistsError):
            lease = {}  # none, or damaged: free, as it always was
        holder = lease.get("holder") if isinstance(lease.get("holder"), str) else None
    if holder is None or not is_job_id(holder) or not store.job_dir(holder).is_dir():
        return None
    return holder


def origin_from_env() -> str | None:
    """The job whose agent started this workflow, when one did (for context: fork)."""
    value = os.environ.get(JOB_ENV, "")
    return value if is_job_id(value) else None


def start_on_mission(
    state_root: Path,
    record: JobRecord,
    choice: MissionChoice,
    start: Callable[[JobRecord], str],
    warnings: list[str],
) -> tuple[str, str | None]:
    """Start a workflow job on its mission, as the seed has it: one per workflow launch,
    shared by its children (a new one unless `choice` names one or says none). The mission is
    opened first so the job's record names it (its script reads and writes the mission's
    state), then the job is linked. A launch that fails leaves no mission it made behind.
    Returns the job id and the mission id (None: no mission)."""
    title, objective = _mission_text(record)
    mission_id = open_before_launch(
        state_root,
        choice,
        title=title,
        objective=objective,
        owner=tuple(record.owner),
        warnings=warnings,
    )
    if mission_id is not None:  # its script reads the mission; its ceiling covers the run
        record = record.replace(
            runner_options={**record.runner_options, "mission_id": mission_id},
            ceiling={**record.ceiling, "mission": mission_id},
        )
    try:
        job_id = start(record)
    except BaseException:
        if choice.kind == "auto" and mission_id is not None:
            discard_unused(state_root, mission_id, warnings)
        raise
    if mission_id is not None:
        attach = MissionChoice("attach", mission_id)
        launched = Launched.of(record.replace(id=job_id))
        if link_after_launch(state_root, attach, launched, warnings) is None:
            return job_id, None
    return job_id, mission_id


def resumed_mission(state_root: Path, resumed_job: str) -> MissionChoice:
    """A resumed workflow goes on the mission of the run it resumes (none if it had none)."""
    mission_id = MissionStore(state_root).mission_of_job(resumed_job)
    return MissionChoice("attach", mission_id) if mission_id else MissionChoice("none")


def _mission_text(record: JobRecord) -> tuple[str, str]:
    """A new mission's title and objective: the workflow's name and its task, if an argument
    names one (task, prompt, goal), else its arguments."""
    args = record.runner_options.get("args") or {}
    task = next(
        (v for k in ("task", "prompt", "goal") if isinstance(v := args.get(k), str) and v.strip()),
        None,
    )
    title = f"workflow {record.prompt}"
    if task is not None:
        return f"{title}: {task.strip().splitlines()[0]}", task.strip()
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return title, f"{title} with args {shown}" if args else title
