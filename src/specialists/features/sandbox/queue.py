"""A merge queue: sibling sandboxes merged one at a time into one target (issue 23 item 4).

    .specialists/merges/<queue id>/    a kind of Record (store/record.py)
      queue.json                       the plan and each member's state, replaced whole
      log.jsonl                        one line per step, for `merge show`
      lock                             every step runs under it

The members are the finished sandboxes of one parent (its threads, a workflow's worktree
children) or the ones named. Before anything moves, each one's changed files are compared
with every other's (`overlaps`). The queue then assembles its result in a sandbox of its own
(`sandbox-<queue id>`, from the target's HEAD): each member is squashed into it, all or
nothing (`GitSandbox.squash_into`, with every refusal of R-S5..R-S7), and each waiting member
whose files overlap what just landed is merged onto the new tip in git's object store, so a
conflict shows (and its resolver starts) while the rest keep landing; a clean one is rebased
onto the tip when its turn comes, just before its squash. A member disjoint from everything
landed before it needs no rebase: git's three-way merge of disjoint files is exact.

A conflict goes to a resolver specialist, a job started through the one start path in a
sandbox of its own that holds the merge with git's conflict markers (resolver.py); when it
ends, its commit becomes the member's rebased branch and the member lands next. Nothing
reaches the target until `land`: into a sandbox target (a sandboxed parent) the result is
committed; into the user's working copy it is staged only, after the person confirms (R-S5,
R-S8).

Every step is journaled in queue.json before it changes git and checked against git after, so
a queue killed at any point is finished by `advance` again (`merge run`).

This module holds the queue's record (its members' states, its store), which members it takes
and in what order; the steps: queue_driver.py; the git under them: queue_git.py.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.features.sandbox.backend import Sandbox
from specialists.features.sandbox.rules import is_id
from specialists.store.fields import EMPTY, Declared
from specialists.store.file_record import FileRecord

QUEUES_DIR = "merges"
DOC = "queue"
LOG = "log"
SCHEMA = 1
MAX_MEMBERS = 100
MAX_ROUNDS = 3  # resolver runs per member
QUEUE_END = frozenset({"landed", "failed", "cancelled"})


class Member(Declared):
    _what = "merge queue member"
    sandbox: str
    ref: str  # what the caller named: a thread, a job or the sandbox itself
    job: str | None  # the job that worked in it
    files: list[str]  # changed against its base, when queued
    size: int  # lines changed (the default order)
    tip: str  # its branch now: when queued, then after each rebase
    created_at_ms: int = 0
    state: str = "queued"  # queued rebasing landing resolving landed conflict failed
    step: dict[str, Any] | None = None  # the step under way, journaled before it acts
    landed: str | None = None  # the commit its squash made in the queue's sandbox
    conflict: list[str] = EMPTY
    resolver: dict[str, Any] | None = None  # sandbox, job, onto, paths, final
    rounds: int = 0  # resolver runs since queued (or retried): at most MAX_ROUNDS
    resolver_runs: int = 0  # across retries: names each one's sandbox, never reused
    problem: str | None = None


class Queue(Declared):
    """queue.json, replaced whole at each step (its schema is checked by its Record)."""

    _what = "damaged merge queue record"
    schema: int = SCHEMA
    id: str
    created_at_ms: int
    owner: str
    target: str  # the working copy it lands in
    into_sandbox: bool  # the target is a sandbox (commit) rather than the user's (stage)
    parent: str | None  # that sandbox's id
    integration: str  # the queue's own sandbox
    base: str  # the target's HEAD when the queue began
    order: str
    resolver: str | None  # the specialist a conflict goes to; None: conflicts stay
    land: bool  # land into a sandbox target by itself once merged
    members: list[Member]
    overlaps: list[dict[str, Any]] = EMPTY
    state: str = "running"  # running waiting merged landed failed cancelled
    landing: dict[str, Any] | None = None
    problem: str | None = None

    def member(self, sandbox: str) -> Member:
        return next(m for m in self.members if m.sandbox == sandbox)

    def tally(self) -> dict[str, int]:
        return dict(Counter(m.state for m in self.members))

    def describe(self) -> str:
        tally = ", ".join(f"{n} {state}" for state, n in sorted(self.tally().items()))
        head = f"merge queue {self.id}: {self.state} ({tally})"
        if self.state == "merged" and not self.into_sandbox:
            head += f"; land it in {self.target} with `specialists merge land {self.id}`"
        return head + (f"; {self.problem}" if self.problem else "")


@dataclass(frozen=True)
class Candidate:
    """A sandbox the caller asked to merge, as found now."""

    ref: str
    sandbox: Sandbox
    job: str | None
    state: str  # running finalizing finished (R-S5)
    auto_commit: bool


def new_queue_id() -> str:
    return "q-" + os.urandom(6).hex()


def resolver_sandbox_id(queue_id: str, index: int, round_: int) -> str:
    return f"{queue_id}-{index}r{round_}"


def queue_of_sandbox(sandbox_id: str | None) -> str | None:
    """The queue whose resolver works in `sandbox_id`, or None."""
    if not sandbox_id or not sandbox_id.startswith("q-") or len(sandbox_id) < 15:
        return None
    qid, rest = sandbox_id[:14], sandbox_id[14:]
    return qid if rest.startswith("-") and "r" in rest and is_id(sandbox_id) else None


class Queues:
    """The project's merge queues."""

    def __init__(self, state_root: Path) -> None:
        self.state_root = state_root
        self.root = state_root / QUEUES_DIR

    def record(self, queue_id: str) -> FileRecord:
        if not queue_id.startswith("q-") or not is_id(queue_id):
            raise UserError(
                f"invalid merge queue id {queue_id[:60]!r}", hint="`specialists merge list`"
            )
        return FileRecord(self.root / queue_id)

    def locked(self) -> AbstractContextManager[None]:
        """Held while a queue is checked and created (the members' queue membership)."""
        return FileRecord(self.root).locked()

    def load(self, queue_id: str) -> Queue:
        data = self.record(queue_id).read(DOC, schema=SCHEMA)
        if data is None:
            raise NotFound(f"unknown merge queue {queue_id}", hint="`specialists merge list`")
        return Queue.from_dict(data, source=f"merge queue {queue_id} is damaged")

    def save(self, queue: Queue) -> None:
        self.record(queue.id).replace(DOC, queue.to_dict())

    def log(self, queue: Queue, event: str, **fields: Any) -> None:
        entry = {"ts": int(time.time() * 1000), "event": event, **fields}
        self.record(queue.id).append(LOG, entry)

    def history(self, queue_id: str) -> list[dict[str, Any]]:
        return list(self.record(queue_id).lines(LOG).entries)

    def ids(self) -> list[str]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if n.startswith("q-") and is_id(n))

    def all(self) -> tuple[list[Queue], list[str]]:
        found, problems = [], []
        for qid in self.ids():
            try:
                found.append(self.load(qid))
            except (StoreError, NotFound, OSError) as exc:
                problems.append(f"{qid}: {exc}")
        return found, problems


