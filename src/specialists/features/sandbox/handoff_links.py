"""Linking the root's dependency folders (`node_modules`, `.venv`) into a fresh worktree.

A worktree starts from tracked files, so ignored dependency folders are absent. Linking the
root's folder saves an install, and is done only where it is safe; each refusal says why:

- the folder is tracked (the worktree has its own copy: linking would shadow it);
- the worktree already has one (the setup hook made it);
- a symlink there would not be ignored (a `node_modules/` pattern matches directories only,
  so the child's commit would add the link): the link is taken back;
- it would run the root's code instead of the worktree's: a `.venv` with an editable install
  of the root (a `.pth` or editable finder naming the root's path), or a `node_modules` entry
  that links back into the root's tree (npm or pnpm workspaces).

A linked folder is *shared*: a child that installs packages writes into the root's folder.
Give such children a setup hook instead (`link=()`). Links are taken back when the child
ends, before its work is captured, and only while they are still our link to that folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.base.errors import StoreError
from specialists.store.files import read_bytes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from specialists.features.sandbox.git import GitSandbox


DEFAULT_LINKS = ("node_modules", ".venv")
_MAX_SCANNED = 400  # entries looked at per folder when checking for links into the root
_PTH_CAP = 64 * 1024


def link_dependencies(
    gs: GitSandbox, origin: Path, worktree: Path, names: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Link each folder of `names` that is safe to link; one record per name."""
    records = []
    for name in names:
        source, dest = origin / name, worktree / name
        why = _unsafe(gs, origin, worktree, name)
        if why is None:
            os.symlink(source, dest, target_is_directory=True)
            ignored = gs.run(worktree, "check-ignore", "-q", "--no-index", "--", name)
            if ignored.code != 0:
                os.unlink(dest)
                why = (
                    "a symlink there would not be ignored (a trailing-slash pattern matches "
                    "directories only): add it to .gitignore without the slash, or provision "
                    "it with the setup hook"
                )
        records.append({"name": name, "target": str(source), "linked": why is None, "why": why})
    return records


def unlink_dependencies(worktree: Path, records: Sequence[dict[str, Any]]) -> list[str]:
    """Take back the links `link_dependencies` made, if they are still ours; warnings."""
    warnings = []
    for record in records:
        if not record.get("linked"):
            continue
        dest = worktree / str(record.get("name"))
        try:
            target = os.readlink(dest)
        except FileNotFoundError:
            continue
        except OSError:
            warnings.append(f"{dest} is no longer our link (left as it is)")
            continue
        if target == record.get("target"):
            os.unlink(dest)
        else:
            warnings.append(f"{dest} now links to {target} (left as it is)")
    return warnings


def _unsafe(gs: GitSandbox, origin: Path, worktree: Path, name: str) -> str | None:
    source = origin / name
    if not source.is_dir():
        return "absent in the root"
    if os.path.lexists(worktree / name):
        return "the worktree already has one"
    tracked = gs.run(origin, "ls-files", "-z", "--", name)
    if tracked.code != 0 or tracked.stdout:
        return "tracked: the worktree has its own copy"
    root = Path(os.path.realpath(origin))
    if name == ".venv" or (source / "pyvenv.cfg").is_file():
        found = _editable_root(source, root)
        if found:
            return f"{found} installs the root's own code (the child would test the root's)"
    back = _links_into(source, root)
    if back:
        return f"{back} links into the root's tree (the child would run the root's code)"
    return None


def _editable_root(venv: Path, root: Path) -> str | None:
    """A `.pth` file or editable finder in the venv's site-packages naming `root`."""
    needle = os.fsencode(root)
    for site in sorted(venv.glob("lib/python*/site-packages"))[:4]:
        try:
            entries = sorted(os.listdir(site))[: _MAX_SCANNED * 10]
        except OSError:
            continue
        for entry in entries:
            if not (entry.endswith(".pth") or entry.startswith("__editable__")):
                continue
            try:
                data = read_bytes(site / entry, _PTH_CAP)
            except (StoreError, OSError):
                continue  # a link, a FIFO or a huge file: not an editable install record
            if needle in data:
                return name_of(site / entry, venv.parent)
    return None


def _links_into(folder: Path, root: Path) -> str | None:
    """An entry of `folder` (or of its @scope folders) that is a symlink resolving into
    `root` outside `folder` itself."""
    real_folder = Path(os.path.realpath(folder))
    seen = 0
    stack = [folder]
    while stack and seen < _MAX_SCANNED:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if entry.is_symlink():
                real = Path(os.path.realpath(entry.path))
                if root in real.parents and real_folder not in (real, *real.parents):
                    return name_of(Path(entry.path), folder.parent)
            elif entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return None


def name_of(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)
