"""The one place the sandbox room starts a short command (git) and waits for it.

Kept to one function so it can be swapped for the shared short-command helper: a missing
executable, a timeout or an OS error comes back as a result with `problem` set, never as an
exception, and the caller decides what that means.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    code: int | None  # None when the command did not run to an exit
    stdout: bytes = b""
    stderr: bytes = b""
    problem: str | None = None  # "not found", "timed out after 30 s", "cannot run: ..."

    @property
    def ok(self) -> bool:
        return self.code == 0

    def err_text(self, limit: int = 600) -> str:
        """stderr (else the problem) as one trimmed line, for error messages."""
        text = self.stderr.decode("utf-8", "replace").strip() or (self.problem or "")
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"


class Runner(Protocol):
    """The signature of `run_command`, so tests can wrap it (to simulate a race)."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    args = tuple(argv)
    if not os.path.isdir(cwd):
        return CommandResult(args, None, problem=f"not found: {cwd}")
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
            check=False,
        )
    except FileNotFoundError:
        return CommandResult(args, None, problem=f"not found: {args[0]}")
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, bytes) else b""
        err = exc.stderr if isinstance(exc.stderr, bytes) else b""
        return CommandResult(args, None, out, err, problem=f"timed out after {timeout_s:g} s")
    except OSError as exc:
        return CommandResult(args, None, problem=f"cannot run: {exc}")
    return CommandResult(args, proc.returncode, proc.stdout, proc.stderr)
