"""The workflow runner: the workflow engine as a job's agent process.

The engine (`python -m specialists.workflows.engine <job_dir>`) is started through the same
process seam as any command agent, in its own process group. Its stdout is one JSON object
per line: `{"wf": "event", ...}` becomes a notice in events.jsonl (phases, launches, ends,
log lines); `{"wf": "progress", ...}` is the run's progress (workflows/progress.py), kept in
status.json; `{"wf": "result", "file": ...}` says the job's answer is in workflow-result.json
(a result can be far larger than a line should be); `{"wf": "error", "message": ...}` is its
error. Stop and timeout are the supervisor's, as for a command: SIGTERM to the
group, which the engine takes as "stop my children, write the receipt, exit".
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Mapping

from specialists.errors import StoreError
from specialists.executors.base import HostedProcess
from specialists.runners.base import Activity, LaunchSpec, RunFinished
from specialists.runners.command import CommandRunner
from specialists.vocab import WORKFLOW_RUNNER

MAX_LINE = 1024 * 1024
MAX_RESULT = 256 * 1024 * 1024
RESULT_FILE = "workflow-result.json"  # the engine's (workflows/engine.py)


class WorkflowRunner(CommandRunner):
    name = WORKFLOW_RUNNER

    def __init__(self) -> None:
        super().__init__()
        self._line = b""
        self._result: str | None = None
        self._error: str | None = None

    def _argv(self, spec: LaunchSpec, env: Mapping[str, str]) -> list[str]:
        return [sys.executable, "-m", "specialists.workflows.engine", str(spec.job_dir)]

    def _stdin(self, spec: LaunchSpec) -> bytes:
        return b""  # the engine reads its workflow from job.json

    def _on_stdout(self, chunk: bytes) -> None:
        assert self._log is not None
        self._log.write(chunk)
        self._log.flush()
        self._line += chunk
        *lines, self._line = self._line.split(b"\n")
        if len(self._line) > MAX_LINE:
            self._line = b""
        for line in lines:
            self._on_line(line)

    def _on_line(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return  # a script's own print: kept in stdout.log, not an event
        if not isinstance(obj, dict):
            return
        kind = obj.pop("wf", None)
        if kind == "result":
            self._result = self._read_result()
        elif kind == "error":
            self._error = str(obj.get("message", "the workflow failed"))
        elif kind == "event":
            self._pending.append(Activity("notice", {"message": _event_text(obj), "workflow": obj}))
        elif kind == "progress":  # status-only: the views' done / running / queued of total
            self._pending.append(Activity("progress", obj, log=False))

    def _read_result(self) -> str | None:
        """The engine's result file (its own job dir; never a link, at most 256 MiB)."""
        from specialists.jobs.files import read_bytes

        assert self._spec is not None
        path = self._spec.job_dir / RESULT_FILE
        try:
            return read_bytes(path, MAX_RESULT).decode("utf-8", "replace")
        except (OSError, StoreError) as exc:
            self._error = f"the workflow's result cannot be read: {exc}"
            return None

    def _finished(self, returncode: int | None, proc: HostedProcess) -> RunFinished:
        if returncode == 0 and self._result is not None:
            return RunFinished(text=self._result)
        return RunFinished(text=None, error=self._error or proc.describe_exit("workflow engine"))


_TEXTS = {
    "start": "workflow started: up to {concurrency} children at once",
    "phase": "workflow phase {name}",
    "log": "workflow: {message}",
    "launch": "workflow child {key} launched as job {job}",
    "end": "workflow child {key} {status} (job {job})",
    "cached": "workflow child {key} done in an earlier run (job {job}); not re-run",
    "adopt": "workflow child {key}: waiting for job {job} from the earlier run",
    "schema_retry": "workflow child {key}: answer does not satisfy its schema, asked once more",
}


def _event_text(event: dict[str, object]) -> str:
    text = _TEXTS.get(str(event.get("kind")), "workflow {kind}")
    return text.format_map(collections.defaultdict(str, {k: str(v) for k, v in event.items()}))
