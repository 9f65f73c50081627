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
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.features.sandbox import queue_git as qgit
from specialists.features.sandbox.backend import Sandbox, SandboxError, SquashOutcome
from specialists.features.sandbox.rules import is_id
from specialists.store.record import FileRecord

QUEUES_DIR = "merges"
DOC = "queue"
LOG = "log"
SCHEMA = 1
MAX_MEMBERS = 100
MAX_ROUNDS = 3  # resolver runs per member
Order = Literal["given", "auto", "fifo", "smallest"]
ORDERS: tuple[str, ...] = ("given", "auto", "fifo", "smallest")
QUEUE_END = frozenset({"landed", "failed", "cancelled"})


@dataclass
class Member:
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
    conflict: list[str] = field(default_factory=list)
    resolver: dict[str, Any] | None = None  # sandbox, job, onto, paths, final
    rounds: int = 0  # resolver runs since queued (or retried): at most MAX_ROUNDS
    resolver_runs: int = 0  # across retries: names each one's sandbox, never reused
    problem: str | None = None


@dataclass
class Queue:
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
    overlaps: list[dict[str, Any]] = field(default_factory=list)
    state: str = "running"  # running waiting merged landed failed cancelled
    landing: dict[str, Any] | None = None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Shallow (it is written out at once): `dataclasses.asdict` deep-copies every
        overlap pair and file list, a quarter of a 20-member queue's time."""
        out = {"schema": SCHEMA, **vars(self)}
        out["members"] = [dict(vars(m)) for m in self.members]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Queue:
        try:
            fields = {k: v for k, v in data.items() if k != "schema"}
            fields["members"] = [Member(**m) for m in data["members"]]
            return cls(**fields)
        except (KeyError, TypeError) as exc:
            raise StoreError(f"merge queue record is damaged: {exc}") from None

    def member(self, sandbox: str) -> Member:
        return next(m for m in self.members if m.sandbox == sandbox)

    def tally(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members:
            counts[m.state] = counts.get(m.state, 0) + 1
        return counts

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
        return Queue.from_dict(data)

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


# --- choosing and checking the members -----------------------------------------------------


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


# --- the state machine -----------------------------------------------------------------------


class Driver:
    """One step-through of a queue under its lock: what `advance` does."""

    def __init__(
        self,
        queues: Queues,
        gs: Any,
        queue: Queue,
        *,
        start_resolver: Callable[[Driver, Member, str, tuple[str, ...]], None],
        job_final: Callable[[str], str | None],
    ) -> None:
        self.queues = queues
        self.gs = gs
        self.q = queue
        self.start_resolver = start_resolver
        self.job_final = job_final

    def save(self) -> None:
        self.queues.save(self.q)

    def log(self, event: str, member: Member | None = None, **fields: Any) -> None:
        if member is not None:
            fields["member"] = member.sandbox
        self.queues.log(self.q, event, **fields)

    def tip(self) -> str:
        tip = self.gs.rev(self.gs.project, f"refs/heads/sandbox-{self.q.integration}")
        if tip is None:
            raise SandboxError(f"the queue's branch sandbox-{self.q.integration} is gone")
        return str(tip)

    def integration(self) -> Sandbox:
        sandbox = self.gs.get(self.q.integration)
        if sandbox is None:
            raise SandboxError(f"the queue's sandbox {self.q.integration} has no record")
        return sandbox

    # --- one pass ---------------------------------------------------------------------------

    def run(self) -> Queue:
        if self.q.state in QUEUE_END:
            return self.q
        for each in self.q.members:
            self._finish_step(each)
        for each in self.q.members:
            if each.state == "resolving":
                self._collect(each)
        while (m := self._next()) is not None:
            self._land(m)
        self._settle()
        return self.q

    def _next(self) -> Member | None:
        waiting = [m for m in self.q.members if m.state == "queued"]
        resolved = [m for m in waiting if m.rounds]
        return (resolved or waiting)[0] if waiting else None

    def _settle(self) -> None:
        states = {m.state for m in self.q.members}
        if "resolving" in states:
            self.q.state = "waiting"
        elif any(m.state == "landed" for m in self.q.members):
            self.q.state = "merged"
        else:
            self.q.state = "failed"
            self.q.problem = "no member landed"
        self.save()

    # --- landing ----------------------------------------------------------------------------

    def _land(self, m: Member, *, rebase: bool = True) -> None:
        onto = self.tip()
        try:
            stale = rebase and bool(qgit.landed_since(self.gs, m.tip, onto) & set(m.files))
        except SandboxError as exc:
            return self._fail(m, exc.one_line())
        if stale:  # files it changed landed since it was based: onto the tip first
            self._rebase(m, onto)
            if m.state != "queued":
                return None
        m.state, m.step = "landing", {"onto": onto}
        self.save()
        sandbox = self.gs.get(m.sandbox)
        if sandbox is None:
            return self._fail(m, f"sandbox {m.sandbox} has no record")
        try:
            outcome = self.gs.squash_into(
                self.integration().path, sandbox, child="finished", commit=True, auto_commit=True
            )
        except SandboxError as exc:
            return self._fail(m, exc.one_line())
        self._landed(m, outcome)

    def _landed(self, m: Member, outcome: SquashOutcome) -> None:
        if outcome.kind == "conflict":
            return self._conflict(m, self.tip(), outcome.paths)
        if outcome.kind == "refused":
            return self._fail(m, outcome.describe())
        m.state, m.step, m.landed, m.tip = "landed", None, outcome.commit, outcome.tip
        self.save()
        self.log("landed", m, commit=outcome.commit, files=len(outcome.files))
        self._find_conflicts(set(outcome.files) or set(m.files))

    def _find_conflicts(self, landed: set[str]) -> None:
        """Each waiting member that changed a file just landed is merged onto the new tip in
        git's object store only (no worktree): a conflict goes to its resolver now, while the
        rest keep landing. A clean one is rebased when its turn comes, onto the tip then, so
        N overlapping members cost N rebases, not N(N-1)/2."""
        onto = self.tip()
        for other in self.q.members:
            if other.state == "queued" and landed & set(other.files):
                try:
                    conflicted = qgit.conflicts(self.gs, other.tip, onto)
                except SandboxError as exc:
                    self._fail(other, exc.one_line())
                    continue
                if conflicted:
                    self._conflict(other, onto, conflicted)

    def _rebase(self, m: Member, onto: str) -> None:
        sandbox = self.gs.get(m.sandbox)
        if sandbox is None:
            return self._fail(m, f"sandbox {m.sandbox} has no record")
        try:
            replayed = qgit.replay(
                self.gs, m.tip, onto, f"{sandbox.branch} rebased by merge queue {self.q.id}"
            )
        except SandboxError as exc:
            return self._fail(m, exc.one_line())
        if replayed.commit is None:
            return self._conflict(m, onto, replayed.conflicts)
        m.state, m.step = "rebasing", {"from": m.tip, "commit": replayed.commit, "onto": onto}
        self.save()
        self._move(m, sandbox, m.tip, replayed.commit, onto)

    def _move(self, m: Member, sandbox: Sandbox, old: str, new: str, onto: str) -> None:
        try:
            qgit.move_branch(self.gs, sandbox, old, new, onto)
        except SandboxError as exc:
            return self._fail(m, exc.one_line())
        m.state, m.step, m.tip = "queued", None, new
        self.save()
        self.log("rebased", m, onto=onto, commit=new)

    # --- conflicts --------------------------------------------------------------------------

    def _conflict(self, m: Member, onto: str, paths: Iterable[str]) -> None:
        m.conflict = list(paths)
        self.log("conflict", m, paths=m.conflict[:50])
        if self.q.resolver is None or m.rounds >= MAX_ROUNDS:
            why = "no resolver" if self.q.resolver is None else f"{MAX_ROUNDS} resolver runs"
            m.state, m.step, m.problem = "conflict", None, f"conflicts ({why})"
            self.save()
            return None
        m.rounds += 1
        m.resolver_runs += 1
        rid = resolver_sandbox_id(self.q.id, self.q.members.index(m), m.resolver_runs)
        m.state, m.step = "resolving", None
        m.resolver = {"sandbox": rid, "job": None, "onto": onto, "paths": m.conflict, "final": None}
        self.save()  # journaled before the sandbox or the job exists
        self._start(m)
        return None

    def _start(self, m: Member) -> None:
        assert m.resolver is not None
        try:
            self.start_resolver(self, m, m.resolver["onto"], tuple(m.conflict))
        except (SandboxError, UserError, StoreError, OSError) as exc:
            self._fail(m, f"the resolver could not start: {exc}")

    def _collect(self, m: Member) -> None:
        """A resolver that ended hands its commit back as the member's rebased branch."""
        r = m.resolver
        assert r is not None
        if r.get("job") is None:
            return self._start(m)  # killed between journal and start: start it now
        final = r.get("final") or self.job_final(str(r["job"]))
        if final is None:
            return None  # still at work
        r["final"] = final
        resolver = self.gs.get(r["sandbox"])
        tip = self.gs.rev(self.gs.project, f"refs/heads/sandbox-{r['sandbox']}")
        if final != "done" or resolver is None or tip is None or tip == r["onto"]:
            why = f"ended {final}" if final != "done" else "committed nothing"
            return self._fail(
                m, f"resolver job {r['job']} {why}; its sandbox {r['sandbox']} is kept"
            )
        left = qgit.markers_left(self.gs, tip, tuple(r["paths"]))
        if left:
            return self._fail(
                m, f"resolver job {r['job']} left conflict markers in {', '.join(left[:5])}"
            )
        sandbox = self.gs.get(m.sandbox)
        if sandbox is None:
            return self._fail(m, f"sandbox {m.sandbox} has no record")
        self.log("resolved", m, job=r["job"], commit=tip)
        m.state, m.step = "rebasing", {"from": m.tip, "commit": tip, "onto": r["onto"]}
        self.save()
        self._move(m, sandbox, m.step["from"], tip, r["onto"])
        if m.state == "queued":
            qgit.retire(self.gs, resolver, tip)
        return None

    # --- after a crash ----------------------------------------------------------------------

    def _finish_step(self, m: Member) -> None:
        """A step journaled and not finished (the process died): finish it or undo it."""
        if m.state == "rebasing" and m.step:
            sandbox = self.gs.get(m.sandbox)
            if sandbox is None:
                return self._fail(m, f"sandbox {m.sandbox} has no record")
            return self._move(m, sandbox, m.step["from"], m.step["commit"], m.step["onto"])
        if m.state == "landing":
            return self._finish_landing(m, str((m.step or {}).get("onto", "")))
        return None

    def _finish_landing(self, m: Member, onto: str) -> None:
        """The queue's sandbox is the queue's alone, so what is in it after `onto` is this
        squash's: committed (its marker may be missing), staged (no commit yet), or nothing."""
        sandbox = self.gs.get(m.sandbox)
        if sandbox is None:
            return self._fail(m, f"sandbox {m.sandbox} has no record")
        where = os.path.realpath(self.integration().path)
        marker = next(
            (s for s in sandbox.squashes if os.path.realpath(s.target) == where and s.tip == m.tip),
            None,
        )
        if marker is not None:
            m.state, m.step, m.landed = "landed", None, marker.commit
            self.save()
            self.log("landed", m, commit=marker.commit, recovered=True)
            return None
        head = self.tip()
        made = head if head != onto and self.gs.rev(self.gs.project, f"{head}^1") == onto else None
        if made is None and getattr(sandbox, "pending", None) is None:
            qgit.reset_to_head(self.gs, self.integration())  # a squash that staged, uncommitted
        self._land(m, rebase=False)  # rebased before; again: nothing left when `made`
        if made is not None and m.state == "landed":
            m.landed = m.landed or made
            self.save()
        return None

    def _fail(self, m: Member, problem: str) -> None:
        m.state, m.step, m.problem = "failed", None, problem
        self.save()
        self.log("failed", m, problem=problem)
