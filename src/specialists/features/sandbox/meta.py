"""Per-sandbox metadata: `.specialists/sandboxes/<id>.json`, private (0600) and atomic.

    {"schema": 1, "id": "…", "branch": "sandbox-…", "base": "HEAD", "base_sha": "…",
     "origin": "/abs/working/copy", "parent": null, "created_at_ms": …,
     "removed_at_ms": null, "squashes": [{"tip": …, "target": …, "at_ms": …,
     "committed": true, "commit": "…"}],
     "pending": null | {"tip": …, "target": …, "head": …, "tree": …, "commit": false,
                        "at_ms": …}}

The record is what R-S7 needs to tell merged from unmerged (the recorded base and the tips
that were squashed) and what R-S5 needs to refuse a root squash into another working copy
(the origin). `pending` journals a squash from before it writes into its target until it
has finished, so a retry after a crash finishes it (squash.py). Files are untrusted on read:
a damaged, planted or oversized one is a `Problem`, never an exception, and never followed
through a symlink. The root is a Record of kind `sandboxes` (store/kinds.py): all changes
take its one lock, so two processes cannot interleave a create and a squash.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from specialists.base.errors import Planted, StoreError
from specialists.features.sandbox.backend import (
    PendingSquash,
    Problem,
    Sandbox,
    SandboxError,
    SquashMarker,
)
from specialists.features.sandbox.rules import branch_name, is_id
from specialists.store.kinds import SANDBOXES

SCHEMA = 1
SUFFIX = ".json"
MAX_MARKERS = 200  # a sandbox squashed more often than this keeps its latest markers


class MetaStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.record = SANDBOXES.record(root)

    def file(self, sandbox_id: str) -> Path:
        return self.root / f"{sandbox_id}{SUFFIX}"

    def check_root(self) -> None:
        """Refuse a root that is a symlink (or a non-directory): worktrees and records would
        land wherever it points, outside the project's exclusions."""
        for path in (self.root.parent, self.root):
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(info.st_mode):
                raise SandboxError(
                    f"{path} is a symlink",
                    hint="sandboxes must live in the project's own .specialists/sandboxes; "
                    "replace the link with a directory",
                )
            if not stat.S_ISDIR(info.st_mode):
                raise SandboxError(f"{path} is not a directory", hint="move it away")

    def ensure_root(self) -> None:
        self.check_root()
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.check_root()  # a link planted between the check and the mkdir

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.ensure_root()
        with self.record.locked():
            yield

    # --- reading ----------------------------------------------------------------------------

    def read(self, sandbox_id: str) -> tuple[Sandbox | None, Problem | None]:
        path = self.file(sandbox_id)
        try:
            data = self.record.read(sandbox_id)
        except Planted as exc:
            return None, Problem(str(path), exc.message.removeprefix(f"{path} "))
        except StoreError as exc:
            return None, Problem(str(path), f"damaged: {exc.message.removeprefix(f'{path} ')}")
        except OSError as exc:
            return None, Problem(str(path), f"unreadable: {exc.strerror}")
        if data is None:
            return None, None
        try:
            return from_dict(data, self.root, sandbox_id), None
        except (ValueError, TypeError, KeyError) as exc:
            return None, Problem(str(path), f"damaged: {exc}")

    def read_all(self) -> tuple[list[Sandbox], list[Problem]]:
        try:
            self.check_root()
        except SandboxError as exc:
            return [], [Problem(str(self.root), exc.one_line())]
        sandboxes: list[Sandbox] = []
        problems: list[Problem] = []
        for name in self.record.docs():
            if not is_id(name):
                continue
            sandbox, problem = self.read(name)
            if sandbox is not None:
                sandboxes.append(sandbox)
            if problem is not None:
                problems.append(problem)
        return sandboxes, problems

    # --- writing (callers hold `locked()`) ---------------------------------------------------

    def write(self, sandbox: Sandbox) -> None:
        self.record.replace(sandbox.id, to_dict(sandbox))

    def delete(self, sandbox_id: str) -> None:
        self.record.remove(sandbox_id)


def to_dict(sb: Sandbox) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "id": sb.id,
        "branch": sb.branch,
        "base": sb.base,
        "base_sha": sb.base_sha,
        "origin": str(sb.origin),
        "parent": sb.parent,
        "created_at_ms": sb.created_at_ms,
        "removed_at_ms": sb.removed_at_ms,
        "squashes": [asdict(m) for m in sb.squashes[-MAX_MARKERS:]],
        "pending": None if sb.pending is None else asdict(sb.pending),
    }


def from_dict(data: Any, root: Path, sandbox_id: str) -> Sandbox:
    """A record read back; every field checked. The path is derived, never trusted."""
    if not isinstance(data, dict):
        raise ValueError("not an object")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
    if data.get("id") != sandbox_id or data.get("branch") != branch_name(sandbox_id):
        raise ValueError("id or branch does not match the file name")
    origin = _str(data, "origin")
    if not os.path.isabs(origin):
        raise ValueError("origin is not an absolute path")
    parent = data.get("parent")
    if parent is not None and (not isinstance(parent, str) or not is_id(parent)):
        raise ValueError("parent is not a sandbox id")
    markers = data.get("squashes")
    if not isinstance(markers, list):
        raise ValueError("squashes is not a list")
    return Sandbox(
        id=sandbox_id,
        path=root / sandbox_id,
        branch=branch_name(sandbox_id),
        base=_str(data, "base"),
        base_sha=_sha(data, "base_sha"),
        origin=Path(origin),
        parent=parent,
        created_at_ms=_int(data, "created_at_ms"),
        squashes=tuple(_marker(m) for m in markers),
        removed_at_ms=None if data.get("removed_at_ms") is None else _int(data, "removed_at_ms"),
        pending=None if data.get("pending") is None else _pending(data["pending"]),
    )


def _pending(data: Any) -> PendingSquash:
    if not isinstance(data, dict):
        raise ValueError("pending is not an object")
    commit = data.get("commit")
    if not isinstance(commit, bool):
        raise ValueError("pending: commit is not a boolean")
    return PendingSquash(
        tip=_sha(data, "tip"),
        target=_str(data, "target"),
        head=_sha(data, "head"),
        tree=_sha(data, "tree"),
        commit=commit,
        at_ms=_int(data, "at_ms"),
    )


def _marker(data: Any) -> SquashMarker:
    if not isinstance(data, dict):
        raise ValueError("a squash marker is not an object")
    committed = data.get("committed")
    if not isinstance(committed, bool):
        raise ValueError("squash marker: committed is not a boolean")
    commit = data.get("commit")
    return SquashMarker(
        tip=_sha(data, "tip"),
        target=_str(data, "target"),
        at_ms=_int(data, "at_ms"),
        committed=committed,
        commit=None if commit is None else _sha(data, "commit"),
    )


def _str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} is not a nonempty string")
    return value


def _sha(data: dict[str, Any], key: str) -> str:
    value = _str(data, key)
    if len(value) not in (40, 64) or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"{key} is not a commit id")
    return value


def _int(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} is not a non-negative integer")
    return value
