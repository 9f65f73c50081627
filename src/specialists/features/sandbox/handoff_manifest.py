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

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox.rules import is_id
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
CHILD_STATES: tuple[ChildState, ...] = (
    "planned", "ready", "create_failed", "setup_failed", "captured", "preserved", "discarded",
)  # fmt: skip


class HandoffError(UserError):
    """Bad input for a handoff, a damaged manifest, or a tree that is not clean."""


@dataclass(frozen=True)
class ChildEntry:
    key: str
    sandbox: str
    branch: str
    worktree: str
    state: ChildState = "planned"
    job_id: str | None = None
    problem: str | None = None  # why create or setup failed, or why no patch was captured
    setup: dict[str, Any] | None = None  # the setup hook's outcome
    links: tuple[dict[str, Any], ...] = ()  # dependency folders linked or not, and why
    patch: str | None = None
    stat: dict[str, Any] | None = None  # files, insertions, deletions, text
    tip: str | None = None  # the branch tip when its work was captured
    preserved: str | None = None  # "committed <sha>" or "in place"
    warnings: tuple[str, ...] = ()
    worktree_removed: bool = False
    branch_removed: bool = False
    ended_at_ms: int | None = None

    def replace(self, **changes: Any) -> ChildEntry:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class HandoffManifest:
    id: str
    origin: str
    base_sha: str
    created_at_ms: int
    owner: str | None = None
    children: tuple[ChildEntry, ...] = field(default=())

    def child(self, key: str) -> ChildEntry:
        for entry in self.children:
            if entry.key == key:
                return entry
        raise HandoffError(f"handoff {self.id} has no child {key[:80]!r}")

    def with_child(self, entry: ChildEntry) -> HandoffManifest:
        kept = tuple(entry if c.key == entry.key else c for c in self.children)
        if entry.key not in {c.key for c in self.children}:
            kept = (*kept, entry)
        return dataclasses.replace(self, children=kept)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "owner": self.owner,
            "origin": self.origin,
            "base_sha": self.base_sha,
            "created_at_ms": self.created_at_ms,
            "children": [_child_dict(c) for c in self.children],
        }


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
        return _manifest(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise HandoffError(
            f"handoff manifest {path} is damaged ({_what(exc)})",
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


def _child_dict(c: ChildEntry) -> dict[str, Any]:
    data = dataclasses.asdict(c)
    data["links"] = list(c.links)
    data["warnings"] = list(c.warnings)
    return data


def _manifest(data: dict[str, Any]) -> HandoffManifest:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"schema {str(data.get('schema'))[:20]}")
    children = data["children"]
    if not isinstance(children, list) or len(children) > MAX_CHILDREN:
        raise ValueError("children is not a list of entries")
    manifest = HandoffManifest(
        id=_text(data, "id"),
        origin=_text(data, "origin"),
        base_sha=_text(data, "base_sha"),
        created_at_ms=_int(data, "created_at_ms"),
        owner=_text(data, "owner", optional=True),
        children=tuple(_child(c) for c in children),
    )
    check_handoff_id(manifest.id)
    return manifest


def _child(raw: object) -> ChildEntry:
    if not isinstance(raw, dict):
        raise ValueError("a child entry is not an object")
    state = raw["state"]
    if state not in CHILD_STATES:
        raise ValueError(f"unknown child state {str(state)[:30]!r}")
    sandbox = _text(raw, "sandbox")
    if not is_id(sandbox) or raw["branch"] != f"sandbox-{sandbox}":
        raise ValueError("a child's sandbox id or branch is not one of ours")
    links, warnings = raw.get("links", []), raw.get("warnings", [])
    if not isinstance(links, list) or not all(isinstance(x, dict) for x in links):
        raise ValueError("links is not a list of objects")
    if not isinstance(warnings, list) or not all(isinstance(x, str) for x in warnings):
        raise ValueError("warnings is not a list of text")
    for name in ("setup", "stat"):
        if raw.get(name) is not None and not isinstance(raw[name], dict):
            raise ValueError(f"{name} is not an object")
    return ChildEntry(
        key=_text(raw, "key"),
        sandbox=sandbox,
        branch=raw["branch"],
        worktree=_text(raw, "worktree"),
        state=state,
        job_id=_text(raw, "job_id", optional=True),
        problem=_text(raw, "problem", optional=True),
        setup=raw.get("setup"),
        links=tuple(links),
        patch=_text(raw, "patch", optional=True),
        stat=raw.get("stat"),
        tip=_text(raw, "tip", optional=True),
        preserved=_text(raw, "preserved", optional=True),
        warnings=tuple(warnings),
        worktree_removed=raw.get("worktree_removed") is True,
        branch_removed=raw.get("branch_removed") is True,
        ended_at_ms=raw.get("ended_at_ms") if type(raw.get("ended_at_ms")) is int else None,
    )


def _text(data: dict[str, Any], key: str, *, optional: bool = False) -> Any:
    value = data.get(key) if optional else data[key]
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} is not text")
    return value


def _int(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if type(value) is not int:
        raise ValueError(f"{key} is not an integer")
    return value


def _what(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"{exc.args[0]} is missing"
    return str(exc)[:120]
