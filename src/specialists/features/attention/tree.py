"""A working tree's state key, and the diff between two keys, with git.

The key is the id of the git tree object the working tree would be if everything were
added: `git add -A` into a private copy of the index (GIT_INDEX_FILE; the repository's own
index and the user's staging are never touched), then `git write-tree`. So the key

- covers tracked and untracked files alike, and content, not only names: a file changed
  twice between two looks has a new key;
- ignores what git ignores (.gitignore, info/exclude) and our own state under
  `.specialists/` (excluded by pathspec, ignored or not: sandboxes live there too);
- is equal for a change that was reverted: same content, same tree id.

Copying the real index first keeps git's stat cache, so unchanged files are not hashed
again. The tree and blob objects it writes are unreachable and go with git's own gc; they
stay long enough for the reviewer to run `git diff <base> <head>` itself.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.process.short import run_short

GIT_TIMEOUT_S = 60.0
EXCLUDED = ":(top,exclude).specialists"  # our state, wherever the job's cwd is
MAX_DIFF_BYTES = 60_000  # the diff handed to the reviewer inline; the rest it reads itself


class TreeError(SpecialistsError):
    """The tree's state could not be read (not a git work tree, git missing or failing)."""


def toplevel(cwd: Path) -> Path:
    out = _git(["rev-parse", "--show-toplevel"], cwd)
    return Path(out.decode("utf-8", "surrogateescape").strip())


def tree_key(cwd: Path) -> str:
    """The state key of the work tree `cwd` is in. Raises TreeError."""
    top = toplevel(cwd)
    where = _git(["rev-parse", "--path-format=absolute", "--git-path", "index"], top)
    index = Path(where.decode("utf-8", "surrogateescape").strip())
    scratch = tempfile.mkdtemp(prefix="specialists-tree-")
    try:
        private = os.path.join(scratch, "index")
        if index.is_file():
            # copy2 keeps the index's mtime, which git's racy-entry check compares file
            # times with: a fresh mtime would let a same-size rewrite in the same clock
            # tick as the last index write pass as unchanged.
            shutil.copy2(index, private)
        env = {**os.environ, "GIT_INDEX_FILE": private}
        _git(["add", "-A", "--", ".", EXCLUDED], top, env=env)
        # A tracked file under .specialists/ (a project that commits its config) keeps the
        # content the index had: our own writes there never change the key.
        return _git(["write-tree"], top, env=env).decode().strip()
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
