"""Checkpoints: how a job whose supervisor died (kill -9, a crash) is restarted, not ended.

Only a remote job (executors/) can be taken over: its agent runs under the node's actor, not
as our child, and its output waits on the node until it is acknowledged. After each loop step
the supervisor writes a *checkpoint* (reattach.json, atomic): the job's status, how many
events it has written, where the agent's output was read to, the runner's own state at that
point, and the supervisor's state between runs (the answers so far, the follow-ups it holds,
the steers not yet acknowledged, what it waits for). Only then may the node drop that output.
When the job cannot be taken over (its runner cannot say what its parser had, an ending is
under way, its answer is too large) the checkpoint says why, and recovery ends the job with
that reason.

Crash recovery (store/recovery.py, under the job's lock) ends a dead job, or restarts it
through the start path (supervise/start.py `restart`) when its checkpoint allows it
(`revivable`): a supervisor in reattach mode, which inherits the lock. That successor restores
the status and its state from the checkpoint, reads on from its item and feeds the runner the
same output again. The events that output produces a second time are in events.jsonl
already: `Replay` recognises them and they are not written again, so each event is there
exactly once.

stdin writes: a write the runner makes while it reads the agent's output is made again by the
successor replaying that output, with the same number, so the node drops it. A write made for
a control request (a steer, a follow-up, a wake-up) is not: before the first of those in a
step, a checkpoint records `then: "requests"`, so a successor knows that the writes the node
applied after it are requests it will never see again, and numbers on after them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.base.errors import StoreError
from specialists.base.lazy import logger
from specialists.store.atomic import write_atomic
from specialists.store.files import read_object
from specialists.store.joblog import each_event
from specialists.store.jobs import CHECKPOINT_FILE
from specialists.store.writer import event_fields

if TYPE_CHECKING:
    from specialists.runners.base import HostedRunner
    from specialists.supervise.recorder import Recorder

log = logger("specialists.supervisor")

EXECUTOR_FILE = "executor.json"  # as executors/job.py writes it
MAX_CHECKPOINT = 4 * 1024 * 1024
VERSION = 2
# An answer is the result if the job ends; a checkpoint holding a huge one would be rewritten
# at every step, so past this size the job is not taken over (the reason says so).
MAX_ANSWER = 1024 * 1024
_NOT_COMPARED = ("seq", "ts")


class Checkpointer:
    """Writes one job's checkpoints; remembers the last, so an unchanged step writes none."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.path = recorder.job_dir / CHECKPOINT_FILE
        self.mark: tuple[Any, ...] | str | None = None  # the last written: a mark, or why not

    def take(
        self,
        runner: HostedRunner,
        then: str,
        *,
        ending: bool,
        answer: str | None,
        run_started_ms: int,
        job: dict[str, Any],
    ) -> None:
        """After a loop step (`then`: the agent's output is read next), or before the step's
        first control write (`then`: "requests"): record what a successor needs (`job`: the
        supervisor's state between runs), then let the node drop it."""
        j = self.recorder
        why = _why_not(runner, j.record.runner, j.status.status, ending, answer)
        taken = runner.checkpoint(adoptable=why is None)
        if taken is None:
            self._cannot(why or "the agent's process had ended")
            return
        cursor = taken["cursor"]
        mark = (cursor and (cursor["seq"], cursor["wseq"]), j.writer.seq, then)
        if mark == self.mark:
            return
        checkpoint = {
            "v": VERSION,
            "adoptable": True,
            "runner_name": j.record.runner,
            "events": j.writer.seq,
            "status": j.status.to_dict(),
            "run_started_ms": run_started_ms,
            "then": then,
            "job": job,
            **taken,
        }
        if self._write(checkpoint):
            self.mark = mark
        runner.committed(taken)

    def _cannot(self, why: str) -> None:
        if self.mark != why and self._write({"v": VERSION, "adoptable": False, "why": why}):
            self.mark = why

    def _write(self, checkpoint: dict[str, Any]) -> bool:
        """False when it cannot be written (a full disk): the old one would send a successor
        back to output the node has dropped, so it goes, and a crash ends the job as before."""
        try:
            write_atomic(self.path, json.dumps(checkpoint).encode())
            return True
        except OSError as exc:
            if self.mark != "unwritable":
                job = self.recorder.record.id
                log.warning("job %s: no checkpoint (%s): it cannot be taken over", job, exc)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.mark = "unwritable"
            return False


def _why_not(
    runner: HostedRunner, name: str, status: str, ending: bool, answer: str | None
) -> str | None:
    if not runner.adoptable:
        return f"the {name} runner cannot take over a running agent"
    if ending:
        return "the job was ending"
    if answer is not None and len(answer) > MAX_ANSWER:
        return f"its answer is over {MAX_ANSWER // 1024} KiB, too large for a checkpoint"
    if status not in ("running", "waiting"):
        return f"the job was {status}"
    return None


# --- the successor ----------------------------------------------------------------------


def revivable(job_dir: Path) -> bool | str:
    """Whether crash recovery may restart the job with a supervisor that takes it over: True;
    False when there is nothing to take over (a local job, or a remote one that died before
    its first checkpoint: it ends as an ordinary crash); or why it cannot be."""
    checkpoint = read_json(job_dir / CHECKPOINT_FILE)
    if checkpoint is None:
        return False
    if not checkpoint.get("adoptable"):
        return str(checkpoint.get("why") or "its last checkpoint cannot be taken over")
    if not (read_json(job_dir / EXECUTOR_FILE) or {}).get("proc"):
        return "executor.json names no agent process on the node"
    return True


def load(job_dir: Path, runner: str) -> dict[str, Any] | str:
    """The checkpoint a successor takes the job over from, or why it cannot."""
    checkpoint = read_json(job_dir / CHECKPOINT_FILE)
    if checkpoint is None or not checkpoint.get("adoptable"):
        return "is gone or damaged"
    if checkpoint.get("v") != VERSION:
        return f"is of version {checkpoint.get('v')!r}, not {VERSION}"
    if checkpoint.get("runner_name") != runner:
        return f"is of the {checkpoint.get('runner_name')!r} runner, not {runner!r}"
    return checkpoint


def written_after(job_dir: Path, seq: int) -> list[dict[str, Any]]:
    """The events written after event `seq` (the checkpoint's)."""
    return [e for e in each_event(job_dir / "events.jsonl") if e["seq"] > seq]


def read_json(path: Path, cap: int = MAX_CHECKPOINT) -> dict[str, Any] | None:
    """A small JSON object file, or None: missing, or damaged (a link, not a regular file,
    too big, not JSON: logged, and the job is then ended as an ordinary crash)."""
    try:
        return read_object(path, cap)
    except FileNotFoundError:
        return None
    except (StoreError, OSError) as exc:
        log.warning("%s not used: %s", path, exc)
        return None


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
