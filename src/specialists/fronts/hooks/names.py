"""Specialist names by definition file name, without parsing YAML: the session-start hook
lists them and `status`'s health line counts them. `definition_dirs` mirrors
catalog.discovery.source_dirs (a test keeps the two equal) because importing the catalog
costs more than the hook may take. Paths are text (`os.path`): `status` and the hooks are
waited on, and `pathlib` would cost them a fifth of their time.
"""

from __future__ import annotations

import os

from specialists.base.vocab import SPEC_SUFFIXES

MAX_DEPTH = 4  # as catalog.discovery.MAX_DEPTH
_HERE = os.path.dirname(os.path.realpath(__file__))
BUILTIN_DIR = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "catalog", "builtin")


def definition_dirs(project_root: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """(directory, kind) in catalog precedence order; kind is 'specialist' or 'agent'."""
    join, home = os.path.join, os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or join(home, ".config")
    claude = os.environ.get("CLAUDE_CONFIG_DIR") or join(home, ".claude")
    pi = os.environ.get("PI_CODING_AGENT_DIR") or join(home, ".pi", "agent")
    project = [
        (join(project_root, "specialists"), "specialist"),
        (join(project_root, ".agents", "specialists"), "specialist"),
        (join(project_root, ".claude", "agents"), "agent"),
        (join(project_root, ".pi", "agents"), "agent"),
    ]
    user = [
        (join(config, "specialists", "specialists"), "specialist"),
        (join(home, ".agents", "specialists"), "specialist"),
        (join(claude, "agents"), "agent"),
        (join(pi, "agents"), "agent"),
    ]
    seen = {os.path.realpath(p) for p, _ in project}
    user = [(p, k) for p, k in user if os.path.realpath(p) not in seen]
    return [*project, *user, (BUILTIN_DIR, "specialist")]


def _stem(name: str, kind: str) -> str:
    if name.startswith("."):
        return ""
    if kind == "agent":
        return name[:-3] if name.endswith(".md") else ""
    for suffix in SPEC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


def specialist_names(project_root: str | os.PathLike[str]) -> list[str]:
    """Names by file name, first scope wins, sorted. Damaged files are `list`'s business."""
    names: set[str] = set()
    for directory, kind in definition_dirs(project_root):
        if not os.path.isdir(directory):
            continue
        top = directory.rstrip(os.sep).count(os.sep)
        for dirpath, dirnames, filenames in os.walk(directory):
            depth = dirpath.rstrip(os.sep).count(os.sep) - top
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and depth < MAX_DEPTH]
            for name in filenames:
                stem = _stem(name, kind)
                if stem:
                    names.add(stem)
    return sorted(names)
