"""Skill paths: how a written path resolves, and which ones are missing.

One rule for every room (seed 000 section 4.1): `~` and `~/...` are the home directory,
`~user/...` that user's home, an absolute path stays, anything else is relative to `base`
(the project root for YAML definitions, the agent file's directory for Markdown ones, the
job's cwd for a runner). A missing path is a warning, never fatal: the catalog returns it
as a `MissingSkill` on the specialist, and the job records a notice for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from specialists.catalog.model import MissingSkill


def resolve_skill_path(raw: str | Path, base: Path, *, home: Path | None = None) -> Path:
    """Where a skill path as written points (pure apart from `~user` lookups)."""
    text = str(raw)
    if text == "~" or text.startswith("~/"):
        return (home if home is not None else Path.home()) / text[2:]
    expanded = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
    return expanded if expanded.is_absolute() else base / expanded


def resolve_skill_paths(
    raws: Sequence[str], base: Path, field: str
) -> tuple[tuple[Path, ...], tuple[MissingSkill, ...]]:
    """Every path resolved (in order), and the ones that do not exist."""
    resolved: list[Path] = []
    missing: list[MissingSkill] = []
    for i, raw in enumerate(raws):
        path = resolve_skill_path(raw, base)
        resolved.append(path)
        reason = _missing_reason(path)
        if reason:
            missing.append(MissingSkill(f"{field}[{i}]", raw, path, reason))
    return tuple(resolved), tuple(missing)


def _missing_reason(path: Path) -> str:
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "not found"
    except OSError as exc:  # permission denied, a symlink loop, a name too long
        return f"cannot be read ({exc.strerror or exc})"
    return ""