def ordered(members: list[Member], order: str) -> list[Member]:
    """`given` as named; `fifo` by creation; `smallest` by lines changed; `auto` (the
    default): members that overlap nobody first, oldest first (they cannot conflict with each
    other and need no resolver), then the overlapping ones smallest first, so the fewest
    lines land before a conflict and the resolver adapts the larger change once."""
    if order == "given":
        return list(members)
    if order == "fifo":
        return sorted(members, key=lambda m: m.created_at_ms)
    if order == "smallest":
        return sorted(members, key=lambda m: (m.size, m.created_at_ms))
    touched = [set(m.files) for m in members]
    alone = [
        not any(touched[i] & touched[j] for j in range(len(members)) if j != i)
        for i in range(len(members))
    ]
    keyed = sorted(
        range(len(members)),
        key=lambda i: (
            not alone[i],
            members[i].size if not alone[i] else 0,
            members[i].created_at_ms,
        ),
    )
    return [members[i] for i in keyed]


def overlaps(members: list[Member]) -> list[dict[str, Any]]:
    """Each pair of members that changed a same file, with those files."""
    out = []
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            both = sorted(set(a.files) & set(b.files))
            if both:
                out.append({"a": a.sandbox, "b": b.sandbox, "paths": both})
    return out


def target_of(gs: Any, candidates: list[Candidate]) -> tuple[Path, Sandbox | None]:
    """Where the members go back to: their parent sandbox, else the working copy they were
    made from. Siblings share it; anything else is refused."""
    parents = {c.sandbox.parent for c in candidates}
    if len(parents) != 1:
        raise UserError("these sandboxes have different parents; queue siblings only")
    (parent_id,) = parents
    if parent_id is not None:
        parent = gs.get(parent_id)
        if parent is None:
            raise UserError(f"the parent sandbox {parent_id} has no record")
        return parent.path, parent
    origins = {os.path.realpath(c.sandbox.origin) for c in candidates}
    if len(origins) != 1:
        raise UserError("these sandboxes come from different working copies; queue siblings only")
    return Path(origins.pop()), None
