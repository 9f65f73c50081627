"""A working tree's state key, and the diff between two keys, with git.

The key is the id of the git tree object the working tree would be if everything were
added (sandbox/worktree_tree.py: `git add -A` into a private copy of the index, then
`git write-tree`; the repository's own index and the user's staging are never touched). So
the key

- covers tracked and untracked files alike, and content, not only names: a file changed
  twice between two looks has a new key;
- ignores what git ignores (.gitignore, info/exclude) and our own state under
  `.specialists/` (left out whether git ignores it or not: sandboxes live there too);
- is equal for a change that was reverted: same content, same tree id.

The tree and blob objects it writes are unreachable and go with git's own gc; they
stay long enough for the reviewer to run `git diff <base> <head>` itself.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.features.sandbox.worktree_tree import TreeFailed, worktree_tree
from specialists.process.short import run_short

GIT_TIMEOUT_S = 60.0
MAX_DIFF_BYTES = 60_000  # the diff handed to the reviewer inline; the rest it reads itself


class TreeError(SpecialistsError):
    """The tree's state could not be read (not a git work tree, git missing or failing)."""


def toplevel(cwd: Path) -> Path:
    out = _git(["rev-parse", "--show-toplevel"], cwd)
    return Path(out.decode("utf-8", "surrogateescape").strip())


def tree_key(cwd: Path) -> str:
    """The state key of the work tree `cwd` is in. Raises TreeError."""
    top = toplevel(cwd)
    scratch = tempfile.mkdtemp(prefix="specialists-tree-")
    try:
        return worktree_tree(
            top, Path(scratch) / "index", env=dict(os.environ), timeout_s=GIT_TIMEOUT_S
        )
    except TreeFailed as exc:
        raise TreeError(f"the working tree's state is unknown: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def diff(cwd: Path, base: str, head: str) -> tuple[str, str]:
    """(the diff, capped at MAX_DIFF_BYTES, and its --stat) between two keys."""
    top = toplevel(cwd)
    stat = _git(["diff", "--stat", base, head], top).decode("utf-8", "replace")
    full = _git(["diff", "--no-color", "--no-ext-diff", base, head], top)
    text = full[:MAX_DIFF_BYTES].decode("utf-8", "replace")
    if len(full) > MAX_DIFF_BYTES:
        text += f"\n[... {len(full) - MAX_DIFF_BYTES} more bytes: run `git diff {base} {head}` ...]"
    return text, stat


def _git(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> bytes:
    done = run_short(["git", *args], cwd=cwd, env=env, timeout=GIT_TIMEOUT_S)
    if not done.ok:
        raise TreeError(f"the working tree's state is unknown: {done.describe()}")
    return done.out
