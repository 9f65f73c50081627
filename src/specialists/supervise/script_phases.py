"""A job's pre- and post-scripts, in order, each reported as a `script` event.

Pre-scripts run before the agent starts; the output of those marked `inject_output` fills the
task's pre-script placeholder. A failing script is reported, and not fatal unless it is
marked `required` (the Node original's, 3.17): then the job ends `error` before its agent
starts, and the scripts after it do not run. Post-scripts run after a job that was not
cancelled. Running one script is supervise/scripts.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.store.records import JobRecord
from specialists.supervise.plan import PRE_SCRIPT_TOKEN
from specialists.supervise.scripts import ScriptOutcome, run_script

Emit = Callable[..., None]  # emit(kind, **fields): append one event


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
