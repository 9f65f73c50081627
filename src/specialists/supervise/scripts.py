"""A specialist's pre- and post-scripts: run in the job's cwd through the shell (they are the
user's own commands), output captured and capped, each reported as a `script` event.

Pre-scripts run before the agent starts; the output of those marked `inject_output` fills the
task's pre-script placeholder. A failing script is reported, and not fatal unless it is
marked `required` (the Node original's, 3.17): then the job ends `error` before its agent
starts, and the scripts after it do not run. Post-scripts run after a job that was not
cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.tuples import NamedTuple
from specialists.process.short import run_short
from specialists.store.records import JobRecord
from specialists.supervise.plan import PRE_SCRIPT_TOKEN

SCRIPT_TIMEOUT_S = 120.0
OUTPUT_CAP = 64 * 1024
Emit = Callable[..., None]  # emit(kind, **fields): append one event


class ScriptOutcome(NamedTuple):
    command: str
    exit_code: int | None  # None: could not start, timed out or killed by a signal
    output: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def run_script(command: str, cwd: Path) -> ScriptOutcome:
    result = run_short(
        ["/bin/sh", "-c", command], cwd=cwd, timeout=SCRIPT_TIMEOUT_S, output_cap=OUTPUT_CAP
    )
    if result.error is not None:
        return ScriptOutcome(command, None, result.stdout, result.error)
    error = None
    if result.code != 0:
        last = result.stderr.strip().splitlines()[-1:] or [""]
        error = f"exit {result.code}: {last[0][:300]}".rstrip(": ")
    return ScriptOutcome(command, result.code, result.stdout, error)


def run_pre_scripts(record: JobRecord, emit: Emit) -> tuple[str, str | None, bool]:
    """Run the pre-scripts; returns (the task to send, the last failure or None, whether
    that failure was a required script's: the job must not start)."""
    injected: list[str] = []
    failure: str | None = None
    for script in record.pre_scripts:
        outcome = _run(record, script, "pre", emit)
        if outcome.error:
            failure = f"pre-script {outcome.command!r} failed: {outcome.error}"
            if script.get("required"):
                return record.task, f"required {failure}", True
        if script.get("inject_output"):
            injected.append(outcome.output.rstrip())
    task = record.task.replace(PRE_SCRIPT_TOKEN, "\n\n".join(injected)).rstrip()
    return task, failure, False


def run_post_scripts(record: JobRecord, emit: Emit) -> None:
    for script in record.post_scripts:
        _run(record, script, "post", emit)


def _run(record: JobRecord, script: dict[str, object], phase: str, emit: Emit) -> ScriptOutcome:
    outcome = run_script(str(script["path"]), Path(record.cwd))
    emit(
        "script",
        phase=phase,
        command=outcome.command,
        exit_code=outcome.exit_code,
        error=outcome.error,
    )
    return outcome
