"""The one place the sandbox room runs a short command (git), over the process seam.

A missing executable, a timeout or an OS error comes back as a result with `problem` set,
never as an exception, and the caller decides what that means. Output stays bytes: git
paths need not be UTF-8.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from specialists.process.short import run_short
from specialists.process.spawn import MISSING

# git's answers are parsed whole (paths, trees): never keep only a tail of them.
OUTPUT_CAP = 256 * 1024 * 1024


@dataclass(frozen=True)
class GitResult:
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


GitRunner = Callable[..., GitResult]  # `run_command`, or a test's wrapper of it (a race)


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> GitResult:
    args = tuple(argv)
    if not os.path.isdir(cwd):
        return GitResult(args, None, problem=f"not found: {cwd}")
    done = run_short(args, cwd=cwd, env=env, timeout=timeout_s, input=stdin, output_cap=OUTPUT_CAP)
    if done.error is not None:
        problem = f"not found: {args[0]}" if done.error == MISSING else done.error
        return GitResult(args, None, done.out, done.err, problem=problem)
    return GitResult(args, done.code, done.out, done.err)
