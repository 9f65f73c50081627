"""The bd client: one method per bd command we use, over the short-command seam.

The exact commands are listed in docs/beads.md. bd reports many failures (an unknown id, a
blocked close) on stderr with exit status 0 and no JSON, so every command asks for --json
and an empty answer counts as a failure. Every failure leaves as one `BeadsError` line.

`run` is the seam: `specialists.process.short.run_short` (argv, cwd=, timeout= -> a
CommandResult that never raises for what the command does: not installed, a timeout that
kills bd's whole group, a non-zero exit). Tests may pass a fake of the same shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specialists.features.beads.notes import LABEL, Bead, BeadsError, check_bead_id
from specialists.process.short import CommandResult, run_short

BD_TIMEOUT_S = 30.0
GIT_TIMEOUT_S = 5.0


ShortRun = Callable[..., CommandResult]  # the shape of run_short: tests pass a fake


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
