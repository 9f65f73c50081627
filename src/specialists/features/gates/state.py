"""The workspace state a gate's verdict is memoized on, as git sees the working tree.

The key is a SHA-256 over the *effective tree*: every path HEAD records, overlaid with what
`git status` reports (staged and unstaged changes, deletions, and untracked files that are
not ignored), each as (path, mode, git blob id of the content in the working tree). It is
content-only: the same files give the same key whether they are committed, staged or only
in the working tree, so a sandbox's end-of-job commit does not void a gate that passed just
before it. Ignored files never count; untracked files that are not ignored do (a new test
file or module changes what a gate checks). Our own state directory (`.specialists/`) is
left out, and so are special files (git skips FIFOs and sockets too).

Worktree contents are hashed here, not by `git hash-object`: it follows symlinks and would
block on a planted FIFO, and it runs the repository's clean filters (programs of its choice).
Known limits: submodules are keyed by the commit and flags git reports for them, not their
contents; a nested repository that is untracked counts by its presence only.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from specialists.features.sandbox.git import GIT_SAFETY, git_env
from specialists.process.short import run_short
from specialists.store.paths import STATE_DIR_NAME

GIT_TIMEOUT_S = 60.0
_GIT_CAP = 512 * 1024 * 1024  # listings are parsed whole: never a tail of them
_CHUNK = 1 << 20
_KEY_VERSION = b"specialists workspace state 1\n"


@dataclass(frozen=True)
class WorkspaceState:
    """The state key of the working copy holding a gate's cwd; `key` is None (and `reason`
    says why) when there is nothing to key on, and the gate then runs without a memo."""

    key: str | None
    toplevel: Path | None = None
    relative_cwd: str = "."  # the gate's cwd inside the working copy
    files: int = 0  # paths in the effective tree
    changed: int = 0  # of them, paths that differ from HEAD (untracked included)
    reason: str | None = None


def workspace_state(cwd: Path) -> WorkspaceState:
    """The state key of the working copy holding `cwd` (see the module docstring)."""
    env = git_env()
    # One call for both: on an unborn HEAD git prints the top level, then fails on the tree.
    found = run_short(
        ("git", *GIT_SAFETY, "rev-parse", "--show-toplevel", "HEAD^{tree}"),
        cwd=cwd, env=env, timeout=GIT_TIMEOUT_S,
    )  # fmt: skip
    lines = found.out.splitlines()
    if found.error is not None or not lines or not lines[0].startswith(b"/"):
        return WorkspaceState(None, reason=f"{cwd} is not in a git working copy")
    toplevel = Path(os.path.realpath(os.fsdecode(lines[0])))
    relative = os.path.relpath(os.path.realpath(cwd), toplevel)
    tree = lines[1].strip() if found.ok and len(lines) == 2 else None
    listing = b""
    if tree:  # an unborn HEAD starts from the empty tree
        got = _git(toplevel, env, "ls-tree", "-r", "-z", "--full-tree", tree)
        if got is None:
            return WorkspaceState(None, toplevel, relative, reason="git ls-tree failed")
        listing = got
    status = _git(
        toplevel,
        env,
        *("status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=all"),
        *("--", f":(top,exclude){STATE_DIR_NAME}"),
    )
    if status is None:
        return WorkspaceState(None, toplevel, relative, reason="git status failed")
    digest = hashlib.sha256(_KEY_VERSION)
    if not status:  # clean: the listing is the effective tree, in git's (bytewise) order
        digest.update(listing)
        files = listing.count(b"\0")
        return WorkspaceState(digest.hexdigest(), toplevel, relative, files, 0)
    entries = _parse_ls_tree(listing)
    changed = _overlay(entries, status, toplevel)
    for path in sorted(entries):
        digest.update(b"%s\t%s\0" % (entries[path], path))
    return WorkspaceState(digest.hexdigest(), toplevel, relative, len(entries), changed)


def _git(cwd: Path, env: dict[str, str], *args: str | bytes) -> bytes | None:
    argv = ("git", *GIT_SAFETY, *(os.fsdecode(a) for a in args))
    done = run_short(argv, cwd=cwd, env=env, timeout=GIT_TIMEOUT_S, output_cap=_GIT_CAP)
    return done.out if done.ok else None


def _parse_ls_tree(raw: bytes) -> dict[bytes, bytes]:
    """`<mode> <type> <object>\\t<path>` NUL-terminated -> path -> `<mode> <type> <object>`."""
    entries = {}
    for record in raw.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            entries[path] = meta
    return entries


def _overlay(entries: dict[bytes, bytes], raw: bytes, top: Path) -> int:
    """Apply `git status --porcelain=v2 -z` to the HEAD listing; returns the paths changed.
    Entries keep ls-tree's form, so a clean tree and a dirty one with the same files hash
    alike."""
    changed = 0
    for record in raw.split(b"\0"):
        if not record or record[:1] == b"#":
            continue
        kind = record[:1]
        if kind == b"1":  # 1 XY sub mH mI mW hH hI path
            fields = record.split(b" ", 8)
            xy, sub, m_index, h_index, path = fields[1], fields[2], fields[4], fields[7], fields[8]
        elif kind == b"u":  # u XY sub m1 m2 m3 mW h1 h2 h3 path
            fields = record.split(b" ", 10)
            xy, sub, m_index, h_index, path = fields[1], fields[2], b"", b"", fields[10]
        elif kind == b"?":
            xy, sub, m_index, h_index, path = b"??", b"N...", b"", b"", record[2:]
        else:  # "!" (ignored) is never asked for; "2" (renames) is off
            continue
        changed += 1
        if sub[:1] == b"S":  # a submodule: its recorded commit and what git says of it
            entries[path] = b"160000 commit %s:%s:%s" % (sub, xy, h_index)
        elif xy[1:2] == b"." and m_index not in (b"", b"000000"):
            entries[path] = _meta(m_index, h_index)  # the working tree matches the index
        else:
            found = hash_path(top / os.fsdecode(path))
            if found is None:
                entries.pop(path, None)
            else:
                entries[path] = _meta(*found)
    return changed


def _meta(mode: bytes, obj: bytes) -> bytes:
    kind = b"commit" if mode == b"160000" else b"tree" if mode == b"040000" else b"blob"
    return b"%s %s %s" % (mode, kind, obj)


def hash_path(path: Path) -> tuple[bytes, bytes] | None:
    """(git mode, git blob id) of what is at `path` now, without following a link or opening
    anything but a regular file; None when nothing is there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(path))
        return b"120000", _blob_id(len(target), iter((target,)))
    if stat.S_ISDIR(info.st_mode):
        return b"040000", b"directory"  # an untracked nested repository: presence only
    if not stat.S_ISREG(info.st_mode):
        return b"000000", b"special"
    mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:  # replaced meanwhile, or unreadable: key the fact, not content
        return mode, f"unreadable:{exc.errno}".encode()
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return b"000000", b"special"
        return mode, _blob_id(opened.st_size, _chunks(fd))
    finally:
        os.close(fd)


def _chunks(fd: int) -> Iterator[bytes]:
    while chunk := os.read(fd, _CHUNK):
        yield chunk


def _blob_id(size: int, chunks: Iterator[bytes]) -> bytes:
    """git's object id for a blob of `size` bytes (SHA-1 repositories), streamed: a file
    that changes size while it is read gets an id no content has, which is still a key."""
    digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest().encode()
