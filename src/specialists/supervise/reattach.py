"""A supervisor that takes over a running remote job whose supervisor died (kill -9, a crash).

Only a remote job (executors/) can be taken over: its agent runs under the node's actor, not
as our child, and its output waits on the node until it is acknowledged. After each loop step
that read or wrote something, the supervisor writes a *checkpoint* (reattach.json, atomic):
the job's status, how many events it has written, where the agent's output was read to, and
the runner's own state at that point. Only then may the node drop that output. A successor,
started by crash recovery (jobs/recovery.py, through news.py and revive.py), restores the
status from the checkpoint, reads on from its item and feeds the runner the same output
again. The events that output produces a second time are in events.jsonl already: `Replay`
recognises them and they are not written again, so each event is there exactly once.

A job can be taken over in any run, and while it waits between runs (for a follow-up, or for
the events of pending work), as long as no ending is under way and its runner can say what its
parser had at the checkpoint (executors/job.py `Adoptable`: command, the native relay, pi,
Claude Code, Codex). The supervisor's own state between runs (the answers so far, the
follow-ups it holds, the steers not yet acknowledged, what it waits for) is in the
checkpoint too. Otherwise the checkpoint says why not, and recovery ends the job as before,
with that reason.

stdin writes: a write the runner makes while it reads the agent's output is made again by the
successor replaying that output, with the same number, so the node drops it. A write made for
a control request (a steer, a follow-up, a wake-up) is not: before the first of those in a
step, a checkpoint records `then: "requests"`, so a successor knows that the writes the node
applied after it are requests it will never see again, and numbers on after them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specialists.base.errors import SpecialistsError
from specialists.runners.base import HostedRunner
from specialists.store.atomic import write_atomic
from specialists.store.joblog import read_event_lines
from specialists.store.jobs import now_ms
from specialists.store.liveness import process_start_time
from specialists.store.records import JobStatus
from specialists.store.writer import event_fields
from specialists.supervise.agent_spec import launch_spec
from specialists.supervise.controls import Controls
from specialists.supervise.revive import CHECKPOINT_FILE, read_json

if TYPE_CHECKING:
    from specialists.supervise.hooks import Companion

log = logging.getLogger("specialists.supervisor")

_NOT_COMPARED = ("seq", "ts")
VERSION = 2
# An answer is the result if the job ends; a checkpoint holding a huge one would be rewritten
# at every step, so past this size the job is not taken over (the reason says so).
MAX_ANSWER = 1024 * 1024


def _key(event: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in event.items() if k not in _NOT_COMPARED}, sort_keys=True, default=str
    )


class Replay:
    """The events written after the checkpoint, which the replayed output produces again.

    Each event the successor would write is looked for among them: found, it is dropped
    (it is there already); not found, the replay is over and it is written. The search is by
    content, not position, so an event the dead supervisor wrote of its own accord in between
    (a control request's ack) does not end the replay."""

    def __init__(self, written: list[dict[str, Any]]) -> None:
        self._left = [_key(e) for e in written]

    @property
    def over(self) -> bool:
        return not self._left

    def seen(self, kind: str, fields: Mapping[str, Any]) -> bool:
        if not self._left:
            return False
        key = _key({"event": kind, **event_fields(fields)})
        if key in self._left:
            self._left.remove(key)
            return True
        log.info("replay over: %d written event(s) not produced again", len(self._left))
        self._left = []
        return False


class Checkpoints(Controls):
    companions: list[Companion]  # the supervisor's

    def _setup_checkpoints(self, *, reattach: bool) -> None:
        self.reattach = reattach
        self._checkpointed: tuple[Any, ...] | str | None = None  # a mark, or why not

    # --- while the job runs -------------------------------------------------------------

    def _checkpoint(self, then: str = "output") -> None:
        """After a loop step (`then`: the agent's output is read next), or before the step's
        first control write (`then`: "requests"): record what a successor needs, then let
        the node drop it."""
        runner = self.runner
        if not isinstance(runner, HostedRunner) or self.finished:
            return
        why = self._why_not_adoptable(runner)
        taken = runner.checkpoint(adoptable=why is None)
        if taken is None:
            self._cannot_adopt(why or "the agent's process had ended")
            return
        cursor = taken["cursor"]
        mark = (cursor and (cursor["seq"], cursor["wseq"]), self.writer.seq, then)
        if mark == self._checkpointed:
            return
        run_ms = now_ms() - int((self.clock() - self._run_started_mono) * 1000)
        checkpoint = {
            "v": VERSION,
            "adoptable": True,
            "runner_name": self.record.runner,
            "events": self.writer.seq,
            "status": self.status.to_dict(),
            "run_started_ms": run_ms,
            "then": then,
            "job": self._job_state(),
            **taken,
        }
        try:
            write_atomic(self.job_dir / CHECKPOINT_FILE, json.dumps(checkpoint).encode())
        except OSError as exc:
            self._no_checkpoint(exc)
        else:
            self._checkpointed = mark
        runner.committed(taken)

    def _before_control_writes(self) -> None:
        self.guard.run("checkpoint", lambda: self._checkpoint("requests"))

    def _job_state(self) -> dict[str, Any]:
        """The supervisor's part of a checkpoint: what is not in status.json."""
        idle = self._idle_since
        return {
            "last_answer": self.last_answer,
            "answers": self._answers,
            "held": [list(h) for h in self.held],
            "steers_out": list(self._steers_out),
            "interrupted": self._interrupted,
            "waiting_for_work": self.waiting_for_work,
            "why": self.why,
            "delivery": self.delivery,
            "yielded": self.yielded,
            "nudged": self.nudged,
            "idle_s": None if idle is None else round(self.clock() - idle, 3),
            "words": self.words.state(),
        }

    def _no_checkpoint(self, exc: OSError) -> None:
        """The checkpoint cannot be written (a full disk): the old one would send a successor
        back to output the node has dropped, so it goes, and a crash ends the job as before."""
        if self._checkpointed != "unwritable":
            log.warning("job %s: no checkpoint (%s): it cannot be taken over", self.record.id, exc)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.job_dir / CHECKPOINT_FILE)
        self._checkpointed = "unwritable"

    def _why_not_adoptable(self, runner: HostedRunner) -> str | None:
        if not runner.adoptable:
            return f"the {self.record.runner} runner cannot take over a running agent"
        if self._ending is not None:
            return "the job was ending"
        if self.last_answer is not None and len(self.last_answer) > MAX_ANSWER:
            return f"its answer is over {MAX_ANSWER // 1024} KiB, too large for a checkpoint"
        if self.status.status not in ("running", "waiting"):
            return f"the job was {self.status.status}"
        return None

    def _cannot_adopt(self, why: str) -> None:
        if self._checkpointed == why:
            return
        checkpoint = {"v": VERSION, "adoptable": False, "why": why}
        try:
            write_atomic(self.job_dir / CHECKPOINT_FILE, json.dumps(checkpoint).encode())
        except OSError as exc:
            self._no_checkpoint(exc)
            return
        self._checkpointed = why

    # --- the successor -------------------------------------------------------------------

    def _resume(self) -> None:
        """Take the job over from its last checkpoint (instead of `_begin`)."""
        checkpoint = read_json(self.job_dir / CHECKPOINT_FILE)
        if checkpoint is None or not checkpoint.get("adoptable"):
            self._finish("error", "supervisor crashed (its checkpoint is gone or damaged)")
            return
        why = _not_ours(checkpoint, self.record.runner)
        if why is not None:
            self._finish("error", f"supervisor crashed (its checkpoint {why})")
            return
        try:
            self.status = JobStatus.from_dict(dict(checkpoint["status"]), source=CHECKPOINT_FILE)
            self._restore_job(checkpoint["job"])
            cursor = checkpoint["cursor"]
            events = int(checkpoint["events"])
        except (SpecialistsError, KeyError, TypeError, ValueError) as exc:
            self._finish("error", f"supervisor crashed (its checkpoint is unreadable: {exc!r})")
            return
        st, pid = self.status, os.getpid()
        for companion in self.companions:
            companion.use_status(st)
        st.supervisor_pid, st.supervisor_start_time = pid, process_start_time(pid)
        since = max(0, now_ms() - int(checkpoint.get("run_started_ms") or st.started_at_ms))
        self._run_started_mono = self.clock() - since / 1000
        written = [e for e in self._written_events() if e["seq"] > events]
        runner = self.runner
        assert isinstance(runner, HostedRunner)
        try:
            runner.adopt(launch_spec(self.record, self.job_dir, self.record.task), checkpoint)
        except (SpecialistsError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
            self._finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
            return
        except (KeyError, TypeError, ValueError) as exc:
            why = f"its checkpoint is damaged: {exc!r}"
            self._finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
            return
        if cursor is None:
            self._notice(
                f"the supervisor restarted and took the job over between runs on the "
                f"{runner.node} (no agent process was running)"
            )
        else:
            self._notice(
                f"the supervisor restarted and reattached to the agent (pid {cursor['pid']}) "
                f"on the {runner.node}; its output is read again from item {cursor['seq']} "
                f"({len(written)} event(s) after the checkpoint are not written twice)"
            )
        self.replay = Replay(written)
        self._checkpointed = None
        self._save(force=True)

    def _restore_job(self, job: Mapping[str, Any]) -> None:
        answer = job["last_answer"]
        self.last_answer = None if answer is None else str(answer)
        self._answers = int(job["answers"])
        self.held = deque((str(i), str(m)) for i, m in job["held"])
        self._steers_out = deque(str(i) for i in job["steers_out"])
        self._interrupted = bool(job["interrupted"])
        self.waiting_for_work, self.why = bool(job["waiting_for_work"]), str(job["why"])
        delivery = job["delivery"]
        if delivery not in (None, "supervisor", "agent", "none"):
            raise ValueError(f"unknown delivery {delivery!r}")
        self.delivery = delivery
        self.yielded, self.nudged = bool(job["yielded"]), bool(job["nudged"])
        idle = job["idle_s"]
        self._idle_since = None if idle is None else self.clock() - float(idle)
        self._recheck_at = self.clock()  # a job waiting for work looks again at once
        if "words" in job:  # absent from a checkpoint written before words were kept
            self.words.restore(job["words"])

    def _written_events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        offset = 0
        while True:
            more, after = read_event_lines(self.job_dir / "events.jsonl", offset)
            events += [e for e in more if isinstance(e.get("seq"), int)]
            if after == offset:
                return events
            offset = after


def _not_ours(checkpoint: Mapping[str, Any], runner: str) -> str | None:
    """Why a checkpoint cannot be this job's: another version, another runner."""
    if checkpoint.get("v") != VERSION:
        return f"is of version {checkpoint.get('v')!r}, not {VERSION}"
    if checkpoint.get("runner_name") != runner:
        return f"is of the {checkpoint.get('runner_name')!r} runner, not {runner!r}"
    return None
