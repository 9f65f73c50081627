"""The workflow runner: the workflow engine as a job's agent process.

The engine (`python -m specialists.workflows.engine <job_dir>`) is started through the same
process seam as any command agent, in its own process group. Its stdout is one JSON object
per line: `{"wf": "event", ...}` becomes a notice in events.jsonl (phases, launches, ends,
log lines), `{"wf": "result", "text": ...}` the job's answer, `{"wf": "error", "message":
...}` its error. Stop and timeout are the supervisor's, as for a command: SIGTERM to the
group, which the engine takes as "stop my children, write the receipt, exit".
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from specialists.errors import SpecialistsError
from specialists.executors.base import HostedProcess, spawn_agent
from specialists.jobs.files import create_private
from specialists.process.agent import exit_status
from specialists.runners.base import Activity, AgentExited, LaunchSpec, RunFinished
from specialists.runners.command import STDOUT_LOG, CommandRunner
from specialists.runners.oneshot import child_env
from specialists.vocab import WORKFLOW_RUNNER

MAX_LINE = 1024 * 1024


class WorkflowRunner(CommandRunner):
    name = WORKFLOW_RUNNER

    def __init__(self) -> None:
        super().__init__()
        self._line = b""
        self._result: str | None = None
        self._error: str | None = None

    def start(self, spec: LaunchSpec) -> None:
        if self._spec is not None:
            raise SpecialistsError("bug: workflow runner started twice")
        self._spec = spec
        argv = [sys.executable, "-m", "specialists.workflows.engine", str(spec.job_dir)]
        self._proc = spawn_agent(
            spec.host,
            argv,
            cwd=spec.cwd,
            env=child_env(spec),
            stderr_log=spec.job_dir / "stderr.log",
            raw=True,
            stderr_cap=None,
        )
        log_fd = create_private(Path(spec.job_dir) / STDOUT_LOG, os.O_WRONLY | os.O_TRUNC)
        self._log = os.fdopen(log_fd, "wb")
        self._proc.end_input()

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
        except ValueError:
            return  # a script's own print: kept in stdout.log, not an event
        if not isinstance(obj, dict):
            return
        kind = obj.pop("wf", None)
        if kind == "result":
            self._result = str(obj.get("text", ""))
        elif kind == "error":
            self._error = str(obj.get("message", "the workflow failed"))
        elif kind == "event":
            self._pending.append(Activity("notice", {"message": _event_text(obj), "workflow": obj}))

    def _on_exit(self, proc: HostedProcess) -> None:
        stderr_tail = proc.stderr_tail
        returncode = proc.returncode
        proc.release()
        if self._log is not None:
            self._log.close()
            self._log = None
        self._proc, self._ended = None, proc
        if returncode == 0 and self._result is not None:
            self._pending.append(RunFinished(text=self._result))
        else:
            error = self._error or proc.describe_exit("workflow engine")
            self._pending.append(RunFinished(text=None, error=error))
        code, sig = exit_status(returncode)
        self._pending.append(AgentExited(code, sig, stderr_tail))


def _event_text(event: dict[str, object]) -> str:
    kind = event.get("kind")
    key = event.get("key")
    if kind == "phase":
        return f"workflow phase {event.get('name')}"
    if kind == "log":
        return f"workflow: {event.get('message')}"
    if kind == "launch":
        return f"workflow child {key} launched as job {event.get('job')}"
    if kind == "end":
        return f"workflow child {key} {event.get('status')} (job {event.get('job')})"
    if kind == "cached":
        return f"workflow child {key} done in an earlier run (job {event.get('job')}); not re-run"
    if kind == "adopt":
        return f"workflow child {key}: waiting for job {event.get('job')} from the earlier run"
    if kind == "schema_retry":
        return f"workflow child {key}: answer does not satisfy its schema, asked once more"
    return f"workflow {kind}"
