"""`GitSandbox`: the sandbox seam over the git CLI (git 2.38 or later), R-S1..R-S8.

Every git call goes through `GitSandbox.run`, with cmd.py's safety options and environment.

Ownership (R-S7): only what this process created is ever deleted. Creation checks that the
destination, the branch and the record are all absent before `git worktree add`; if git
fails anyway, whatever is there now (perhaps another process's worktree) is left alone. A
worktree is removed only after it is verified to be the sandbox's own (registered at its
path, on its branch) and clean, ignored files included. The root working copy is never
checked out, reset or committed to (R-S8): the only write into it is a confirmed squash,
which stages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from specialists.features.sandbox import create as create_mod
from specialists.features.sandbox import prune as prune_mod
from specialists.features.sandbox import squash as squash_mod
from specialists.features.sandbox.backend import (
    ChildState,
    CommitOutcome,
    DiffStat,
    FileStat,
    Listing,
    PruneOutcome,
    PrunePlan,
    Removed,
    RemoveOutcome,
    RemoveRefused,
    Repo,
    Sandbox,
    SandboxError,
    SquashOutcome,
)
from specialists.features.sandbox.cmd import (
    FALLBACK,
    GIT_SAFETY,
    GitResult,
    GitRunner,
    fallback_env,
    git_env,
    run_command,
)
from specialists.features.sandbox.meta import MetaStore
from specialists.features.sandbox.rules import (
    StatusEntry,
    Worktree,
    check_id,
    parse_merge_tree,
    parse_numstat,
    parse_status,
    parse_worktrees,
    same_path,
)
from specialists.store.paths import SANDBOXES_DIR, state_dir

GIT_TIMEOUT_S = 120.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class GitSandbox:
    name = "git"

    def __init__(
        self,
        project: Path,
        *,
        runner: GitRunner = run_command,
        clock: Callable[[], int] = _now_ms,
        timeout_s: float = GIT_TIMEOUT_S,
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.root = state_dir(self.project) / SANDBOXES_DIR
        self.meta = MetaStore(self.root)
        self.runner = runner
        self.clock = clock
        self.timeout_s = timeout_s
        self._env = git_env()

    # --- git --------------------------------------------------------------------------------

    def run(
        self, cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> GitResult:
        """One git command; a missing git is an error here, anything else the caller's.
        `env` adds to the sanitised environment (a fallback identity)."""
        result = self.runner(
            ("git", *GIT_SAFETY, *args),
            cwd=cwd,
            timeout_s=self.timeout_s,
            stdin=stdin,
            env={**self._env, **env} if env else self._env,
        )
        if result.problem == "not found: git":
            raise SandboxError("git not found", hint="install git 2.38 or later")
        if result.problem is not None:
            # A timeout or an unusable cwd is never an answer ("not merged", "no branch").
            raise SandboxError(f"git {_subcommand(args)} in {cwd}: {result.problem}")
        return result

    def git(
        self, cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """One git command that must succeed; its stdout."""
        result = self.run(cwd, *args, stdin=stdin, env=env)
        if not result.ok:
            code = result.code if result.code is not None else result.problem
            raise SandboxError(f"git {args[0]} failed ({code}): {result.err_text()}")
        return result.stdout

    def rev(self, cwd: Path, rev: str) -> str | None:
        """The commit `rev` names, or None."""
        result = self.run(cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
        if not result.ok:
            return None
        return result.stdout.decode().strip() or None

    def tip(self, branch: str) -> str | None:
        """The commit the branch `branch` points at, or None when it is gone."""
        return self.rev(self.project, f"refs/heads/{branch}")

    def merge_tree(self, onto: str, tip: str) -> tuple[str, tuple[str, ...]]:
        """The three-way merge of `tip` onto `onto` (ort, against their merge base) as a tree,
        and its conflicted paths (none: it merges); nothing is written but objects."""
        args = ("merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", onto, tip)
        merged = self.run(self.project, *args)
        if merged.code not in (0, 1):
            raise SandboxError(
                f"git merge-tree failed: {merged.err_text()}", hint="squash needs git 2.38 or later"
            )
        tree, conflicts = parse_merge_tree(merged.stdout)
        return tree, conflicts if merged.code == 1 else ()

    def index_is(self, top: Path, treeish: str) -> bool:
        """The index of the working copy `top` holds exactly `treeish` (files not looked at)."""
        same = self.run(top, "diff-index", "--cached", "--quiet", "--no-ext-diff", treeish, "--")
        if same.code not in (0, 1):
            raise SandboxError(f"git diff-index failed in {top}: {same.err_text()}")
        return same.code == 0

    def identity(self, cwd: Path) -> dict[str, str]:
        """The fallback identity for what git cannot name in `cwd` ({} when it can): the
        environment every commit of ours is made with (cmd.py)."""
        return fallback_env(lambda role: self.run(cwd, "var", role).ok)

    def worktrees(self) -> list[Worktree]:
        return parse_worktrees(self.git(self.project, "worktree", "list", "--porcelain", "-z"))

    def changes(self, path: Path, *, ignored: bool = False) -> list[StatusEntry]:
        args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"]
        if ignored:
            args.append("--ignored=matching")
        return parse_status(self.git(path, *args))

    # --- the seam ---------------------------------------------------------------------------

    def detect(self, cwd: Path) -> Repo | None:
        if not cwd.is_dir():
            return None
        result = self.run(
            cwd, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"
        )
        lines = result.stdout.decode(errors="surrogateescape").splitlines()
        if not result.ok or len(lines) != 2:
            return None
        top, common = (Path(os.path.realpath(line)) for line in lines)
        return Repo(toplevel=top, common_dir=common, linked=(top / ".git").is_file())

    def create(
        self,
        id: str,
        *,
        base: Sandbox | None = None,
        origin: Path | None = None,
        start: str | None = None,
    ) -> Sandbox:
        """R-S1, R-S2 (create.py). `base` is the parent's sandbox, else HEAD of `origin`
        (or the commit `start`)."""
        return create_mod.create(self, id, base=base, origin=origin, start=start)

    def get(self, id: str) -> Sandbox | None:
        sandbox, problem = self.meta.read(check_id(id))
        if problem is not None:
            raise SandboxError(f"sandbox record {problem.where} {problem.what}")
        return sandbox

    def commit_all(self, sandbox: Sandbox, message: str | None = None) -> CommitOutcome:
        """R-S3: everything in the worktree (not ignored files), hooks disabled, `thread <id>`."""
        message = message or f"thread {sandbox.id}"
        self._check_checkout(sandbox)
        self.git(sandbox.path, "add", "-A")
        staged = self.run(sandbox.path, "diff", "--cached", "--quiet", "--no-ext-diff")
        if staged.code == 0:
            return CommitOutcome(False, None, message)
        if staged.code != 1:
            raise SandboxError(f"git diff --cached failed: {staged.err_text()}")
        fallback = self.identity(sandbox.path)
        self.git(sandbox.path, "commit", "--quiet", "--no-verify", "-m", message, env=fallback)
        by = FALLBACK if fallback else None
        return CommitOutcome(True, self.rev(sandbox.path, "HEAD"), message, fallback_identity=by)

    def diff_stat(self, sandbox: Sandbox) -> DiffStat:
        """R-S4: the branch's committed work against the base it was created from."""
        tip = self.tip(sandbox.branch)
        if tip is None:
            raise SandboxError(f"branch {sandbox.branch} is gone")
        return self.stat(sandbox.branch, sandbox.base_sha, tip)

    def stat(self, branch: str, base: str, tip: str, *, renames: bool = True) -> DiffStat:
        """What changed from `base` to `tip` (commits or trees), counted and as `--stat`."""
        diff = ("diff", "--no-ext-diff", "--no-textconv", "-M" if renames else "--no-renames")
        rows = parse_numstat(self.git(self.project, *diff, "--numstat", "-z", base, tip))
        text = self.git(self.project, *diff, "--stat=120", base, tip) if rows else b""
        files = tuple(FileStat(*row) for row in rows)
        return DiffStat(branch, base, tip, files, text.decode(errors="replace").rstrip())

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
        with self.meta.locked():
            return squash_mod.squash(
                self,
                target,
                sandbox,
                child=child,
                commit=commit,
                auto_commit=auto_commit,
                confirmed=confirmed,
            )

    def remove(self, sandbox: Sandbox, *, keep_branch: bool = True) -> RemoveOutcome:
        """Remove the worktree (R-S7); the branch too only when `keep_branch` is false and the
        branch holds nothing unmerged (fresh, or proven merged the way prune proves it).
        Everything is checked before anything is removed."""
        with self.meta.locked():
            tip = None if keep_branch else self.tip(sandbox.branch)
            fresh = tip is None or tip == sandbox.base_sha
            if tip is not None and not fresh and prune_mod.proof(self, sandbox, tip) is None:
                return RemoveRefused(
                    sandbox.id,
                    f"{sandbox.branch} has unmerged commits; nothing was removed "
                    "(keep the branch, or delete it by hand with git branch -D)",
                )
            refused = self.remove_worktree(sandbox)
            if refused is not None:
                return refused
            current = self.get(sandbox.id) or sandbox
            if tip is not None and not prune_mod.delete_branch(self, sandbox.branch, tip):
                self.meta.write(_replace_removed(current, self.clock()))
                return RemoveRefused(
                    sandbox.id, f"worktree removed; {sandbox.branch} moved meanwhile, kept"
                )
            if keep_branch:
                self.meta.write(_replace_removed(current, self.clock()))
            else:
                self.meta.delete(sandbox.id)
            return Removed(sandbox.id, branch_deleted=tip is not None)

    def list(self) -> Listing:
        return prune_mod.listing(self)

    def prune_plan(self) -> PrunePlan:
        with self.meta.locked():
            return prune_mod.plan(self)

    def prune_merged(self, plan: PrunePlan) -> PruneOutcome:
        with self.meta.locked():
            return prune_mod.execute(self, plan)

    def has_pending_work(self, path: Path) -> bool:
        """Uncommitted changes in the working copy at `path`: staged, unstaged or untracked
        (our own `.specialists/` state does not count)."""
        return bool(prune_mod.pending(self, self.repo(path).toplevel))

    # --- helpers ----------------------------------------------------------------------------

    def repo(self, cwd: Path) -> Repo:
        repo = self.detect(cwd)
        if repo is None:
            raise SandboxError(
                f"{cwd} is not in a git repository",
                hint="sandboxes are git worktrees; run inside a repository or drop sandbox",
            )
        return repo

    def worktree_of(self, branch: str) -> Worktree | None:
        ref = f"refs/heads/{branch}"
        return next((w for w in self.worktrees() if w.branch == ref), None)

    def _check_checkout(self, sandbox: Sandbox) -> None:
        if not sandbox.path.is_dir():
            raise SandboxError(f"sandbox {sandbox.id} has no worktree at {sandbox.path}")
        head = self.run(sandbox.path, "symbolic-ref", "--quiet", "HEAD").stdout.decode().strip()
        if head != f"refs/heads/{sandbox.branch}":
            raise SandboxError(
                f"the worktree of sandbox {sandbox.id} is not on {sandbox.branch} "
                f"(HEAD is {head or 'detached'})",
                hint=f"check out {sandbox.branch} in {sandbox.path} again",
            )

    def remove_worktree(self, sandbox: Sandbox) -> RemoveRefused | None:
        tree = self.worktree_of(sandbox.branch)
        if tree is None:
            if os.path.lexists(sandbox.path):
                return RemoveRefused(
                    sandbox.id,
                    f"{sandbox.path} exists but is not {sandbox.branch}'s worktree; left intact",
                )
            return None
        if not same_path(tree.path, sandbox.path):
            return RemoveRefused(sandbox.id, f"{sandbox.branch} is checked out at {tree.path}")
        if tree.prunable or not sandbox.path.is_dir():
            self.git(self.project, "worktree", "prune")
            return None
        entries = self.changes(sandbox.path, ignored=True)
        dirty = tuple(e.path for e in entries if e.code != "!!")
        if dirty:
            return RemoveRefused(sandbox.id, "the worktree has uncommitted changes", dirty)
        ignored = tuple(e.path for e in entries if e.code == "!!")
        if ignored:
            return RemoveRefused(
                sandbox.id,
                f"the worktree holds ignored files; remove them by hand from {sandbox.path}",
                ignored,
            )
        self.git(self.project, "worktree", "remove", str(sandbox.path))
        return None


def _subcommand(args: tuple[str, ...]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _replace_removed(sandbox: Sandbox, now_ms: int) -> Sandbox:
    return sandbox._replace(removed_at_ms=sandbox.removed_at_ms or now_ms)
