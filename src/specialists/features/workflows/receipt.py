"""`workflow-receipt.json`: what a finished workflow leaves for people and later workflows.

    <workflow job dir>/workflow-receipt.json      beside status.json, written once at the end

For each stable key: the agent, the requested and resolved context, the latest job id, the
whole lineage (every job of the key: schema retries, continuations, and the child of another
workflow it resumed), whether the latest job can be resumed and why, and where its output is.
A later workflow continues a key with `resume: {workflow, key, latest: true}`; that reads this
one receipt and revalidates the job at launch (keyed_resume).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.features.workflows.journal import KeyState
from specialists.store.ids import is_job_id
from specialists.store.jobs import JobStore
from specialists.store.kinds import JOB
from specialists.store.view import current_status

RECEIPT = "workflow-receipt"  # a document of the workflow job's record (store/kinds.py JOB)
RECEIPT_FILE = "workflow-receipt.json"
RECEIPT_VERSION = 1


def resumability(store: JobStore, job_id: str | None) -> tuple[bool, str]:
    """(resumable, why) for a job as it is now."""
    if job_id is None:
        return False, "it never launched"
    if not is_job_id(job_id):  # the journal is a file: what it names is checked
        return False, f"its journal names no job ({job_id[:40]!r})"
    if not os.path.lexists(store.job_dir(job_id)):
        return False, f"its job {job_id} is gone (collected by gc?)"
    try:
        st = current_status(store, job_id)
    except (StoreError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, StoreError) else str(exc)
        return False, f"its job cannot be read ({why})"
    if st.active:
        return False, f"it is still {st.status}"
    if st.status == "cancelled":
        return False, "it was stopped, and a stopped run is final"
    session = st.session_file
    if not session:
        return False, f"its runner ({st.runner}) keeps no session to continue"
    if os.path.isabs(session) and not os.path.isfile(session):
        return False, "its session file is gone"
    return True, f"{st.status}, with its session kept"


def spend_summary(entries: list[dict[str, Any]], spent: Mapping[str, Any]) -> dict[str, Any]:
    """What the run was estimated to spend (its fan-outs, spend/approval.py), what it was
    approved to, and what its children spent: side by side."""
    estimates = [e for e in entries if e.get("e") == "estimate"]
    last = estimates[-1] if estimates else {}
    tokens = spent.get("tokens") or {}
    return {
        "estimate": {
            "children": sum(int(e.get("children") or 0) for e in estimates),
            "usd": last.get("total_usd", 0.0),
            "tokens": last.get("total_tokens", 0),
        }
        if estimates
        else None,
        "approvals": [
            {k: v for k, v in e.items() if k != "e"} for e in entries if e.get("e") == "approval"
        ],
        "actual": {
            "usd": spent.get("cost_usd", 0.0),
            "tokens": int(tokens.get("input", 0)) + int(tokens.get("output", 0)),
            "jobs": spent.get("jobs", 0),
        },
    }


def build_receipt(
    store: JobStore,
    workflow_id: str,
    status: str,
    keys: dict[str, KeyState],
    lineage: dict[str, list[dict[str, Any]]],
    spend: dict[str, Any] | None = None,
) -> dict[str, Any]:
    children: dict[str, Any] = {}
    for key, state in keys.items():
        ok, why = resumability(store, state.job)
        children[key] = {
            "agent": state.agent,
            "context": state.context,
            "resolved_context": state.resolved_context,
            "latest_job": state.job,
            "status": state.status or "unfinished",
            "resumable": ok,
            "why": why,
            "output_ref": state.output_ref,
            "lineage": [*lineage.get(key, []), *({"job": j} for j in state.jobs)],
        }
    return {
        "version": RECEIPT_VERSION,
        "workflow": workflow_id,
        "status": status,
        "children": children,
        **({"spend": spend} if spend is not None else {}),
    }


def write_receipt(job_dir: Path, receipt: dict[str, Any]) -> None:
    JOB.record(job_dir).replace(RECEIPT, receipt)


def read_receipt(store: JobStore, ref: str) -> tuple[str, dict[str, Any]]:
    workflow_id = store.resolve(ref)
    try:
        data = JOB.record(store.job_dir(workflow_id)).read(RECEIPT)
    except (OSError, StoreError) as exc:
        raise UserError(f"workflow {workflow_id}'s receipt cannot be read: {exc}") from None
    if data is None:
        raise UserError(
            f"workflow {workflow_id} has no receipt",
            hint="a receipt is written when a workflow ends; if it crashed, "
            f"`specialists workflow resume {workflow_id}` finishes it and writes one",
        )
    if data.get("version") != RECEIPT_VERSION or not isinstance(data.get("children"), dict):
        raise UserError(f"workflow {workflow_id}'s receipt has an unknown shape (version)")
    return workflow_id, data


def keyed_resume(store: JobStore, workflow: str, key: str) -> tuple[str, str, dict[str, Any]]:
    """(job id to continue, its agent, the receipt's entry), revalidated now."""
    workflow_id, receipt = read_receipt(store, workflow)
    entry = receipt["children"].get(key)
    if not isinstance(entry, dict):
        raise UserError(
            f"workflow {workflow_id} has no key {key!r}",
            hint="`specialists workflow show " + workflow_id + "` lists its keys",
        )
    job = entry.get("latest_job")
    if not isinstance(job, str):
        raise UserError(f"key {key!r} of workflow {workflow_id} never launched a child")
    newer = _revalidate(store, job, f"key {key!r} of workflow {workflow_id} (job {job})")
    if newer:
        raise UserError(
            f"the receipt of workflow {workflow_id} is stale: job {job} of key {key!r} was "
            f"continued since by job {newer}",
            hint="resume from the workflow that ran the newer job",
        )
    return job, str(entry.get("agent") or ""), entry


def run_resume(store: JobStore, ref: str) -> tuple[str, str]:
    """(job id to continue, its specialist) for `resume: "<run id>"` (seed 004), revalidated
    now as keyed resume is: resumable, and not continued since (then the newer run is the
    one to resume: each resume returns a new run id)."""
    job = store.resolve(ref)
    newer = _revalidate(store, job, f"job {job}")
    if newer:
        raise UserError(
            f"job {job} was continued since by job {newer}; resume the latest run id",
            hint=f'resume: "{newer}"',
        )
    return job, store.read_record(job).specialist


def _revalidate(store: JobStore, job: str, who: str) -> str | None:
    """Refuse a job that cannot be resumed now; the job that continued it since, if any."""
    ok, why = resumability(store, job)
    if not ok:
        raise UserError(
            f"{who} is not resumable: {why}",
            hint="launch a fresh child with agent and task instead",
        )
    return _continued_since(store, job)


def _continued_since(store: JobStore, job_id: str) -> str | None:
    """A job that continued `job_id` since (so the receipt no longer names the latest of the
    key): workflow children record the job they continue in their thread record."""
    for other in store.list_ids():
        if other == job_id:
            continue
        try:
            record = store.read_record(other)
        except (StoreError, OSError, ValueError, TypeError):
            continue  # unreadable: `specialists status` reports it
        if record.thread.get("continues") == job_id:
            return other
        if record.parent_id == job_id and record.resume_session and not record.thread:
            return other  # `specialists run --continue`
    return None
