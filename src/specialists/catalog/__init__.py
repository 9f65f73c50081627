"""Specialist definitions: loading, scopes and the resolved catalog.

    from specialists.catalog import load_catalog
    cat = load_catalog(project_root)       # never raises for a bad file
    cat.get("reviewer"); cat.all(); cat.problems; cat.shadowed

Nothing here imports YAML until a YAML file is read. The names below are loaded on first
use, so importing one submodule (a runner needs only `catalog.skills`) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specialists.catalog.discovery import (
        Catalog,
        load_catalog,
        load_specialist_file,
        source_dirs,
    )
    from specialists.catalog.model import Specialist, specialist_to_dict

_HOMES = {
    "Catalog": "discovery",
    "load_catalog": "discovery",
    "load_specialist_file": "discovery",
    "source_dirs": "discovery",
    "Specialist": "model",
    "specialist_to_dict": "model",
}

__all__ = [
    "Catalog",
    "Specialist",
    "load_catalog",
    "load_specialist_file",
    "source_dirs",
    "specialist_to_dict",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'specialists.catalog' has no attribute {name!r}")
    return getattr(importlib.import_module(f"specialists.catalog.{home}"), name)
