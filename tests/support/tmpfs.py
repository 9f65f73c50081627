"""A small tmpfs for full-disk tests (we run as root in CI; elsewhere the tests skip)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "256k", inodes: int | None = None) -> Iterator[Path]:
    """Mount a tmpfs of `size` (and at most `inodes` files, when given) at `path` for the
    block; skip the test where mount fails."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" if inodes is None else f"size={size},nr_inodes={inodes}"
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}): full-disk behaviour is not tested")
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here (needs root: {done.stderr.strip()[:200]}); "
            "full-disk behaviour is not tested"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def fill(directory: Path, name: str = "filler") -> Path:
    """Write into `directory` until the filesystem is full; returns the filler file."""
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (65536, 4096, 512, 1):
            block = b"f" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return path


def fill_inodes(directory: Path) -> Path:
    """Create empty files in `directory` until the filesystem has no inode left (a disk full
    of small files: a new file or directory fails, a write to an old one may not); returns
    the directory, whose removal frees them."""
    directory.mkdir()
    made = 0
    while True:
        try:
            os.close(os.open(directory / str(made), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            return directory
        made += 1
