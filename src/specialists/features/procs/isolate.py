"""`isolate: true`: run a background command under bubblewrap, or not at all (R-J13).

The root is bound read-only, the canonical working directory read-write, /dev and /proc are
fresh, /tmp is a private tmpfs (many tools need a scratch directory; it is not the host's),
and the sandbox dies with its supervisor. Network and reads stay allowed: this reduces
accidental writes, it is not a security boundary. Where bwrap is missing or namespaces do
not work, the call fails and the command never runs unrestricted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specialists.base.errors import UserError
from specialists.process.short import run_short

PROBE_TIMEOUT_S = 10.0


def bwrap_argv(bwrap: str, cwd: Path, shell_argv: list[str]) -> list[str]:
    """The full command line: bwrap and its binds, then the shell command."""
    real = str(cwd.resolve(strict=True))  # a symlinked cwd grants nothing beyond its target
    return [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", real, real,
        "--chdir", real,
        "--die-with-parent",
        # No --new-session: the sandboxed processes stay in bwrap's process group, so the
        # group's SIGTERM and SIGKILL (R-J8) reach them. There is no terminal to protect:
        # stdin is /dev/null and the detached supervisor has no controlling terminal.
        "--",
        *shell_argv,
    ]  # fmt: skip


def find_bwrap(path_var: str | None = None) -> str:
    found = shutil.which("bwrap", path=path_var if path_var is not None else os.environ.get("PATH"))
    if not found:
        raise UserError(
            "isolate needs bubblewrap (bwrap), which is not installed; nothing was started",
            hint="apt-get install bubblewrap, or run without isolate",
        )
    return found


def check_isolation(bwrap: str, cwd: Path) -> None:
    """Fail closed: prove bwrap can build the sandbox here before the real command runs."""
    if not cwd.is_dir():
        raise UserError(f"isolate: working directory {cwd} is not a directory; nothing was started")
    probe = run_short(bwrap_argv(bwrap, cwd, ["/bin/true"]), timeout=PROBE_TIMEOUT_S)
    if probe.error is not None:
        raise UserError(f"isolate: bubblewrap {probe.error}; nothing was started")
    if probe.code != 0:
        lines = probe.stderr.strip().splitlines()
        why = lines[-1][:200] if lines else "no reason given"
        raise UserError(
            f"isolate: bubblewrap cannot build a sandbox here ({why}); nothing was started",
            hint="user and mount namespaces must be available",
        )
