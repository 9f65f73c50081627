"""Pre- and post-scripts of a specialist: run with the job's cwd, output captured and capped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specialists.process.short import run_short

SCRIPT_TIMEOUT_S = 120.0
OUTPUT_CAP = 64 * 1024


@dataclass(frozen=True)
class ScriptOutcome:
    command: str
    exit_code: int | None  # None: could not start, timed out or killed by a signal
    output: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def run_script(command: str, cwd: Path, env: dict[str, str] | None = None) -> ScriptOutcome:
    """Run one script line through the shell (scripts are the user's own commands)."""
    result = run_short(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        timeout=SCRIPT_TIMEOUT_S,
        output_cap=OUTPUT_CAP,
    )
    if result.error is not None:
        return ScriptOutcome(command, None, result.stdout, result.error)
    error = None
    if result.code != 0:
        last = result.stderr.strip().splitlines()[-1:] or [""]
        error = f"exit {result.code}: {last[0][:300]}".rstrip(": ")
    return ScriptOutcome(command, result.code, result.stdout, error)
