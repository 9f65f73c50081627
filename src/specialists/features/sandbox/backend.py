"""The `SandboxBackend` seam (seed 001 section 5.6) and the values that cross it.

A sandbox is a private working copy for one job on its own branch `sandbox-<id>`, created from
a base (the parent's sandbox branch, else HEAD of the working copy it was made from) and merged
back only by an explicit squash. Everything here is plain data; `git.py` implements the seam
over the git CLI and `testing.py` keeps an in-memory fake for the thread tests.

Outcomes are values, never prints: a refusal is a `SquashRefused` the front renders, not an
exception. Exceptions (`SandboxError`) are for bad input and for git itself failing.

How a jj backend would map onto each method: docs/sandbox.md "jj".
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from specialists.base.errors import StoreError, UserError
from specialists.base.tuples import NamedTuple
from specialists.store.fields import Declared

ChildState = Literal["running", "finalizing", "finished"]
SquashMode = Literal["committed", "staged", "nothing"]

RefusalReason = Literal[
    "child_running",  # R-S5: the child is still working
    "child_finalizing",  # R-S5: its close (commit, diff stat) has not completed
    "wrong_target",  # not a working copy of this repository, the sandbox itself, or (root
    # squash) not the working copy the sandbox was created from
    "dirty_sandbox",  # uncommitted changes in the sandbox and auto-commit is off
    "dirty_target",  # uncommitted changes in the target
    "would_overwrite",  # untracked or ignored files in the target are in the way
    "writes_state",  # the squash would change files in our state directory (.specialists/)
    "no_branch",  # the sandbox branch is gone
    "needs_confirmation",  # root working copy: the user has not confirmed
    "interrupted",  # a squash of this sandbox was interrupted and its target changed since
]


class SandboxError(UserError):
    """Bad input for a sandbox operation, or git failed (the message carries its stderr)."""


class Repo(NamedTuple):
    """The working copy that holds `cwd`, and the repository it belongs to."""

    toplevel: Path  # the working copy's top directory
    common_dir: Path  # the repository (shared by all its worktrees)
    linked: bool  # a linked worktree (not the main working copy)


class SquashMarker(Declared):
    """One squash of a sandbox: which tip went where. A later move of the branch voids it."""

    _what = "squash marker"
    tip: str
    target: str
    at_ms: int
    committed: bool
    commit: str | None = None

    @classmethod
    def _after_read(cls, record: SquashMarker, where: str) -> None:
        if not (is_commit_id(record.tip) and record.target and record.at_ms >= 0):
            raise StoreError(f"{where}: tip, target or at_ms is not as written")
        if record.commit is not None and not is_commit_id(record.commit):
            raise StoreError(f"{where}: commit is not a commit id")


class PendingSquash(Declared):
    """A squash that began writing into its target and has not finished (squash.py): what
    it applies where, so a retry after a crash can tell its own leftovers and finish."""

    _what = "pending squash"
    tip: str  # the branch tip being squashed
    target: str  # the target working copy's top
    head: str  # the target's HEAD when the squash began
    tree: str  # the merged tree the target's index becomes
    commit: bool  # the squash commits (a sandboxed parent) rather than stages
    at_ms: int

    @classmethod
    def _after_read(cls, record: PendingSquash, where: str) -> None:
        shas = (record.tip, record.head, record.tree)
        if not (all(map(is_commit_id, shas)) and record.target and record.at_ms >= 0):
            raise StoreError(f"{where}: tip, head, tree, target or at_ms is not as written")


def is_commit_id(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


class Sandbox(NamedTuple):
    id: str
    path: Path  # the worktree: <root>/<id>
    branch: str  # sandbox-<id>
    base: str  # what it was created from: "HEAD" or the parent's branch
    base_sha: str  # the commit it started at
    origin: Path  # the working copy it was created from; a root squash must target it
    parent: str | None  # the parent sandbox id, when nested
    created_at_ms: int
    squashes: tuple[SquashMarker, ...] = ()
    removed_at_ms: int | None = None
    pending: PendingSquash | None = None  # a squash under way, or one a crash interrupted


class CommitOutcome(NamedTuple):
    committed: bool
    sha: str | None  # the new commit, or None when there was nothing to commit
    message: str
    fallback_identity: str | None = None  # who signed it, when git knew nobody here


class FileStat(NamedTuple):
    path: str
    added: int | None  # None for a binary file
    deleted: int | None


class DiffStat(NamedTuple):
    """`git diff --stat <base> <branch>` (R-S4), as text and as numbers."""

    branch: str
    base_sha: str
    tip: str
    files: tuple[FileStat, ...]
    text: str

    @property
    def insertions(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deleted or 0 for f in self.files)

    def summary(self) -> str:
        return f"{self.branch}: {self.counts()}"

    def counts(self) -> str:
        if not self.files:
            return "no changes"
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''} changed, +{self.insertions} -{self.deletions}"


class Squashed(NamedTuple):
    sandbox: str
    branch: str
    tip: str
    target: Path
    mode: SquashMode
    commit: str | None  # the commit made in the target (mode "committed")
    files: tuple[str, ...]  # paths the squash changed in the target
    worktree_removed: bool
    auto_commit: str | None = None  # the sandbox commit made first, when it was dirty
    warnings: tuple[str, ...] = ()
    kind: Literal["squashed"] = "squashed"

    def describe(self) -> str:
        n = len(self.files)
        what = f"{n} file{'s' if n != 1 else ''}"
        if self.mode == "committed":
            head = f"squashed {self.branch} into {self.target}: {what}, committed {self.commit}"
        elif self.mode == "staged":
            head = (
                f"squashed {self.branch} into {self.target}: {what} staged, not committed "
                "(review with `git diff --cached`, then commit)"
            )
        else:
            head = f"{self.branch} has nothing that {self.target} lacks; nothing changed"
        tail = "worktree removed" if self.worktree_removed else "worktree kept"
        lines = [f"{head}; {tail}, branch {self.branch} kept"]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


class SquashRefused(NamedTuple):
    reason: RefusalReason
    message: str
    hint: str = ""
    paths: tuple[str, ...] = ()
    kind: Literal["refused"] = "refused"

    def describe(self) -> str:
        shown = _paths_line(self.paths)
        return f"{self.message}{shown}" + (f" ({self.hint})" if self.hint else "")


class SquashConflict(NamedTuple):
    """The merge would conflict. Nothing in the target was touched; the branch is kept."""

    branch: str
    target: Path
    paths: tuple[str, ...]
    kind: Literal["conflict"] = "conflict"

    def describe(self) -> str:
        return (
            f"squash of {self.branch} into {self.target} conflicts{_paths_line(self.paths)}; "
            "the target is unchanged and the branch is kept (merge it by hand, or have the "
            "child rebase its work on the target)"
        )


SquashOutcome = Squashed | SquashRefused | SquashConflict


class Removed(NamedTuple):
    sandbox: str
    branch_deleted: bool
    warnings: tuple[str, ...] = ()
    kind: Literal["removed"] = "removed"


class RemoveRefused(NamedTuple):
    sandbox: str
    message: str
    paths: tuple[str, ...] = ()
    kind: Literal["refused"] = "refused"


RemoveOutcome = Removed | RemoveRefused


class SandboxStatus(NamedTuple):
    """One row of `list()`: a sandbox branch, its worktree and whether it is merged (R-S7)."""

    id: str
    branch: str
    tip: str | None  # None when the branch is gone
    worktree: Path | None  # the registered worktree checking it out, if any
    merged: bool
    note: str  # why merged or not, in a few words
    sandbox: Sandbox | None  # the metadata, None for a branch without a record


class PruneCandidate(NamedTuple):
    id: str
    branch: str
    tip: str  # the tip inspected; deletion happens only if the branch still points here
    proof: Literal["ancestor", "squashed"]


class Kept(NamedTuple):
    branch: str
    reason: str


class PrunePlan(NamedTuple):
    candidates: tuple[PruneCandidate, ...]
    kept: tuple[Kept, ...]
    blocked: tuple[str, ...] = ()  # worktrees with uncommitted changes: nothing is pruned

    def describe(self) -> str:
        if self.blocked:
            return "prune refused: uncommitted changes in " + ", ".join(self.blocked)
        if not self.candidates:
            return "nothing to prune"
        return "would delete " + ", ".join(f"{c.branch} ({c.tip[:12]})" for c in self.candidates)


class PruneOutcome(NamedTuple):
    deleted: tuple[str, ...]
    kept: tuple[Kept, ...]
    blocked: tuple[str, ...] = ()


class Problem(NamedTuple):
    """A damaged or unexpected thing seen while reading (a metadata file, a planted link)."""

    where: str
    what: str


class Listing(NamedTuple):
    sandboxes: tuple[SandboxStatus, ...]
    problems: tuple[Problem, ...] = ()


class SandboxBackend(Protocol):
    """One version-control backend (seed 001 5.6). Bound to one project at construction."""

    name: str

    def detect(self, cwd: Path) -> Repo | None: ...

    def create(
        self, id: str, *, base: Sandbox | None = None, origin: Path | None = None
    ) -> Sandbox: ...

    def get(self, id: str) -> Sandbox | None: ...

    def commit_all(self, sandbox: Sandbox, message: str | None = None) -> CommitOutcome: ...

    def diff_stat(self, sandbox: Sandbox) -> DiffStat: ...

    def squash_into(
        self,
        target: Path,
        sandbox: Sandbox,
        *,
        child: ChildState,
        commit: bool = True,
        auto_commit: bool = True,
        confirmed: bool = False,
    ) -> SquashOutcome: ...

    def remove(self, sandbox: Sandbox, *, keep_branch: bool = True) -> RemoveOutcome: ...

    def list(self) -> Listing: ...

    def prune_plan(self) -> PrunePlan: ...

    def prune_merged(self, plan: PrunePlan) -> PruneOutcome: ...

    def has_pending_work(self, path: Path) -> bool: ...


def _paths_line(paths: tuple[str, ...], limit: int = 10) -> str:
    if not paths:
        return ""
    shown = ", ".join(paths[:limit])
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return f": {shown}{more}"
