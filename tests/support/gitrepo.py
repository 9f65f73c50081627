"""Small helpers for tests that drive real git repositories (the sandbox room)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from specialists.features.sandbox.cmd import GitResult, run_command


def git(cwd: Path, *args: str) -> str:
    """Run git as a user would (hooks and all); its stdout. Fails the test on error."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


def sha(cwd: Path, rev: str = "HEAD") -> str:
    return git(cwd, "rev-parse", rev).strip()


def commit_files(cwd: Path, files: Mapping[str, str], message: str = "edit") -> str:
    for name, text in files.items():
        path = cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)
    return sha(cwd)


def status(cwd: Path) -> str:
    return git(cwd, "status", "--porcelain", "--untracked-files=all")


class RecordingRunner:
    """`run_command` that records every argv and can act just before a matching command runs
    (to play a concurrent process at the worst moment)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.before: list[tuple[Callable[[tuple[str, ...]], bool], Callable[[], None]]] = []
        self.after: list[tuple[Callable[[tuple[str, ...]], bool], Callable[[], None]]] = []

    def on(
        self,
        match: Callable[[tuple[str, ...]], bool],
        action: Callable[[], None],
        *,
        after: bool = False,
    ) -> None:
        """Run `action` once, just before (or after) the first command `match` accepts."""
        (self.after if after else self.before).append((match, action))

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> GitResult:
        args = tuple(argv)
        self.calls.append(args)
        self._fire(self.before, args)
        result = run_command(args, cwd=cwd, timeout_s=timeout_s, stdin=stdin, env=env)
        self._fire(self.after, args)
        return result

    @staticmethod
    def _fire(hooks: list, args: tuple[str, ...]) -> None:
        for hook in list(hooks):
            if hook[0](args):
                hooks.remove(hook)
                hook[1]()

    def git_subcommands(self) -> list[str]:
        """The git subcommand of each call (after the `-c` options)."""
        out = []
        for args in self.calls:
            rest = list(args[1:])
            while rest[:1] == ["-c"]:
                rest = rest[2:]
            out.append(rest[0] if rest else "")
        return out
