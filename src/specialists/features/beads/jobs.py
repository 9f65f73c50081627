"""Beads and jobs: the tracking bead of a run, a bead as a run's prompt, the outcome pinned
to the bead at the end. Nothing here prints: problems come back as warnings (or as
BeadsError from `on_job_finished`, which the supervisor records as a notice event).

Policy: `track` runs when a job is planned, before its job.json is written, so the bead id
is part of the job from its creation. It is free when `bd` is not on PATH. A tracking bead
is created when the specialist's beads_integration is "always", or "auto" for a specialist
that can write (permission above READ_ONLY) in a project that uses beads (a .beads/
directory). `run --bead <id>` makes that bead the prompt and never creates a second one.
`on_job_finished` pins the outcome to the bead's notes and closes the bead the run owns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.base.errors import UserError
from specialists.features.beads.client import (
    BeadsClient,
    ShortRun,
    git_head,
    project_uses_beads,
    run_short,
)
from specialists.features.beads.notes import (
    BD_ENV,
    BeadsError,
    bd_path,
    bead_prompt,
    check_bead_id,
    clip,
    close_reason,
    collect_blockers,
    pin_notes,
    run_title,
    should_track,
)

if TYPE_CHECKING:
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobRecord, JobStatus

SETTLED_MARKER = "bead_settled"


def track(
    record: JobRecord, mode: str, *, run: ShortRun = run_short
) -> tuple[JobRecord, str | None]:
    """Create a tracking bead for a planned job (no id yet) when the policy says so.

    Returns the record (with the bead when one was made) and a warning when bd failed: a
    tracker failure never stops the run, it runs untracked.
    """
    if record.bead_id:
        return record, None
    bd = bd_path()
    if bd is None:
        return record, None
    cwd = Path(record.cwd)
    if not should_track(mode, record.permission, project_uses_beads(cwd)):
        return record, None
    description = f"Tracking bead for a specialists run.\n\nPrompt:\n{clip(record.prompt, 4000)}"
    try:
        bead_id = BeadsClient(bd, cwd, run).create(
            run_title(record.specialist, record.prompt), description
        )
    except BeadsError as exc:
        return record, f"run not tracked as a bead: {exc.one_line()}"
    return record.replace(bead_id=bead_id, owns_bead=True), None


def bead_prompt_for(
    cwd: Path, bead_id: str, depth: int, extra: str = "", *, run: ShortRun = run_short
) -> tuple[str, str]:
    """`run --bead`: the bead and its blockers' context (up to `depth`) as the prompt.

    Returns (prompt, bead id). The orchestrator owns an input bead: the job pins notes to
    it but never closes it, and no second bead is created.
    """
    bead_id = check_bead_id(bead_id)
    bd = bd_path()
    if bd is None:
        raise UserError(
            "--bead needs the `bd` CLI (beads), which is not on PATH",
            hint=f"install beads, or point {BD_ENV} at bd",
        )
    client = BeadsClient(bd, cwd, run)
    try:
        target = client.show(bead_id)
        blockers = collect_blockers(client.show, target, depth)
    except BeadsError as exc:
        raise UserError(f"cannot read bead {bead_id}: {exc.message}") from exc
    return bead_prompt(target, blockers, extra), target.id


def on_job_finished(
    record: JobRecord,
    status: JobStatus,
    final: str,
    last_answer: str | None,
    error: str | None,
    *,
    run: ShortRun = run_short,
    now_ms: int | None = None,
) -> None:
    """Pin the outcome to the job's bead; close the bead if the run owns it.

    Raises BeadsError (the supervisor records it as a notice event) after trying both.
    """
    if not record.bead_id:
        return
    bd = bd_path()
    if bd is None:
        raise BeadsError(f"`bd` is no longer on PATH; bead {record.bead_id} was not updated")
    import time

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    started = status.started_at_ms or record.created_at_ms
    cwd = Path(record.cwd)
    client = BeadsClient(bd, cwd, run)
    notes = pin_notes(
        record,
        status,
        final,
        last_answer,
        error,
        git_sha=git_head(cwd, run),
        elapsed_ms=max(0, now - started),
    )
    problems = []
    try:
        client.append_notes(record.bead_id, notes)
    except BeadsError as exc:
        problems.append(exc.message)
    if record.owns_bead:
        try:
            client.close(record.bead_id, close_reason(final, error, record.id))
        except BeadsError as exc:
            problems.append(exc.message)
    if problems:
        raise BeadsError(f"bead {record.bead_id}: " + "; ".join(problems))


def settle_crashed(store: JobStore, job_ids: Sequence[str]) -> list[str]:
    """Close the beads of jobs whose supervisor crashed (recovery cannot: it is in jobs/).

    Called at every run start with the finished jobs that ended "supervisor crashed"; a
    marker file makes it once per job. Returns one warning per bead that could not be updated.
    """
    from specialists.store.recovery import CRASHED

    if bd_path() is None:
        return []
    problems: list[str] = []
    for job_id in job_ids:
        marker = store.job_dir(job_id) / SETTLED_MARKER
        if marker.exists():
            continue
        record = store.read_record(job_id)
        status = store.read_status(job_id)
        if record.bead_id and status is not None:
            try:
                on_job_finished(record, status, "error", None, CRASHED)
            except BeadsError as exc:
                problems.append(exc.one_line())
        marker.touch()
    return problems
