"""bash: run a command through the process seam with a timeout and bounded output.

The command runs in its own process group, marked with its job and SIGKILLed if the loop
thread that started it ends (process/agent.py). A timeout or an abort kills the group and
everything below the command, also what left the group (`setsid`). Output (stdout and stderr
merged) goes through the oversized-result guard as it arrives (`spill.bound_stream`, the one
mechanism every tool result passes): past `result_limits.max_chars` the whole output is
written to a spill file (at most 64 MiB of it) and the model reads head, a marker with the
path, and tail. When the command exits, output still held open by a background child is not
waited for.

The bash guard (R-B1..R-B5) looks at the command first: in `block` mode a command that would
hold the turn (a long sleep, a follower, a dev server) is refused with a reason that names
bg_run and sleep; in `warn` mode it runs and people get a notice.
"""

from __future__ import annotations

import codecs
import logging
import os
import signal
import time
from collections.abc import Iterator, Mapping
from typing import Any

from specialists.errors import AgentUnavailable
from specialists.events.spill import bound_stream
from specialists.native.tools.base import ToolContext, ToolFailure, ToolOutput, arg_str
from specialists.process.agent import AgentProcess
from specialists.toolset.bash_guard import classify_bash

DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    "Long output keeps its head and tail and the full text is saved to a file. Optionally "
    "provide a timeout in seconds. Do not use it to wait (sleep, tail -f, dev servers): "
    "use bg_run or sleep instead."
)
PARAMETERS = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds"},
    },
}
MAX_TIMEOUT_S = 3600.0
SPILL_CAP = 64 * 1024 * 1024
_REAP_WAIT_S = 5.0  # after SIGKILL: a process in uninterruptible sleep dies when it wakes
_SLICE_S = 0.1  # how often an abort is looked for while the command runs

log = logging.getLogger(__name__)


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    command = arg_str(args, "command")
    timeout = args.get("timeout")
    if timeout is None:
        timeout_s = ctx.bash_timeout_s  # R-B4: bash.defaultTimeoutSec unless the call says
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        timeout_s = min(float(timeout), MAX_TIMEOUT_S)
    else:
        raise ToolFailure("timeout must be a positive number of seconds")
    refused = _guard(command, ctx)
    if refused is not None:
        return refused
    return run_command(command, ctx, timeout_s)


def _guard(command: str, ctx: ToolContext) -> ToolOutput | None:
    """R-B1: block (an error result the model reads), warn (a notice), or off."""
    if ctx.bash_guard == "off":
        return None
    verdict = classify_bash(command, sleep_limit_s=ctx.bash_sleep_limit_s)
    if not verdict.flagged:
        return None
    if ctx.bash_guard == "block":
        return ToolOutput(verdict.reason, is_error=True)
    if ctx.notify is not None:
        ctx.notify(f"bash guard: `{verdict.pattern}` may hold the turn; running it (warn mode)")
    return None


def run_command(command: str, ctx: ToolContext, timeout_s: float) -> ToolOutput:
    try:
        proc = AgentProcess(
            ["bash", "-c", command],
            cwd=ctx.cwd,
            env=ctx.env,
            stdin_pipe=False,
            raw=True,
            merge_stderr=True,
        )
    except AgentUnavailable as exc:
        raise ToolFailure(f"cannot start bash: {exc.one_line()}") from exc
    ctx.process_groups.add(proc.pid)
    pump = _Pump(proc, ctx, timeout_s)
    try:
        text = bound_stream(pump.pieces(), ctx.spill_dir, "bash", ctx.result_limits)
    finally:
        proc.release()
    if pump.dropped:
        text += f"\n[{pump.dropped} more bytes not kept: the spill file is capped at 64 MiB]"
    code = proc.returncode
    if pump.outcome == "timeout":
        text += f"\n[timed out after {timeout_s:g} s; process group killed]"
    elif pump.outcome == "cancelled":
        text += "\n[aborted; process group killed]"
    elif code != 0:
        text += f"\n[exit code {code}]"
    else:
        return ToolOutput(text or "(no output)", bounded=True)
    return ToolOutput(text, is_error=True, bounded=True)


class _Pump:
    """Read until the command has exited and its output is drained (the process seam's one
    limit: a background child holding the pipe open is not waited for), or until the timeout
    or an abort, which kill the command's group and every process below it. Output leaves as
    decoded text pieces (a character split across reads is kept whole)."""

    def __init__(self, proc: AgentProcess, ctx: ToolContext, timeout_s: float) -> None:
        self.proc, self.ctx, self.timeout_s = proc, ctx, timeout_s
        self.outcome = "exited"
        self.kept = 0
        self.dropped = 0

    def pieces(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        deadline = time.monotonic() + self.timeout_s
        proc = self.proc
        while not proc.done:
            if self.ctx.cancel.is_set():
                _kill(proc)
                self.outcome = "cancelled"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _kill(proc)
                self.outcome = "timeout"
                break
            for chunk in proc.read(min(_SLICE_S, remaining)):
                if isinstance(chunk, bytes) and chunk:
                    room = SPILL_CAP - self.kept
                    self.dropped += max(0, len(chunk) - room)
                    if room > 0:
                        self.kept += min(room, len(chunk))
                        yield decoder.decode(chunk[:room])
        yield decoder.decode(b"", final=True)


def _kill(proc: AgentProcess) -> None:
    # SIGKILL at once, tree first: once the shell is gone, its children are orphans that can
    # no longer be told from the job's other processes (those die with the job).
    proc.kill_tree()
    proc.wait(_REAP_WAIT_S)


def kill_process_groups(groups: set[int]) -> None:
    """SIGKILL what is left of the job's bash commands (`cmd &` children, daemons)."""
    for pgid in sorted(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            continue  # already gone
        except PermissionError as exc:
            log.warning("cannot kill process group %s: %s", pgid, exc)
    groups.clear()
