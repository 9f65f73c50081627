"""Specialist definitions: loading, scopes and the resolved catalog.

    from specialists.catalog import load_catalog
    cat = load_catalog(project_root)       # never raises for a bad file
    cat.get("reviewer"); cat.all(); cat.problems; cat.shadowed

Nothing here imports YAML until a YAML file is read.
"""

from __future__ import annotations

from specialists.catalog.discovery import (
    Catalog,
    SourceDir,
    load_catalog,
    load_specialist_file,
    source_dirs,
)
from specialists.catalog.model import (
    LoadProblem,
    MissingSkill,
    Scope,
    ScriptSpec,
    Specialist,
    specialist_to_dict,
)
from specialists.catalog.schema import PERMISSIONS, RUNNERS

__all__ = [
    "PERMISSIONS",
    "RUNNERS",
    "Catalog",
    "LoadProblem",
    "MissingSkill",
    "Scope",
    "ScriptSpec",
    "SourceDir",
    "Specialist",
    "load_catalog",
    "load_specialist_file",
    "source_dirs",
    "specialist_to_dict",
]
