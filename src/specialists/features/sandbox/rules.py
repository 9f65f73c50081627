"""Pure rules of the sandbox room: names, merged-ness (R-S7) and git's `-z` output formats.

Nothing here runs git; `git.py` feeds these functions what git printed. Each parser takes
NUL-separated output, because that is the only git format in which any path (newlines,
quotes, non-UTF-8 bytes) survives unmangled.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from specialists.features.sandbox.backend import SandboxError, SquashMarker

BRANCH_PREFIX = "sandbox-"
# Letters, digits, `_` and `-`; no dots, slashes or spaces, so `sandbox-<id>` is always a
# valid branch name and `<root>/<id>` never leaves the root.
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_id(sandbox_id: object) -> str:
    """`sandbox_id` unchanged when valid; a clear error before anything touches git."""
    if not isinstance(sandbox_id, str) or not _ID_RE.fullmatch(sandbox_id):
        shown = sandbox_id[:60] if isinstance(sandbox_id, str) else type(sandbox_id).__name__
        raise SandboxError(
            f"invalid sandbox id {shown!r}",
            hint="1 to 64 letters, digits, '_' or '-', starting with a letter or digit",
        )
    return sandbox_id


def is_id(text: str) -> bool:
    return _ID_RE.fullmatch(text) is not None


def same_path(a: str | Path, b: str | Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def branch_name(sandbox_id: str) -> str:
    return BRANCH_PREFIX + check_id(sandbox_id)


def id_of_branch(branch: str) -> str | None:
    """`sandbox-<id>` -> `<id>`; None for any other name."""
    if branch.startswith(BRANCH_PREFIX) and is_id(branch[len(BRANCH_PREFIX) :]):
        return branch[len(BRANCH_PREFIX) :]
    return None


def merged_state(
    tip: str | None,
    base_sha: str | None,
    markers: Iterable[SquashMarker],
    is_ancestor_of_head: Callable[[str], bool],
) -> tuple[bool, str]:
    """R-S7, for display: merged when its current tip was squashed, or when it moved past its
    recorded base and is an ancestor of HEAD. A fresh branch is never merged; a branch moved
    after its squash has a void marker; without a recorded base nothing proves a merge."""
    if tip is None:
        return False, "branch gone"
    if base_sha is None:
        return False, "no record of its base"
    if tip == base_sha:
        return False, "fresh: no commits past its base"
    markers = tuple(markers)
    if any(m.tip == tip for m in markers):
        return True, "squashed at this tip"
    if is_ancestor_of_head(tip):
        return True, "in HEAD's history"
    if markers:
        return False, "moved after its squash"
    return False, "unmerged"


# --- git output ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Worktree:
    path: str
    head: str | None
    branch: str | None  # refs/heads/... or None when detached
    bare: bool = False
    prunable: bool = False  # registered but its directory is gone


def parse_worktrees(out: bytes) -> list[Worktree]:
    """`git worktree list --porcelain -z`: records of `key value` fields, blank-separated."""
    trees: list[Worktree] = []
    fields: dict[str, str] = {}
    for raw in [*out.split(b"\0"), b""]:
        if raw:
            key, _, value = os.fsdecode(raw).partition(" ")
            fields[key] = value
            continue
        if "worktree" in fields:
            trees.append(
                Worktree(
                    path=fields["worktree"],
                    head=fields.get("HEAD"),
                    branch=fields.get("branch"),
                    bare="bare" in fields,
                    prunable="prunable" in fields,
                )
            )
        fields = {}
    return trees


@dataclass(frozen=True)
class StatusEntry:
    code: str  # the two-letter XY code; "??" untracked, "!!" ignored
    path: str


def parse_status(out: bytes) -> list[StatusEntry]:
    """`git status --porcelain=v1 -z`: `XY path`, and for renames/copies a second field."""
    entries: list[StatusEntry] = []
    parts = out.split(b"\0")
    i = 0
    while i < len(parts):
        raw = parts[i]
        i += 1
        if len(raw) < 4:
            continue
        code = raw[:2].decode("ascii", "replace")
        entries.append(StatusEntry(code, os.fsdecode(raw[3:])))
        if code[0] in "RC":
            i += 1  # the source path of a rename or copy
    return entries


def parse_numstat(out: bytes) -> list[tuple[str, int | None, int | None]]:
    """`git diff --numstat -z`: `added\\tdeleted\\tpath`; renames put `\\0from\\0to` after."""
    rows: list[tuple[str, int | None, int | None]] = []
    parts = out.split(b"\0")
    i = 0
    while i < len(parts):
        raw = parts[i]
        i += 1
        if not raw:
            continue
        added, deleted, path = [*raw.split(b"\t", 2), b"", b""][:3]
        if not path and i + 1 < len(parts):
            path = parts[i + 1]  # a rename: show the new name
            i += 2
        rows.append((os.fsdecode(path), _count(added), _count(deleted)))
    return rows


def _count(raw: bytes) -> int | None:
    return int(raw) if raw.isdigit() else None


def parse_merge_tree(out: bytes) -> tuple[str, tuple[str, ...]]:
    """`git merge-tree --write-tree -z --name-only --no-messages`: the tree, then the
    conflicted paths (one each, deduplicated, in git's order)."""
    parts = out.split(b"\0")
    tree = parts[0].decode("ascii", "replace").strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", tree):
        raise SandboxError(f"unexpected output from git merge-tree: {out[:200]!r}")
    seen: dict[str, None] = {}
    for raw in parts[1:]:
        if not raw:
            break
        seen.setdefault(os.fsdecode(raw), None)
    return tree, tuple(seen)


def exclude_pattern(relative_root: str) -> str:
    """A `.git/info/exclude` line matching exactly the directory `relative_root` (POSIX,
    relative to the working copy top), with gitignore's special characters escaped."""
    escaped = re.sub(r"([\\*?\[\]!# ])", r"\\\1", relative_root.strip("/"))
    return f"/{escaped}/"
