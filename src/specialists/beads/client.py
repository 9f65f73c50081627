"""The bd client: one method per bd command we use, over the short-command seam.

The exact commands are listed in docs/beads.md. bd reports many failures (an unknown id, a
blocked close) on stderr with exit status 0 and no JSON, so every command asks for --json
and an empty answer counts as a failure. Every failure leaves as one `BeadsError` line.

`run` is the seam: a function with the shape of `specialists.process.short.run_short`
(argv, cwd=, timeout= -> a result with ok, code, stdout, stderr, error, describe()).
Tests pass a fake; by default it is `run_short` below.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from specialists.beads.notes import LABEL, Bead, BeadsError, check_bead_id

BD_ENV = "SPECIALISTS_BD_BIN"
BD_TIMEOUT_S = 30.0
GIT_TIMEOUT_S = 5.0


class ShortResult(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...

    def describe(self, shown: str | None = None) -> str: ...


ShortRun = Callable[..., ShortResult]


@dataclass(frozen=True)
class _Result:
    """The shape of process.short.CommandResult, for the stand-in below."""

    argv: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.code == 0

    def describe(self, shown: str | None = None) -> str:
        shown = shown or " ".join([os.path.basename(self.argv[0]), *self.argv[1:2]])
        if self.error is not None:
            return f"`{shown}` {self.error}"
        last = [ln.strip() for ln in self.stderr.splitlines() if ln.strip()][-1:]
        what = f"`{shown}` exited with code {self.code}"
        return f"{what}: {last[0][:300]}" if last else what


def run_short(
    argv: Sequence[str], *, cwd: Path | None = None, timeout: float = BD_TIMEOUT_S
) -> ShortResult:
    """Stand-in for specialists.process.short.run_short (the shared short-command helper,
    which kills the whole group on timeout): never raises for what the command does."""
    shown = tuple(argv)
    try:
        proc = subprocess.run(
            shown,
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        return _Result(shown, None, "", "", "is not installed or not on PATH")
    except PermissionError:
        return _Result(shown, None, "", "", "is not executable")
    except subprocess.TimeoutExpired:
        return _Result(shown, None, "", "", f"timed out after {timeout:g}s")
    except OSError as exc:
        return _Result(shown, None, "", "", f"could not start: {exc.strerror or exc}")
    return _Result(shown, proc.returncode, proc.stdout, proc.stderr)


def bd_path(which: Callable[[str], str | None] | None = None) -> str | None:
    """The bd executable: $SPECIALISTS_BD_BIN, else `bd` on PATH. No process is started."""
    if which is None:
        import shutil

        which = shutil.which
    configured = os.environ.get(BD_ENV)
    if configured:
        return configured if os.path.exists(configured) else which(configured)
    return which("bd")


def project_uses_beads(cwd: Path) -> bool:
    if os.environ.get("BEADS_DIR"):
        return True
    here = cwd.resolve()
    return any((d / ".beads").is_dir() for d in (here, *here.parents))


class BeadsClient:
    """One method per bd command used."""

    def __init__(self, bd: str, cwd: Path, run: ShortRun = run_short) -> None:
        self.bd = bd
        self.cwd = cwd
        self.run = run

    def _json(self, args: list[str]) -> Any:
        shown = "bd " + " ".join(args[:1])
        result = self.run([self.bd, *args], cwd=self.cwd, timeout=BD_TIMEOUT_S)
        if not result.ok:
            raise BeadsError(result.describe(shown))
        out = result.stdout.strip()
        if not out:
            stderr = " ".join(result.stderr.split())[-300:]
            raise BeadsError(f"`{shown}` gave no answer: {stderr or 'no message'}")
        try:
            return json.loads(out)
        except ValueError:
            # Some versions print a notice before the JSON: take the last line that parses.
            for line in reversed(out.splitlines()):
                try:
                    return json.loads(line)
                except ValueError:
                    continue
        raise BeadsError(f"`{shown}` did not answer JSON: {out[:120]!r}")

    def create(self, title: str, description: str) -> str:
        args = ["create", title, "--description", description, "--type", "task"]
        answer = self._json([*args, "--labels", LABEL, "--json"])
        return Bead.from_json(answer).id

    def show(self, bead_id: str) -> Bead:
        return Bead.from_json(self._json(["show", check_bead_id(bead_id), "--json"]))

    def append_notes(self, bead_id: str, text: str) -> None:
        self._json(["update", check_bead_id(bead_id), "--append-notes", text, "--json"])

    def close(self, bead_id: str, reason: str) -> None:
        self._json(["close", check_bead_id(bead_id), "--reason", reason, "--json"])


def git_head(cwd: Path, run: ShortRun = run_short) -> str | None:
    result = run(["git", "rev-parse", "HEAD"], cwd=cwd, timeout=GIT_TIMEOUT_S)
    sha = result.stdout.strip()
    return sha if result.ok and sha else None
