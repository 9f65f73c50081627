"""Worktree handoffs (seed 004 "Worktree Isolation"): children that write in parallel, each in
its own sandbox, with a manifest journaled before any of them runs.

The workflow runtime calls `begin_handoff` before it launches worktree children and
`child_ended` when each one ends. Before: the root working copy must be clean (our own
`.specialists/` does not count); each child is journaled `planned` (sandbox id, branch and
worktree path decided) before its worktree exists, then the worktree is created from the one
base commit, the setup hook runs in it, and safe dependency folders are linked
(handoff_links.py). After: the links are taken back and the child's whole work (commits,
staged, unstaged and untracked-not-ignored files) is captured as a patch against the base,
with its diff stat, into the manifest. Work that cannot be captured is preserved with a
warning, never deleted: uncommitted changes are committed to the child's branch (hooks off),
else left in place. The squash (`sandboxes squash`) is the merge-back path; the manifest is
the review path (`specialists worktree show`); `worktree discard` is the only deletion.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError
from specialists.features.sandbox.backend import SandboxError
from specialists.features.sandbox.cmd import OUTPUT_CAP, git_env
from specialists.features.sandbox.git import GitSandbox
from specialists.features.sandbox.handoff_links import (
    DEFAULT_LINKS,
    link_dependencies,
    unlink_dependencies,
)
from specialists.features.sandbox.handoff_manifest import (
    MAX_CHILDREN,
    ChildEntry,
    HandoffError,
    HandoffManifest,
    check_handoff_id,
    handoffs_record,
    manifest_path,
    patch_dir,
    read_manifest,
    write_manifest,
)
from specialists.features.sandbox.prune import pending
from specialists.features.sandbox.rules import branch_name
from specialists.features.sandbox.worktree_tree import TreeFailed, worktree_tree
from specialists.process.short import run_short
from specialists.store.atomic import write_atomic
from specialists.store.files import ensure_dir

DEFAULT_SETUP_TIMEOUT_S = 600.0
SETUP_OUTPUT_CAP = 256 * 1024
SETUP_TAIL = 4096
MAX_KEY_CHARS = 200
MAX_PATCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SetupHook:
    """A command run in each fresh worktree (installing dependencies), with a timeout."""

    command: str
    timeout_s: float = DEFAULT_SETUP_TIMEOUT_S


@dataclass(frozen=True)
class ChildWorktree:
    """Where to launch one child: cwd `path`, job record `sandbox=sandbox_id`."""

    key: str
    sandbox_id: str
    branch: str
    path: Path
    ready: bool  # false: creation or the setup hook failed (`problem`); do not launch it
    problem: str | None = None


@dataclass(frozen=True)
class HandoffStarted:
    handoff_id: str
    manifest: Path
    base_sha: str
    children: tuple[ChildWorktree, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChildEnded:
    key: str
    state: str  # captured, preserved, or (nothing to capture) what it was
    patch: Path | None
    summary: str  # the diff stat's one line, or what happened instead
    warnings: tuple[str, ...] = ()


def parse_setup(value: object, *, where: str = "worktree setup") -> SetupHook:
    """A setup hook from its option: a command string or {command, timeout_s?}."""
    if isinstance(value, str):
        value = {"command": value}
    if not isinstance(value, dict) or set(value) - {"command", "timeout_s"}:
        raise HandoffError(f"{where} must be a command or {{command, timeout_s}}")
    command, timeout = value.get("command"), value.get("timeout_s", DEFAULT_SETUP_TIMEOUT_S)
    if not isinstance(command, str) or not command.strip() or "\0" in command:
        raise HandoffError(f"{where} needs a non-empty command", hint='e.g. "npm ci"')
    if type(timeout) not in (int, float) or not 0 < timeout <= 24 * 3600:
        raise HandoffError(f"{where} timeout_s must be a number of seconds up to a day")
    return SetupHook(command, float(timeout))


def worktree_settings(raw: Mapping[str, Any]) -> tuple[SetupHook | None, tuple[str, ...]]:
    """config.toml's `[worktree]`: `setup` (a command or {command, timeout_s}), `setup_timeout_s`
    and `link` (dependency folders to link; [] for none). A workflow's own options win."""
    table = raw.get("worktree") or {}
    if not isinstance(table, Mapping):
        raise HandoffError("config [worktree] must be a table")
    unknown = sorted(set(table) - {"setup", "setup_timeout_s", "link"})
    if unknown:
        raise HandoffError(f"config [worktree] has unknown key {unknown[0]!r}")
    setup = None
    if table.get("setup") is not None:
        value = table["setup"]
        if isinstance(value, str) and "setup_timeout_s" in table:
            value = {"command": value, "timeout_s": table["setup_timeout_s"]}
        setup = parse_setup(value, where="config [worktree] setup")
    link = table.get("link", list(DEFAULT_LINKS))
    if not isinstance(link, list) or not all(isinstance(n, str) and _folder(n) for n in link):
        raise HandoffError("config [worktree] link must be a list of folder names")
    return setup, tuple(link)


