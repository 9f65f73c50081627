"""What `workflow list` and `workflow show` (and the MCP tool) read: plain dicts, no printing."""

from __future__ import annotations

import os
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.features.workflows.journal import JOURNAL_FILE, fold, read_entries
from specialists.features.workflows.receipt import RECEIPT, spend_summary
from specialists.store.ids import is_job_id
from specialists.store.jobs import JobStore
from specialists.store.kinds import JOB
from specialists.store.rollup import rollup
from specialists.store.view import current_status


def workflow_jobs(store: JobStore) -> list[dict[str, Any]]:
    rows = []
    for job_id in store.list_ids():
        try:
            st = store.read_status(job_id)
            if st is None or st.runner != WORKFLOW_RUNNER:
                continue
            st = current_status(store, job_id)
            record = store.read_record(job_id)
        except (StoreError, OSError, ValueError, TypeError):
            continue  # damaged: `specialists status` reports it
        rows.append(
            {
                "id": job_id,
                "name": record.prompt,
                "status": st.status,
                "started_at_ms": st.started_at_ms,
                "resume_of": record.runner_options.get("resume_of"),
                "error": st.error,
            }
        )
    return sorted(rows, key=lambda r: r["started_at_ms"])


def show_workflow(store: JobStore, ref: str) -> dict[str, Any]:
    job_id = store.resolve(ref)
    record = store.read_record(job_id)
    if record.runner != WORKFLOW_RUNNER:
        raise UserError(f"job {job_id} is not a workflow (its runner is {record.runner})")
    st = current_status(store, job_id)
    job_dir = store.job_dir(job_id)
    entries = read_entries(job_dir / JOURNAL_FILE)
    keys = fold(entries)
    children = []
    for key, state in keys.items():
        child_status = None
        if state.job:  # as the journal, a file, names it: maybe no job id, maybe collected
            try:
                if not is_job_id(state.job):
                    child_status = "unreadable"
                elif not os.path.lexists(store.job_dir(state.job)):
                    child_status = "gone"
                else:
                    child_status = current_status(store, state.job).status
            except (StoreError, OSError):
                child_status = "unreadable"
        children.append(
            {
                "key": key,
                "job": state.job,
                "jobs": state.jobs,
                "journal": state.status or "launched",
                "status": child_status,
                "agent": state.agent,
                "context": state.resolved_context or state.context,
                "error": state.error,
                **({"output_file": state.output_file} if state.output_file else {}),
            }
        )
    try:
        receipt = JOB.record(job_dir).read(RECEIPT)
    except (OSError, StoreError) as exc:
        receipt = {"problem": str(exc)}
    return {
        "id": job_id,
        "name": record.prompt,
        "status": st.status,
        "error": st.error,
        "resume_of": record.runner_options.get("resume_of"),
        "phases": [e.get("name") for e in entries if e.get("e") == "phase"],
        "log": [e.get("message") for e in entries if e.get("e") == "log"][-50:],
        "children": children,
        "receipt": receipt,
        "spend": {**spend_summary(entries, rollup(st)), "ceilings": st.ceilings},
    }
