"""Which sandbox backend a project uses: git (the only one that ships; see sandbox/backend.py
for how a jj backend would map onto the seam)."""

from __future__ import annotations

from pathlib import Path

from specialists.sandbox.backend import SandboxBackend


def backend_for(project: Path) -> SandboxBackend:
    from specialists.sandbox.git import GitSandbox

    return GitSandbox(project)


def new_sandbox_id() -> str:
    """For a job that is not a thread (`specialists run --sandbox`): `s-` and 128 random bits."""
    import os

    return "s-" + os.urandom(16).hex()
