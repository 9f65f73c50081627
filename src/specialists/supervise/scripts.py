"""Pre- and post-scripts of a specialist: run with the job's cwd, output captured and capped."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPT_TIMEOUT_S = 120.0
OUTPUT_CAP = 64 * 1024


@dataclass(frozen=True)
class ScriptOutcome:
    command: str
    exit_code: int | None  # None: could not start or timed out
    output: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def run_script(command: str, cwd: Path, env: dict[str, str] | None = None) -> ScriptOutcome:
    """Run one script line through the shell (scripts are the user's own commands)."""
    try:
        proc = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=SCRIPT_TIMEOUT_S,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        partial = (exc.stdout or b"")[-OUTPUT_CAP:].decode("utf-8", "replace")
        return ScriptOutcome(command, None, partial, f"timed out after {SCRIPT_TIMEOUT_S:.0f}s")
    except OSError as exc:
        return ScriptOutcome(command, None, "", f"could not start: {exc}")
    output = proc.stdout[-OUTPUT_CAP:].decode("utf-8", "replace")
    error = None
    if proc.returncode != 0:
        last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        error = f"exit {proc.returncode}: {last[0][:300]}".rstrip(": ")
    return ScriptOutcome(command, proc.returncode, output, error)
