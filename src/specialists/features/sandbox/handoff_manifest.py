"""The handoff manifest: which worktree children exist, where, and what became of their work.

    .specialists/handoffs/<id>.json        the manifest (0600, replaced atomically, fsynced)
    .specialists/handoffs/<id>.lock        every change to the manifest takes this lock
    .specialists/handoffs/<id>/<sb>.patch  each child's captured patch (git diff --binary)

    {"schema": 1, "id": "…", "owner": "<workflow job id>|null", "origin": "/abs/working/copy",
     "base_sha": "…", "created_at_ms": …, "children": [
       {"key": "feature-a", "sandbox": "hw-…", "branch": "sandbox-hw-…", "worktree": "/abs",
        "state": "planned", "job_id": null, "problem": null, "setup": null, "links": [],
        "patch": null, "stat": null, "tip": null, "preserved": null, "warnings": [],
        "worktree_removed": false, "branch_removed": false, "ended_at_ms": null}]}

A child is journaled as `planned` *before* its worktree is created, so a crash at any point
leaves a manifest naming every path and branch that may exist. States: planned -> ready (or
create_failed, setup_failed) -> captured (patch and stat recorded) or preserved (no patch:
the work was committed to its branch or left in place, `preserved` says which) -> discarded.
The file is untrusted on read: damaged, planted or oversized is one clear HandoffError.
`handoffs/` is a Record of kind `handoffs` (store/kinds.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox.rules import is_id
from specialists.store.fields import EMPTY, Declared
from specialists.store.file_record import FileRecord
from specialists.store.files import parse_object, read_bytes
from specialists.store.kinds import HANDOFFS
from specialists.store.paths import state_dir

SCHEMA = 1
HANDOFFS_DIR = "handoffs"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_CHILDREN = 1000
ChildState = Literal[
    "planned", "ready", "create_failed", "setup_failed", "captured", "preserved", "discarded"
]
CHILD_STATES: tuple[str, ...] = get_args(ChildState)


class HandoffError(UserError):
    """Bad input for a handoff, a damaged manifest, or a tree that is not clean."""


class ChildEntry(Declared):
    _what = "child entry"
    _choices = {"state": frozenset(CHILD_STATES)}
    key: str
    sandbox: str
    branch: str
    worktree: str
    state: str = "planned"  # one of CHILD_STATES
    job_id: str | None = None
    problem: str | None = None  # why create or setup failed, or why no patch was captured
    setup: dict[str, Any] | None = None  # the setup hook's outcome
    links: list[dict[str, Any]] = EMPTY  # dependency folders linked or not, and why
    patch: str | None = None
    stat: dict[str, Any] | None = None  # files, insertions, deletions, text
    tip: str | None = None  # the branch tip when its work was captured
    preserved: str | None = None  # "committed <sha>" or "in place"
    warnings: list[str] = EMPTY
    worktree_removed: bool = False
    branch_removed: bool = False
    ended_at_ms: int | None = None

    @classmethod
    def _after_read(cls, record: ChildEntry, where: str) -> None:
        if not is_id(record.sandbox) or record.branch != f"sandbox-{record.sandbox}":
            raise StoreError(f"{where}: its sandbox id or branch is not one of ours")


class HandoffManifest(Declared):
    _what = "manifest"
    schema: int = SCHEMA
    id: str
    owner: str | None = None
    origin: str
    base_sha: str
    created_at_ms: int
    children: list[ChildEntry] = EMPTY

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        if data.get("schema") != SCHEMA:
            raise StoreError(f"{where}: schema {str(data.get('schema'))[:20]}")
        children = data.get("children")
        if isinstance(children, list) and len(children) > MAX_CHILDREN:
            raise StoreError(f"{where}: more than {MAX_CHILDREN} children")

    @classmethod
    def _after_read(cls, record: HandoffManifest, where: str) -> None:
        check_handoff_id(record.id)

    def child(self, key: str) -> ChildEntry:
        for entry in self.children:
            if entry.key == key:
                return entry
        raise HandoffError(f"handoff {self.id} has no child {key[:80]!r}")

    def with_child(self, entry: ChildEntry) -> HandoffManifest:
        kept = [entry if c.key == entry.key else c for c in self.children]
        if entry.key not in {c.key for c in self.children}:
            kept.append(entry)
        return self.replace(children=kept)


def handoffs_dir(project: Path) -> Path:
    return state_dir(project) / HANDOFFS_DIR


def handoffs_record(project: Path) -> FileRecord:
    return HANDOFFS.record(handoffs_dir(project))


def check_handoff_id(handoff_id: object) -> str:
    if not isinstance(handoff_id, str) or not is_id(handoff_id):
        shown = handoff_id[:60] if isinstance(handoff_id, str) else type(handoff_id).__name__
        raise HandoffError(
            f"invalid handoff id {shown!r}",
            hint="1 to 64 letters, digits, '_' or '-' (a workflow's job id works)",
        )
    return handoff_id


def manifest_path(project: Path, handoff_id: str) -> Path:
    return handoffs_dir(project) / f"{check_handoff_id(handoff_id)}.json"


def patch_dir(project: Path, handoff_id: str) -> Path:
    return handoffs_dir(project) / check_handoff_id(handoff_id)


def read_manifest(path: Path) -> HandoffManifest:
    """The manifest at `path`; one clear HandoffError for anything else there."""
    try:
        data = parse_object(read_bytes(path, MAX_MANIFEST_BYTES), path)
    except FileNotFoundError:
        raise HandoffError(f"no handoff manifest at {path}") from None
    except StoreError as exc:
        raise HandoffError(f"handoff manifest unreadable: {exc.one_line()}") from None
    except OSError as exc:
        raise HandoffError(f"handoff manifest {path} unreadable: {exc.strerror}") from None
    try:
        return HandoffManifest.from_dict(data)
    except StoreError as exc:
        raise HandoffError(
            f"handoff manifest {path} is damaged ({exc.message[:160]})",
            hint="the worktrees and branches it names are untouched: see `git worktree list`",
        ) from None


def write_manifest(project: Path, manifest: HandoffManifest) -> Path:
    """Replace the manifest (fsynced: the recovery record must survive a crash)."""
    handoffs_record(project).replace(check_handoff_id(manifest.id), manifest.to_dict())
    return manifest_path(project, manifest.id)


def list_manifests(project: Path) -> list[Path]:
    folder = handoffs_dir(project)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    return [folder / n for n in names if n.endswith(".json") and is_id(n[:-5])]
