"""Changing a scope's agents.json (catalog/managed.py reads it): locked, then atomic.

A damaged file is refused rather than rewritten: it may hold a person's disables.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from specialists.base.errors import UserError
from specialists.catalog.managed import (
    SCHEMA,
    ManagedSettings,
    WritableScope,
    read_settings,
    settings_path,
)
from specialists.store.atomic import write_atomic
from specialists.store.locks import held


@contextlib.contextmanager
def change_settings(scope: WritableScope, project_root: Path) -> Iterator[ManagedSettings]:
    """The scope's settings to change in place; written back (only if changed) on exit."""
    path = settings_path(scope, project_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with held(path.with_name(path.name + ".lock")):
        settings = read_settings(path)
        if settings.problem:
            raise UserError(
                f"{path}: {settings.problem}; not changed",
                hint="fix it, or move it away to start afresh",
            )
        before = (dict(settings.disabled), dict(settings.written))
        yield settings
        if (settings.disabled, settings.written) != before:
            write_atomic(path, _dump(settings))


def _dump(settings: ManagedSettings) -> bytes:
    data = {
        "schema": SCHEMA,
        "agents": {name: {"disabled": off} for name, off in sorted(settings.disabled.items())},
        "written": dict(sorted(settings.written.items())),
    }
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode()
