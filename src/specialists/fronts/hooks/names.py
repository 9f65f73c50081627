"""Specialist names by definition file name, without parsing YAML: the session-start hook
lists them and `status`'s health line counts them. `definition_dirs` mirrors
catalog.discovery.source_dirs (a test keeps the two equal) because importing the catalog
costs more than the hook may take.
"""

from __future__ import annotations

import os
from pathlib import Path

from specialists.base.vocab import SPEC_SUFFIXES

MAX_DEPTH = 4  # as catalog.discovery.MAX_DEPTH
BUILTIN_DIR = Path(__file__).resolve().parents[2] / "catalog" / "builtin"


def definition_dirs(project_root: Path) -> list[tuple[Path, str]]:
    """(directory, kind) in catalog precedence order; kind is 'specialist' or 'agent'."""
    home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    pi = Path(os.environ.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
    project = [
        (project_root / "specialists", "specialist"),
        (project_root / ".agents" / "specialists", "specialist"),
        (project_root / ".claude" / "agents", "agent"),
        (project_root / ".pi" / "agents", "agent"),
    ]
    user = [
        (config / "specialists" / "specialists", "specialist"),
        (home / ".agents" / "specialists", "specialist"),
        (claude / "agents", "agent"),
        (pi / "agents", "agent"),
    ]
    seen = {_path_key(p) for p, _ in project}
    user = [(p, k) for p, k in user if _path_key(p) not in seen]
    return [*project, *user, (BUILTIN_DIR, "specialist")]


def _path_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path.absolute())


def _stem(name: str, kind: str) -> str:
    if name.startswith("."):
        return ""
    if kind == "agent":
        return name[:-3] if name.endswith(".md") else ""
    for suffix in SPEC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


def specialist_names(project_root: Path) -> list[str]:
    """Names by file name, first scope wins, sorted. Damaged files are `list`'s business."""
    names: set[str] = set()
    for directory, kind in definition_dirs(project_root):
        if not directory.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(directory):
            depth = len(Path(dirpath).relative_to(directory).parts)
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and depth < MAX_DEPTH]
            for name in filenames:
                stem = _stem(name, kind)
                if stem:
                    names.add(stem)
    return sorted(names)
