"""A bounded directory walk shared by grep and find (skips VCS and dependency dirs)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

SKIP_DIRS = frozenset(
    {".git", ".hg", ".jj", ".svn", "node_modules", ".venv", "venv", "__pycache__",
     ".mypy_cache", ".ruff_cache", ".pytest_cache", ".specialists", ".tox", "dist", "build"}
)  # fmt: skip


def walk_files(root: Path) -> Iterator[Path]:
    """Files under root (or root itself), sorted per directory, symlinked dirs not followed."""
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name
