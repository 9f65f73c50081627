"""The merge queue's state machine: one step-through of a queue under its lock (`advance`).

Every step is journaled in queue.json before it changes git and checked against git after
(queue.py), so a queue killed at any point is finished by stepping through it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox import queue_git as qgit
from specialists.features.sandbox.backend import Sandbox, SandboxError, SquashOutcome
from specialists.features.sandbox.queue import (
    MAX_ROUNDS,
    QUEUE_END,
    Member,
    Queue,
    Queues,
    resolver_sandbox_id,
)
from specialists.features.sandbox.resolver import start_resolver
from specialists.features.sandbox.rules import same_path


class Driver:
    """One step-through of a queue under its lock: what `advance` does."""

    def __init__(
        self,
        queues: Queues,
        gs: Any,
        queue: Queue,
        *,
        job_final: Callable[[str], str | None],
    ) -> None:
        self.queues = queues
        self.gs = gs
        self.q = queue
        self.job_final = job_final

    def save(self) -> None:
        self.queues.save(self.q)

    def log(self, event: str, member: Member | None = None, **fields: Any) -> None:
        if member is not None:
            fields["member"] = member.sandbox
        self.queues.log(self.q, event, **fields)

    def tip(self) -> str:
        tip = self.gs.tip(f"sandbox-{self.q.integration}")
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
                    conflicted = self.gs.merge_tree(onto, other.tip)[1]
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
            commit, conflicted = qgit.replay(
                self.gs, m.tip, onto, f"{sandbox.branch} rebased by merge queue {self.q.id}"
            )
        except SandboxError as exc:
            return self._fail(m, exc.one_line())
        if commit is None:
            return self._conflict(m, onto, conflicted)
        m.state, m.step = "rebasing", {"from": m.tip, "commit": commit, "onto": onto}
        self.save()
        self._move(m, sandbox, m.tip, commit, onto)

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
            start_resolver(self, m, m.resolver["onto"], tuple(m.conflict))
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
        tip = self.gs.tip(f"sandbox-{r['sandbox']}")
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
        where = self.integration().path
        marker = next(
            (s for s in sandbox.squashes if same_path(s.target, where) and s.tip == m.tip), None
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
