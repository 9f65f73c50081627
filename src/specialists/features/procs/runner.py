"""The proc runner: one background command (`sh -c`) as a job on the runner seam.

The command runs through the process seam in its own process group (R-J2), stdin from
/dev/null, stdout and stderr merged into one pipe so `output.log` has them in arrival order
(R-J3; procs/feed.py writes it). Its lines feed the watch batcher on this runner's clock
(the supervisor's: time.monotonic), and due batches become job_match events (procs/matches).

Ending, as R-J4 and R-J8 say:
- cancel (the supervisor's Abort or Terminate: bg_cancel, `specialists stop`, a lost tether)
  sends SIGTERM to the group, then SIGKILL to the group CANCEL_GRACE_S later, even when the
  shell has already exited (a descendant that ignored SIGTERM); a second cancel sends
  nothing. The job ends when the shell has exited and its group is empty, or at the SIGKILL.
- `timeout_ms` runs the same ladder; it counts only while the shell runs, so an inherited
  pipe held open after the shell exited cannot turn a finished command into a timeout.
- a shell that exits by itself ends the job as soon as its pipe is drained (process seam:
  at once when nothing more comes, at most DRAIN_LIMIT_S); what it left behind is killed by
  the supervisor's ending (nothing of a job outlives it).
Before it reports the exit, the runner writes its account to proc.json (procs/exit.py),
from which the supervisor's ending posts the one job_exit.

Under `isolate` the group's leader is bubblewrap, which dies of SIGTERM and takes its child
with SIGKILL (--die-with-parent); so the polite step signals the sandboxed processes, not
bwrap, and the command can clean up as it would unsandboxed.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, assert_never

from specialists.base.errors import AgentUnavailable, Bug, SpecialistsError
from specialists.base.owner import OWNER_ENV
from specialists.base.vocab import PROC_RUNNER
from specialists.features.procs.exit import ExitSummary, write_summary
from specialists.features.procs.feed import OutputFeed
from specialists.features.procs.isolate import bwrap_argv, find_bwrap
from specialists.features.procs.matches import MatchPoster
from specialists.features.procs.spec import OUTPUT_LOG, ProcOptions
from specialists.features.procs.tether import tether_alive
from specialists.features.procs.watch import MatchBatch, WatchBatcher, compile_watch
from specialists.process.agent import AgentProcess, describe_exit, exit_status
from specialists.process.spawn import signal_name
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    Command,
    CommandKind,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    not_accepted,
)
from specialists.store import proctree
from specialists.store.control import post_request

log = logging.getLogger("specialists.features.procs")

CANCEL_GRACE_S = 3.0  # R-J8: SIGTERM, this long, then SIGKILL
TETHER_EVERY_S = 1.0
SNAPSHOT_EVERY_S = 1.0  # watch counters copied to proc.json at most this often, for recovery
SHELL = "/bin/sh"
_RUNNING: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"abort"}


@dataclass
class _Escalation:
    reason: Literal["cancelled", "timeout"]
    kill_at: float
    killed: bool = False


class ProcRunner:
    name = PROC_RUNNER

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._spec: LaunchSpec | None = None
        self._options: ProcOptions | None = None
        self._proc: AgentProcess | None = None
        self._ended: AgentProcess | None = None  # the shell, after it exited
        self._feed: OutputFeed | None = None
        self._matches: MatchPoster | None = None
        self._pending: list[RunnerEvent] = []
        self._handle = AgentHandle()
        self._started = 0.0
        self._exited_at: float | None = None
        self._escalation: _Escalation | None = None
        self._cancel_reason = ""
        self._tether_checked = 0.0
        self._tether_lost = False
        self._snapshot_at = 0.0
        self._snapshot_seen: tuple[int, int, str | None] = (0, 0, None)
        self._told: set[str] = set()  # notices already given (watch stopped, log stopped)

    # --- AgentRunner -------------------------------------------------------------------

    @property
    def handle(self) -> AgentHandle:
        self._handle = self._handle.moved_to(self._proc.pid if self._proc else None, None)
        return self._handle

    def accepts(self) -> frozenset[CommandKind]:
        return _RUNNING if self._proc is not None else ALWAYS_ACCEPTED

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up" or command.kind == "steer":
            not_accepted(self.name, command)
        elif command.kind == "abort" or command.kind == "terminate":
            self._escalate("cancelled")
        elif command.kind == "close":
            return  # stdin is /dev/null: nothing to close
        elif command.kind == "kill":
            proc = self._proc or self._ended
            if proc is not None:
                proc.kill_job()
            if self._escalation is not None:
                self._escalation.killed = True
        else:
            assert_never(command)

    def start(self, spec: LaunchSpec) -> None:
        if self._spec is not None:
            raise Bug("the proc runner was started twice")
        options = ProcOptions.from_dict(dict(spec.options))
        s = options.settings
        batcher = WatchBatcher(
            compile_watch(list(options.watch)),
            debounce_ms=s.debounce_ms,
            batch_lines=s.batch_lines,
            per_min=s.per_min,
            associative=options.associative,
        )
        argv = [SHELL, "-c", options.command]
        if options.isolate:  # fails closed: no bwrap, no command (R-J13)
            argv = bwrap_argv(find_bwrap(spec.env.get("PATH")), Path(options.cwd), argv)
        feed = OutputFeed(spec.job_dir / OUTPUT_LOG, batcher)
        env = {**os.environ, **spec.env, OWNER_ENV: options.owner}
        env.pop("SPECIALISTS_JOB_ID", None)  # the command is not a job's agent: its owner is
        try:
            self._proc = AgentProcess(
                argv,
                cwd=Path(options.cwd),
                env=env,
                stdin_pipe=False,
                raw=True,
                merge_stderr=True,
                stderr_cap=None,
            )
        except AgentUnavailable as exc:
            feed.close()
            why = exc.message.removeprefix("cannot start agent: ")
            raise SpecialistsError(f"the command could not start: {why}") from None
        self._spec, self._options, self._feed = spec, options, feed
        self._matches = MatchPoster(spec.job_dir.parent.parent, spec.job_id, options)
        self._started = self._tether_checked = self.clock()
        shown = " ".join(options.label.split())
        self._pending.append(Activity("tool_execution", log=False, current_tool=f"sh({shown})"))

    def poll(self, timeout: float) -> list[RunnerEvent]:
        proc, feed = self._proc, self._feed
        if proc is not None and feed is not None:
            wait = 0.0 if self._pending else min(max(0.0, timeout), self._next_due_in())
            chunks = proc.read(wait)
            now = self.clock()
            now_ms = int(now * 1000)
            for chunk in chunks:
                if isinstance(chunk, bytes):
                    self._post(feed.add(chunk, now_ms))
            self._post(feed.batcher.due(now_ms))
            if self._exited_at is None and proc.poll_exit() is not None:
                self._exited_at = now  # the timeout stops here, whatever the pipes do
            self._check_limits(proc, now)
            self._tell_problems(feed)
            self._snapshot(feed, now)
            if proc.done and self._may_end(proc, now):
                self._end(proc, feed, now)
        out, self._pending = self._pending, []
        return out

    # --- the ending ----------------------------------------------------------------------

    def _escalate(self, reason: Literal["cancelled", "timeout"]) -> None:
        """R-J8's first step; a second call (a second cancel) sends nothing."""
        proc = self._proc
        if self._escalation is not None or proc is None:
            return
        self._escalation = _Escalation(reason, self.clock() + CANCEL_GRACE_S)
        assert self._options is not None
        if self._options.isolate:
            leader = proc.pid  # bwrap: the processes it sandboxes get the polite signal
            proctree.signal_each(
                [p for p in proctree.group_members(leader) if p.pid != leader], signal.SIGTERM
            )
        else:
            proc.signal_group(signal.SIGTERM)

    def _check_limits(self, proc: AgentProcess, now: float) -> None:
        assert self._options is not None
        timeout_ms = self._options.timeout_ms
        if (
            timeout_ms
            and self._escalation is None
            and self._exited_at is None
            and (now - self._started) * 1000 >= timeout_ms
        ):
            self._escalate("timeout")
        esc = self._escalation
        if esc is not None and not esc.killed and now >= esc.kill_at:
            esc.killed = True
            proc.signal_group(signal.SIGKILL)  # also after the shell's exit (R-J8)
        tether = self._options.tether
        if tether and not self._tether_lost and now - self._tether_checked >= TETHER_EVERY_S:
            self._tether_checked = now
            assert self._spec is not None
            if not tether_alive(tether, self._spec.job_dir.parent.parent):
                self._tether_lost = True
                self._cancel_reason = f"cancel_on_exit: {tether.describe()} ended"
                post_request(self._spec.job_dir, "stop", self._cancel_reason)

    def _may_end(self, proc: AgentProcess, now: float) -> bool:
        """After a cancel, the job waits for the group to empty, or for the SIGKILL."""
        esc = self._escalation
        if esc is None or esc.killed:
            return True
        return not proctree.group_members(proc.pid)

    def _end(self, proc: AgentProcess, feed: OutputFeed, now: float) -> None:
        assert self._spec is not None and self._options is not None
        self._post(feed.finish(int(now * 1000)))
        code, sig = exit_status(proc.returncode)
        esc = self._escalation
        kind = esc.reason if esc else ("signaled" if sig is not None else "exited")
        if kind == "timeout":
            reason = f"its limit is {(self._options.timeout_ms or 0) / 1000:g} s"
        else:
            reason = (self._cancel_reason or "on request") if kind == "cancelled" else ""
        summary = self._summary(feed, kind, reason, code, sig, now)
        try:
            write_summary(self._spec.job_dir, summary)
        except OSError as exc:  # a full disk: the job_exit falls back to the job's status
            log.warning("job %s: proc.json not written: %s", self._spec.job_id, exc)
        tail = feed.tail_text()
        feed.close()
        proc.release()
        self._proc, self._ended, self._feed = None, proc, None
        if kind == "exited" and code == 0:
            self._pending.append(RunFinished(text=tail))
        elif kind == "timeout":
            timeout_s = (self._options.timeout_ms or 0) / 1000
            self._pending.append(RunFinished(text=None, error=f"timeout after {timeout_s:g}s"))
        elif kind == "cancelled":
            self._pending.append(RunFinished(text=None, error="cancelled"))
        else:
            self._pending.append(RunFinished(None, error=describe_exit("command", code, sig, tail)))
        self._pending.append(AgentExited(code, sig))

    def _summary(
        self,
        feed: OutputFeed,
        kind: str | None,
        reason: str,
        code: int | None,
        sig: int | None,
        now: float,
    ) -> ExitSummary:
        end = self._exited_at if self._exited_at is not None else now
        b = feed.batcher
        return ExitSummary(
            kind=kind,
            exit_code=code,
            signal=signal_name(sig) if sig is not None else None,
            duration_ms=int((end - self._started) * 1000) if kind else None,
            lines=feed.lines,
            bytes=feed.bytes,
            logged=feed.logged,
            matched=b.matched,
            suppressed=b.suppressed,
            watch_stopped=b.stopped,
            log_problem=feed.log_problem,
            reason=reason,
        )

    # --- on the way ------------------------------------------------------------------------

    def _post(self, batches: list[MatchBatch]) -> None:
        if batches and self._matches is not None:
            self._matches.post(batches)

    def _next_due_in(self) -> float:
        """Seconds until something is due (a batch's debounce, the SIGKILL, a tether look)."""
        now = self.clock()
        due = [now + TETHER_EVERY_S]
        if self._feed is not None and (batch_ms := self._feed.batcher.next_due_ms()) is not None:
            due.append(batch_ms / 1000)
        if self._escalation is not None and not self._escalation.killed:
            due.append(self._escalation.kill_at)
        return max(0.0, min(due) - now)

    def _tell_problems(self, feed: OutputFeed) -> None:
        for problem in (feed.batcher.stopped, feed.log_problem):
            if problem and problem not in self._told:
                self._told.add(problem)
                self._pending.append(Activity("notice", {"message": problem}))

    def _snapshot(self, feed: OutputFeed, now: float) -> None:
        """Watch counters to proc.json when they changed, for recovery's job_exit."""
        b = feed.batcher
        seen = (b.matched, b.suppressed, b.stopped)
        if seen == self._snapshot_seen or now - self._snapshot_at < SNAPSHOT_EVERY_S:
            return
        self._snapshot_seen, self._snapshot_at = seen, now
        assert self._spec is not None
        try:
            write_summary(self._spec.job_dir, self._summary(feed, None, "", None, None, now))
        except OSError as exc:
            log.debug("job %s: proc.json snapshot not written: %s", self._spec.job_id, exc)
