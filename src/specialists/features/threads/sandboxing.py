"""Which sandbox backend a project uses, and putting a job that is not a thread into one
(`specialists run --sandbox`). Git is the only backend that ships; sandbox/backend.py says how
a jj backend would map onto the seam."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from specialists.base.errors import SpecialistsError, UserError
from specialists.features.sandbox.backend import Sandbox, SandboxBackend
from specialists.store.records import JobRecord

T = TypeVar("T")


def backend_for(project: Path) -> SandboxBackend:
    from specialists.features.sandbox.git import GitSandbox

    return GitSandbox(project)


def place_in_sandbox(project: Path, record: JobRecord) -> tuple[JobRecord, Sandbox]:
    """A new sandbox from HEAD of the working copy holding the job's cwd (R-S1), and the
    record moved into it (the same relative directory inside the worktree)."""
    backend = backend_for(project)
    cwd = Path(record.cwd)
    repo = backend.detect(cwd)
    if repo is None:
        raise UserError(
            f"a sandbox needs a git repository, and {cwd} is not in one",
            hint="run from inside a repository, or without a sandbox",
        )
    sandbox_id = "s-" + os.urandom(16).hex()  # not a thread's: `s-` and 128 random bits
    sandbox = backend.create(sandbox_id, origin=repo.toplevel)
    inside = sandbox.path / os.path.relpath(os.path.realpath(cwd), repo.toplevel)
    return record.replace(cwd=str(inside), sandbox=sandbox.id), sandbox


def discard_sandbox(project: Path, sandbox: Sandbox) -> None:
    """Undo `place_in_sandbox` after a launch that failed: worktree and fresh branch go."""
    backend_for(project).remove(sandbox, keep_branch=False)


def launch_in_sandbox(
    project: Path, record: JobRecord, launch: Callable[[JobRecord], T], *, wanted: bool
) -> tuple[T, dict[str, str] | None]:
    """Launch the job, in a new sandbox when `wanted` or its definition asks for one
    (requires_worktree): (what `launch` returned, the sandbox's id, path and branch, or
    None). A launch that fails leaves no sandbox (a worktree with changes in it is never
    removed: the backend refuses)."""
    if not (wanted or record.requires_worktree):
        return launch(record), None
    record, made = place_in_sandbox(project, record)
    try:
        return launch(record), {"id": made.id, "path": str(made.path), "branch": made.branch}
    except SpecialistsError:
        discard_sandbox(project, made)
        raise
