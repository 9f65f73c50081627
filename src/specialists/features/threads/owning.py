"""Which job works in a sandbox, and how far it has come: for a squash asked for from outside
the tool table (`specialists sandboxes squash`), where no parent's registry names the child."""

from __future__ import annotations

from pathlib import Path

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.features.sandbox.backend import ChildState, Sandbox, SandboxBackend
from specialists.features.sandbox.rules import is_id
from specialists.features.threads.records import ThreadStore, is_thread_id
from specialists.features.threads.state import auto_commit_of, child_state, child_view, job_store
from specialists.store.view import current_status


def sandbox_for(backend: SandboxBackend, state_root: Path, ref: str) -> Sandbox:
    """A thread id (its sandbox) or a sandbox id; one clear error otherwise."""
    sandbox_id = ref
    if is_thread_id(ref):
        record = ThreadStore(state_root).get(ref)
        if record is None:
            raise UserError(f"unknown thread {ref}", hint="`specialists threads` lists them")
        if record.sandbox is None:
            raise UserError(f"thread {ref} has no sandbox")
        sandbox_id = record.sandbox
    elif not is_id(ref):
        raise UserError(
            f"invalid sandbox id {ref[:60]!r}", hint="`specialists sandboxes` lists them"
        )
    sandbox = backend.get(sandbox_id)
    if sandbox is None:
        raise UserError(f"unknown sandbox {sandbox_id}", hint="`specialists sandboxes` lists them")
    return sandbox


def child_state_for(state_root: Path, sandbox_id: str) -> tuple[ChildState, bool]:
    """R-S5's state of whatever job works in the sandbox (finished when none does), and
    whether its work may be committed for it (its definition's auto_commit)."""
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    for record in threads.all()[0]:
        if record.sandbox == sandbox_id:
            child = child_view(threads, jobs, record)
            return child_state(child), auto_commit_of(jobs, record.job_id)
    for job_id in jobs.list_ids():
        try:
            job = jobs.read_record(job_id)
            if job.sandbox != sandbox_id:
                continue
            state: ChildState = "running" if current_status(jobs, job_id).active else "finished"
            return state, job.auto_commit
        except (NotFound, StoreError, OSError):
            continue  # a damaged job is not the sandbox's owner we can speak for
    return "finished", False  # nobody to ask: a dirty sandbox is refused, not committed
