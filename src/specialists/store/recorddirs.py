"""Small durable records kept one directory each (schedules, missions): made whole or not at
all, changed under the directory's lock, removed without a half-removed state.

- `create_whole` builds the record in a hidden staging directory (`.new-<name>-...`) and
  renames it into place: a directory rename never replaces a full one, so of two racing
  creates one wins and the other is told the name exists; a failure (a full disk) leaves
  nothing a reader would see.
- `locked` holds the flock of `<dir>/lock` and re-checks the directory still exists.
- `remove_whole` renames the record aside under its lock (nothing can start on it after),
  then removes it.
- `sweep` removes what a create or remove killed midway left (hidden, over an hour old).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.store.files import ensure_dir
from specialists.store.locks import held

STALE_MS = 3_600_000
LOCK_FILE = "lock"


def ids(root: Path) -> list[str]:
    """The record names under `root`, sorted (hidden staging and removal names left out)."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith("."))


def real_dir(path: Path, missing: NotFound) -> Path:
    """`path` if it is a real directory; StoreError for a planted symlink, `missing` else."""
    if path.is_symlink():
        raise StoreError(f"{path} is a symbolic link; not followed")
    if not path.is_dir():
        raise missing
    return path


@contextlib.contextmanager
def locked(path: Path, missing: NotFound) -> Iterator[Path]:
    real_dir(path, missing)
    with held(path / LOCK_FILE):
        if not path.is_dir():  # removed while we waited
            raise missing
        yield path


def create_whole(
    final: Path, fill: Callable[[Path], None], exists: UserError, *, now_ms: int
) -> None:
    """Make the record directory `final` by `fill(staging)`, or nothing (`exists` raised
    when the name is taken, before or during the create)."""
    root = final.parent
    ensure_dir(root.parent)
    ensure_dir(root)
    if os.path.lexists(final):
        raise exists
    sweep(root, now_ms)
    staging = root / f".new-{final.name}-{os.getpid()}-{os.urandom(3).hex()}"
    ensure_dir(staging)
    try:
        fill(staging)
        try:
            os.rename(staging, final)  # a directory rename never replaces a full one
        except OSError as exc:
            if not os.path.lexists(final):
                raise
            raise exists from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def remove_whole(path: Path, missing: NotFound) -> None:
    with locked(path, missing):
        aside = path.parent / f".deleted-{path.name}-{os.urandom(3).hex()}"
        os.rename(path, aside)
    shutil.rmtree(aside, ignore_errors=True)


def sweep(root: Path, now_ms: int) -> None:
    for name in os.listdir(root):
        if not name.startswith((".new-", ".deleted-")):
            continue
        path = root / name
        with contextlib.suppress(FileNotFoundError):
            if now_ms - os.lstat(path).st_mtime * 1000 > STALE_MS and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
