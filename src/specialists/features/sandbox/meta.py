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
from pathlib import Path
from typing import Any

from specialists.base.errors import Planted, StoreError
from specialists.features.sandbox.backend import (
    PendingSquash,
    Problem,
    Sandbox,
    SandboxError,
    SquashMarker,
    is_commit_id,
)
from specialists.features.sandbox.rules import branch_name, is_id
from specialists.store.fields import Declared
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
        except StoreError as exc:
            return None, Problem(str(path), f"damaged: {exc.message}")

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


class SandboxFile(Declared):
    """The file's fields (a Sandbox adds its path, derived from the id, never read)."""

    _what = "sandbox record"
    schema: int
    id: str
    branch: str
    base: str
    base_sha: str
    origin: str
    parent: str | None = None
    created_at_ms: int
    removed_at_ms: int | None = None
    squashes: list[SquashMarker]
    pending: PendingSquash | None = None

    @classmethod
    def _after_read(cls, record: SandboxFile, where: str) -> None:
        if record.schema != SCHEMA:
            raise StoreError(f"{where}: schema {record.schema}, expected {SCHEMA}")
        if not (record.base and is_commit_id(record.base_sha)):
            raise StoreError(f"{where}: base or base_sha is not as written")
        if not os.path.isabs(record.origin):
            raise StoreError(f"{where}: origin is not an absolute path")
        if record.parent is not None and not is_id(record.parent):
            raise StoreError(f"{where}: parent is not a sandbox id")
        if record.created_at_ms < 0 or (record.removed_at_ms or 0) < 0:
            raise StoreError(f"{where}: a time is negative")


def to_dict(sb: Sandbox) -> dict[str, Any]:
    fields = {k: getattr(sb, k) for k in ("id", "branch", "base", "base_sha", "parent")}
    return SandboxFile(
        schema=SCHEMA,
        origin=str(sb.origin),
        created_at_ms=sb.created_at_ms,
        removed_at_ms=sb.removed_at_ms,
        squashes=list(sb.squashes[-MAX_MARKERS:]),
        pending=sb.pending,
        **fields,
    ).to_dict()


def from_dict(data: dict[str, Any], root: Path, sandbox_id: str) -> Sandbox:
    """A record read back; every field checked. The path is derived, never trusted."""
    r = SandboxFile.from_dict(data)
    if r.id != sandbox_id or r.branch != branch_name(sandbox_id):
        raise StoreError("sandbox record: id or branch does not match the file name")
    return Sandbox(
        id=sandbox_id,
        path=root / sandbox_id,
        branch=r.branch,
        base=r.base,
        base_sha=r.base_sha,
        origin=Path(r.origin),
        parent=r.parent,
        created_at_ms=r.created_at_ms,
        squashes=tuple(r.squashes),
        removed_at_ms=r.removed_at_ms,
        pending=r.pending,
    )