def _folder(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..", ".git") and "\0" not in name


def begin_handoff(
    project: Path,
    handoff_id: str,
    keys: Sequence[str],
    *,
    origin: Path | None = None,
    owner: str | None = None,
    setup: SetupHook | None = None,
    link: Sequence[str] = DEFAULT_LINKS,
    clock: Callable[[], float] = time.time,
) -> HandoffStarted:
    """Journal and create one worktree per key; call before launching any of them. May be
    called again with the same id for a later batch (same base commit, new keys)."""
    check_handoff_id(handoff_id)
    keys = _checked_keys(keys)
    if not all(isinstance(n, str) and _folder(n) for n in link):
        raise HandoffError("link must name folders at the top of the working copy")
    gs = GitSandbox(project)
    top = gs.repo(origin or gs.project).toplevel
    dirty = pending(gs, top)
    if dirty:
        shown = ", ".join(e.path for e in dirty[:8]) + (" ..." if len(dirty) > 8 else "")
        raise HandoffError(
            f"worktree children need a clean working copy; {top} has changes: {shown}",
            hint="commit or stash them first (.specialists/ does not count)",
        )
    base = gs.rev(top, "HEAD^{commit}")
    if base is None:
        raise HandoffError(f"{top} has no commit to branch worktrees from", hint="commit first")
    now = int(clock() * 1000)
    planned = [
        ChildEntry(key, sid, branch_name(sid), str(gs.root / sid))
        for key, sid in ((k, f"hw-{os.urandom(8).hex()}") for k in keys)
    ]

    def journal(manifest: HandoffManifest | None) -> HandoffManifest:
        if manifest is None:
            manifest = HandoffManifest(
                id=handoff_id, owner=owner, origin=str(top), base_sha=base, created_at_ms=now
            )
        elif manifest.base_sha != base or manifest.origin != str(top):
            raise HandoffError(
                f"handoff {handoff_id} began at {manifest.base_sha[:12]} in {manifest.origin}",
                hint="HEAD or the working copy changed since: use a new handoff id",
            )
        taken = {c.key for c in manifest.children} & set(keys)
        if taken:
            raise HandoffError(f"handoff {handoff_id} already has child {sorted(taken)[0]!r}")
        if len(manifest.children) + len(keys) > MAX_CHILDREN:
            raise HandoffError(f"a handoff holds at most {MAX_CHILDREN} children")
        for entry in planned:
            manifest = manifest.with_child(entry)
        return manifest

    path = update(project, handoff_id, journal)  # before any worktree exists
    started, warnings = [], []
    for entry in planned:
        done = _provision(gs, top, base, entry, setup, tuple(link))
        _record(project, handoff_id, done)
        warnings += [f"{done.key}: {w}" for w in done.warnings]
        started.append(
            ChildWorktree(
                done.key,
                done.sandbox,
                done.branch,
                Path(done.worktree),
                done.state == "ready",
                done.problem,
            )
        )
    return HandoffStarted(handoff_id, path, base, tuple(started), tuple(warnings))


def child_ended(
    project: Path,
    handoff_id: str,
    key: str,
    *,
    job_id: str | None = None,
    clock: Callable[[], float] = time.time,
) -> ChildEnded:
    """Capture one ended child's work into the manifest (idempotent: a second call returns
    what the first recorded)."""
    gs = GitSandbox(project)
    manifest = read_manifest(manifest_path(project, handoff_id))
    entry = manifest.child(key)
    # A `planned` child may have a worktree: the process that began it died in between.
    if entry.state not in ("planned", "ready", "setup_failed") or gs.get(entry.sandbox) is None:
        return _ended(entry)
    done = capture(gs, manifest, entry, int(clock() * 1000))
    if job_id is not None:
        done = done.replace(job_id=job_id)
    _record(project, handoff_id, done)
    return _ended(done)


def update(
    project: Path, handoff_id: str, change: Callable[[HandoffManifest | None], HandoffManifest]
) -> Path:
    """Read, change and write the manifest under its lock."""
    path = manifest_path(project, handoff_id)
    try:
        with handoffs_record(project).locked(handoff_id):  # never through a planted link
            current = read_manifest(path) if os.path.lexists(path) else None
            return write_manifest(project, change(current))
    except (StoreError, OSError) as exc:
        shown = exc.one_line() if isinstance(exc, StoreError) else str(exc)
        raise HandoffError(f"handoff manifest {path} not written: {shown}") from None


def _provision(
    gs: GitSandbox,
    top: Path,
    base: str,
    entry: ChildEntry,
    setup: SetupHook | None,
    link: tuple[str, ...],
) -> ChildEntry:
    try:
        gs.create(entry.sandbox, origin=top, start=base)
    except SandboxError as exc:
        return entry.replace(state="create_failed", problem=exc.one_line())
    worktree = Path(entry.worktree)
    if setup is not None:
        outcome = _run_setup(setup, worktree)
        entry = entry.replace(setup=outcome)
        if outcome["outcome"] != "passed":
            why = (
                f"setup hook `{setup.command[:80]}` {outcome['outcome']}: {outcome['tail'][-300:]}"
            )
            return entry.replace(state="setup_failed", problem=" ".join(why.split()))
    try:
        links = link_dependencies(gs, top, worktree, link)
    except (OSError, SandboxError) as exc:
        links = [{"name": ",".join(link), "linked": False, "why": f"linking failed: {exc}"}]
    return entry.replace(state="ready", links=tuple(links))


def _run_setup(setup: SetupHook, worktree: Path) -> dict[str, Any]:
    started = time.monotonic()
    done = run_short(
        ("/bin/sh", "-c", f"exec 2>&1\n{setup.command}"),
        cwd=worktree,
        timeout=setup.timeout_s,
        output_cap=SETUP_OUTPUT_CAP,
    )
    if done.error is not None:
        outcome = done.error
    else:
        outcome = "passed" if done.code == 0 else f"failed (exit {done.code})"
    return {
        "command": setup.command,
        "outcome": outcome,
        "exit_code": done.code,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "tail": done.out[-SETUP_TAIL:].decode("utf-8", "replace"),
    }


def _record(project: Path, handoff_id: str, entry: ChildEntry) -> None:
    def put(manifest: HandoffManifest | None) -> HandoffManifest:
        if manifest is None:
            raise HandoffError(f"the manifest of handoff {handoff_id} vanished while in use")
        return manifest.with_child(entry)

    update(project, handoff_id, put)


def _ended(entry: ChildEntry) -> ChildEnded:
    if entry.stat is not None:
        summary = str(entry.stat.get("summary", ""))
    else:
        summary = entry.problem or entry.preserved or entry.state
    patch = Path(entry.patch) if entry.patch else None
    return ChildEnded(entry.key, entry.state, patch, summary, tuple(entry.warnings))


def _checked_keys(keys: Sequence[str]) -> list[str]:
    found = list(keys)
    if not found:
        raise HandoffError("a handoff needs at least one child key")
    if len(found) > MAX_CHILDREN:
        raise HandoffError(f"a handoff holds at most {MAX_CHILDREN} children")
    for key in found:
        if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or "\0" in key:
            raise HandoffError(f"child key {str(key)[:60]!r} must be text of 1 to 200 characters")
    if len(set(found)) != len(found):
        raise HandoffError("child keys must be unique within a handoff")
    return found


# --- capturing an ended child's work -----------------------------------------------------


class CaptureFailed(Exception):
    """The patch could not be captured; the message says why."""


def capture(
    gs: GitSandbox, manifest: HandoffManifest, entry: ChildEntry, now_ms: int
) -> ChildEntry:
    """Everything the child left, not only what it committed: the worktree is snapshotted
    into a throwaway index (a copy of its own, so unchanged files are not re-read), `git add
    -A` (ignored files stay out, and so does a nested `.specialists/`), `git write-tree`, and
    the patch is `git diff --binary <base> <that tree>`. The child's branch, index and files
    are untouched."""
    worktree = Path(entry.worktree)
    warnings = list(entry.warnings) + unlink_dependencies(worktree, entry.links)
    tip = gs.tip(entry.branch)
    try:
        tree = _snapshot(gs, manifest, entry)
        patch, stat = _patch(gs, entry.branch, manifest.base_sha, tree)
        path = patch_dir(gs.project, manifest.id) / f"{entry.sandbox}.patch"
        ensure_dir(path.parent)
        write_atomic(path, patch, durable=True)
    except (CaptureFailed, SandboxError, StoreError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, SandboxError | StoreError) else str(exc)
        return _preserve(gs, entry, tip, why, warnings, now_ms)
    committed_tree = gs.rev(gs.project, f"{tip}^{{tree}}") if tip else None
    if committed_tree != tree:
        warnings.append(f"uncommitted work in {worktree} is in the patch, not on {entry.branch}")
    return entry.replace(
        state="captured", patch=str(path), stat=stat, tip=tip,
        warnings=tuple(warnings), ended_at_ms=now_ms,
    )  # fmt: skip


def _snapshot(gs: GitSandbox, manifest: HandoffManifest, entry: ChildEntry) -> str:
    worktree = Path(entry.worktree)
    if not worktree.is_dir():
        raise CaptureFailed(f"its worktree {worktree} is gone")
    folder = patch_dir(gs.project, manifest.id)
    ensure_dir(folder.parent)
    ensure_dir(folder)
    scratch = folder / f".index-{entry.sandbox}-{os.getpid()}"
    try:
        return worktree_tree(worktree, scratch, env=git_env(), timeout_s=gs.timeout_s)
    except TreeFailed as exc:
        raise CaptureFailed(str(exc)) from exc


def _patch(gs: GitSandbox, branch: str, base: str, tree: str) -> tuple[bytes, dict[str, object]]:
    diff = ("diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary")
    patch = gs.git(gs.project, *diff, base, tree)
    if len(patch) >= min(MAX_PATCH_BYTES, OUTPUT_CAP):
        raise CaptureFailed(f"the patch is larger than {MAX_PATCH_BYTES >> 20} MiB")
    found = gs.stat(branch, base, tree, renames=False)
    stat = {
        "files": [f.path for f in found.files],
        "insertions": found.insertions,
        "deletions": found.deletions,
        "summary": found.counts(),
        "text": found.text[-8000:],
    }
    return patch, stat


def _preserve(
    gs: GitSandbox,
    entry: ChildEntry,
    tip: str | None,
    why: str,
    warnings: list[str],
    now_ms: int,
) -> ChildEntry:
    """No patch: make sure the work survives anyway, and say where it is."""
    sandbox = gs.get(entry.sandbox)
    preserved = f"on {entry.branch} at {tip[:12]}" if tip else "in place"
    if sandbox is not None and Path(entry.worktree).is_dir():
        try:
            if gs.has_pending_work(Path(entry.worktree)):
                made = gs.commit_all(sandbox, f"handoff: preserved work of {entry.key[:60]}")
                preserved = f"committed {made.sha} on {entry.branch}"
                tip = made.sha
        except SandboxError as exc:
            preserved = f"in place at {entry.worktree} (not committed: {exc.one_line()})"
    warnings.append(f"no patch captured ({why}); the work is preserved {preserved}")
    return entry.replace(
        state="preserved", problem=why, preserved=preserved, tip=tip,
        warnings=tuple(warnings), ended_at_ms=now_ms,
    )  # fmt: skip
