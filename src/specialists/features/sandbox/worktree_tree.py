"""The tree a working copy would commit, without touching its index, HEAD or files.

`git add -A` into a private copy of the working copy's index (GIT_INDEX_FILE), then
`git write-tree`. The copy keeps git's stat cache (unchanged files are not hashed again) and
the index's mtime, which git's racy-entry check compares file times with: a fresh mtime
would let a same-size rewrite in the same clock tick as the last index write pass as
unchanged.

Our state directory (`.specialists/`) is left out. An exclude pathspec does that, except
when git ignores the directory, as every `specialists init` project does: git 2.39 then
answers the exclude with "paths are ignored by one of your .gitignore files" and exit 1,
though it added everything else. An ignored directory needs no exclusion for untracked
files; its tracked files (a project that force-added its config) are put back as the index
had them, so our own writes never change the tree.

Used by the watchdog's state key (attention/tree.py) and a worktree handoff's capture.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.features.sandbox.cmd import GIT_SAFETY, GitResult, run_command
from specialists.store.files import create_private
from specialists.store.paths import STATE_DIR_NAME


class TreeFailed(SpecialistsError):
    """git could not say what the working copy holds; the message says which step."""


def worktree_tree(top: Path, scratch: Path, *, env: Mapping[str, str], timeout_s: float) -> str:
    """The tree id of everything in the working copy `top` that git does not ignore, our
    state left out. `scratch` is a path for the private index; it is removed afterwards."""

    def git(*args: str, stdin: bytes | None = None, private: bool = True) -> GitResult:
        done = run_command(
            ("git", *GIT_SAFETY, *args),
            cwd=top,
            timeout_s=timeout_s,
            stdin=stdin,
            env={**env, "GIT_INDEX_FILE": str(scratch)} if private else env,
        )
        if done.code not in (0, 1) or (done.code == 1 and args[0] != "check-ignore"):
            raise TreeFailed(f"git {args[0]} in {top} failed: {done.err_text(300)}")
        return done

    index = git("rev-parse", "--path-format=absolute", "--git-path", "index", private=False)
    try:
        _copy_index(Path(os.fsdecode(index.stdout.rstrip(b"\n"))), scratch)
        # --no-index: tracked files inside do not make the directory count as not ignored.
        if git("check-ignore", "-q", "--no-index", "--", STATE_DIR_NAME).code == 0:
            tracked = git("ls-files", "-z", "-s", "--", STATE_DIR_NAME).stdout
            git("add", "-A", "--", ".")
            if tracked:
                git("update-index", "-z", "--index-info", stdin=tracked)
        else:
            git("add", "-A", "--", ".", f":(exclude){STATE_DIR_NAME}")
        return git("write-tree").stdout.decode().strip()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(scratch)


def _copy_index(source: Path, scratch: Path) -> None:
    """The working copy's index, mtime included, as the private index's start (no index
    yet: git starts empty). The scratch file is ours alone: a link planted there is moved
    aside, never written through."""
    fd = create_private(scratch, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as out:
        try:
            with open(source, "rb") as index:
                shutil.copyfileobj(index, out)
                out.flush()
                times = os.fstat(index.fileno())
        except FileNotFoundError:
            return
        os.utime(out.fileno(), ns=(times.st_atime_ns, times.st_mtime_ns))
