"""`FakeSandbox`: an in-memory `SandboxBackend` for tests of the rooms above (threads, tools).

It keeps the seam's promises without git: worktrees are real empty directories (a child can
run in one), commits are counters, and the refusals come in the same order with the same
reasons as `GitSandbox` (tests/unit/test_sandbox_fake.py runs one scenario against both).
Tests steer it through three knobs: `edit(path, *files)` leaves uncommitted changes in a
working copy, `conflicts[id]` makes a squash of that sandbox conflict on those paths, and
`heads[path]` is a working copy's HEAD. Nothing has history, so "ancestor of HEAD" is never
true here; a squash marker at the current tip is what makes a fake branch merged.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specialists.features.sandbox.backend import (
    ChildState,
    CommitOutcome,
    DiffStat,
    FileStat,
    Kept,
    Listing,
    PruneCandidate,
    PruneOutcome,
    PrunePlan,
    Removed,
    RemoveOutcome,
    RemoveRefused,
    Repo,
    Sandbox,
    SandboxError,
    SandboxStatus,
    SquashConflict,
    Squashed,
    SquashMarker,
    SquashMode,
    SquashOutcome,
    SquashRefused,
)
from specialists.features.sandbox.rules import branch_name, check_id, merged_state
from specialists.features.sandbox.squash import refuse_child
from specialists.store.paths import state_dir


class FakeSandbox:
    name = "fake"

    def __init__(self, project: Path) -> None:
        self.project = Path(os.path.realpath(project))
        self.root = state_dir(self.project) / "sandboxes"
        self._clock = 0
        self.records: dict[str, Sandbox] = {}
        self.tips: dict[str, str] = {}  # branch -> commit
        self.heads: dict[Path, str] = {self.project: self._sha()}
        self.pending: dict[Path, set[str]] = {}  # working copy -> uncommitted files
        self.work: dict[str, tuple[str, ...]] = {}  # sandbox id -> files its branch changed
        self.conflicts: dict[str, tuple[str, ...]] = {}

    # --- knobs for tests --------------------------------------------------------------------

    def edit(self, path: Path, *files: str) -> None:
        self.pending.setdefault(Path(os.path.realpath(path)), set()).update(files or ("file",))

    # --- the seam ---------------------------------------------------------------------------

    def detect(self, cwd: Path) -> Repo | None:
        real = Path(os.path.realpath(cwd))
        if real != self.project and self.project not in real.parents:
            return None
        top = next((s.path for s in self.records.values() if s.path in (real, *real.parents)), None)
        return Repo(top or self.project, self.project / ".git", linked=top is not None)

    def create(
        self, id: str, *, base: Sandbox | None = None, origin: Path | None = None
    ) -> Sandbox:
        check_id(id)
        repo = self.detect(origin or self.project)
        if repo is None:
            raise SandboxError(f"{origin} is not in a git repository")
        branch, dest = branch_name(id), self.root / id
        if id in self.records or branch in self.tips or os.path.lexists(dest):
            raise SandboxError(f"cannot create sandbox {id}: it exists")
        start = self.tips[base.branch] if base else self.heads.get(repo.toplevel, self._sha())
        dest.mkdir(parents=True)
        sandbox = Sandbox(
            id=id,
            path=dest,
            branch=branch,
            base=base.branch if base else "HEAD",
            base_sha=start,
            origin=base.path if base else repo.toplevel,
            parent=base.id if base else None,
            created_at_ms=self._tick(),
        )
        self.records[id], self.tips[branch], self.heads[dest] = sandbox, start, start
        return sandbox

    def get(self, id: str) -> Sandbox | None:
        return self.records.get(check_id(id))

    def commit_all(self, sandbox: Sandbox, message: str | None = None) -> CommitOutcome:
        message = message or f"thread {sandbox.id}"
        files = self.pending.pop(sandbox.path, set())
        if not files:
            return CommitOutcome(False, None, message)
        self.work[sandbox.id] = tuple(sorted({*self.work.get(sandbox.id, ()), *files}))
        sha = self.tips[sandbox.branch] = self.heads[sandbox.path] = self._sha()
        return CommitOutcome(True, sha, message)

    def diff_stat(self, sandbox: Sandbox) -> DiffStat:
        tip = self.tips.get(sandbox.branch)
        if tip is None:
            raise SandboxError(f"branch {sandbox.branch} is gone")
        files = tuple(FileStat(p, 1, 0) for p in self.work.get(sandbox.id, ()))
        text = "\n".join(f" {f.path} | 1 +" for f in files)
        return DiffStat(sandbox.branch, sandbox.base_sha, tip, files, text)

    def squash_into(
        self,
        target: Path,
        sandbox: Sandbox,
        *,
        child: ChildState,
        commit: bool = True,
        auto_commit: bool = True,
        confirmed: bool = False,
    ) -> SquashOutcome:
        refused = refuse_child(child, sandbox.id)
        if refused is not None:
            return refused
        repo = self.detect(target)
        if repo is None or repo.toplevel == sandbox.path:
            return SquashRefused("wrong_target", f"{target} is not a valid target")
        top, into_sandbox = repo.toplevel, repo.linked
        if not into_sandbox and top != sandbox.origin:
            return SquashRefused("wrong_target", f"{sandbox.branch} was not created from {top}")
        if sandbox.branch not in self.tips:
            return SquashRefused("no_branch", f"branch {sandbox.branch} is gone")
        auto = None
        if self.pending.get(sandbox.path):
            if not auto_commit:
                dirty = tuple(sorted(self.pending[sandbox.path]))
                return SquashRefused("dirty_sandbox", "uncommitted changes", paths=dirty)
            auto = self.commit_all(sandbox).sha
        if self.pending.get(top):
            return SquashRefused("dirty_target", f"{top} has uncommitted changes")
        if sandbox.id in self.conflicts:
            return SquashConflict(sandbox.branch, top, self.conflicts[sandbox.id])
        files = self.work.get(sandbox.id, ())
        if not into_sandbox and not confirmed and files:
            return SquashRefused("needs_confirmation", f"stages {len(files)} files", paths=files)
        mode: SquashMode = "staged" if files else "nothing"
        made = None
        if files and into_sandbox and commit:
            parent = next(s for s in self.records.values() if s.path == top)
            made = self.tips[parent.branch] = self.heads[top] = self._sha()
            self.work[parent.id] = tuple(sorted({*self.work.get(parent.id, ()), *files}))
            mode = "committed"
        elif files:
            self.edit(top, *files)
        tip = self.tips[sandbox.branch]
        marker = SquashMarker(tip, str(top), self._tick(), mode == "committed", made)
        shutil.rmtree(sandbox.path, ignore_errors=True)
        current = self.records.get(sandbox.id, sandbox)
        self.records[sandbox.id] = current._replace(
            squashes=(*current.squashes, marker), removed_at_ms=self._tick()
        )
        return Squashed(
            sandbox.id, sandbox.branch, tip, top, mode, made, files, True, auto_commit=auto
        )

    def remove(self, sandbox: Sandbox, *, keep_branch: bool = True) -> RemoveOutcome:
        if self.pending.get(sandbox.path):
            return RemoveRefused(sandbox.id, "the worktree has uncommitted changes")
        moved = self.tips.get(sandbox.branch, sandbox.base_sha) != sandbox.base_sha
        if not keep_branch and moved and self._proof(sandbox) is None:
            return RemoveRefused(sandbox.id, f"{sandbox.branch} has unmerged commits")
        shutil.rmtree(sandbox.path, ignore_errors=True)
        if keep_branch:
            self.records[sandbox.id] = sandbox._replace(removed_at_ms=self._tick())
            return Removed(sandbox.id, branch_deleted=False)
        self.records.pop(sandbox.id, None)
        return Removed(sandbox.id, branch_deleted=self.tips.pop(sandbox.branch, None) is not None)

    def list(self) -> Listing:
        rows = []
        for sb in sorted(self.records.values(), key=lambda s: (s.created_at_ms, s.id)):
            tip = self.tips.get(sb.branch)
            merged, note = merged_state(tip, sb.base_sha, sb.squashes, lambda _: False)
            tree = sb.path if sb.path.is_dir() else None
            rows.append(SandboxStatus(sb.id, sb.branch, tip, tree, merged, note, sb))
        return Listing(tuple(rows))

    def prune_plan(self) -> PrunePlan:
        blocked = tuple(str(p) for p, files in self.pending.items() if files)
        if blocked:
            return PrunePlan((), (), blocked)
        candidates, kept = [], []
        for row in self.list().sandboxes:
            if row.sandbox is None or row.tip is None:
                continue
            if row.worktree is None and self._proof(row.sandbox):
                candidates.append(PruneCandidate(row.id, row.branch, row.tip, "squashed"))
            else:
                kept.append(Kept(row.branch, row.note))
        return PrunePlan(tuple(candidates), tuple(kept))

    def prune_merged(self, plan: PrunePlan) -> PruneOutcome:
        if plan.blocked or any(self.pending.values()):
            return PruneOutcome((), plan.kept, plan.blocked or ("pending work",))
        deleted, kept = [], list(plan.kept)
        for cand in plan.candidates:
            if self.tips.get(cand.branch) != cand.tip:
                kept.append(Kept(cand.branch, "moved after it was inspected"))
                continue
            del self.tips[cand.branch]
            self.records.pop(cand.id, None)
            deleted.append(cand.branch)
        return PruneOutcome(tuple(deleted), tuple(kept))

    def has_pending_work(self, path: Path) -> bool:
        return bool(self.pending.get(Path(os.path.realpath(path))))

    # --- internals --------------------------------------------------------------------------

    def _proof(self, sandbox: Sandbox) -> str | None:
        tip = self.tips.get(sandbox.branch)
        if tip is None or tip == sandbox.base_sha:
            return None
        return "squashed" if any(m.tip == tip for m in sandbox.squashes) else None

    def _sha(self) -> str:
        self._clock += 1
        return f"{self._clock:040x}"

    def _tick(self) -> int:
        self._clock += 1
        return self._clock
