"""The one place the sandbox room runs a short command (git), over the process seam, and the
environment every git of ours runs in.

A missing executable, a timeout or an OS error comes back as a result with `problem` set,
never as an exception, and the caller decides what that means. Output stays bytes: git
paths need not be UTF-8.

Hooks and fsmonitor are disabled (they run programs of the repository's choosing), so are
signing (it may prompt) and auto-gc (it forks into the background), and variables that would
point git at another repository are dropped.

Who a commit of ours is by, when git cannot say (CI, containers, a fresh machine): a sandbox
job's work is committed when the job ends (R-S3), and a squash into a sandboxed parent commits
too. Without `user.name`/`user.email` (and no usable host name) git refuses to commit, and the
work would stay uncommitted while the job ends `done`. So each role git cannot name (author,
committer) gets a fallback identity through the environment, which takes precedence over
nothing else: a configured identity is always used as it is. The outcome says when the
fallback signed a commit, so the person sees it where they look.
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
GIT_SAFETY = (
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "commit.gpgSign=false"),
    *("-c", "gc.auto=0"),
    *("-c", "core.quotePath=false"),
    *("-c", "color.ui=never"),
)
# Variables that point git at another repository, index or diff program.
_REDIRECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_EXTERNAL_DIFF",
    "GIT_CEILING_DIRECTORIES",
)
FALLBACK_NAME = "specialists"
FALLBACK_EMAIL = "specialists@localhost"
FALLBACK = f"{FALLBACK_NAME} <{FALLBACK_EMAIL}>"


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


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTING}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


def fallback_env(knows: Callable[[str], bool]) -> dict[str, str]:
    """Environment for the roles git cannot name here; {} when it can name both.
    `knows("GIT_AUTHOR_IDENT")` runs `git var` for that role and says whether it succeeded."""
    env: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        if not knows(f"GIT_{role}_IDENT"):
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    return env
