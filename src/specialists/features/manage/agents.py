"""Managing specialist definitions: create, update, delete, eject, disable, enable, reset.

Each operation returns an `AgentChange` (what happened, the path it touched, warnings) and
refuses, with one UserError and nothing written, whatever would lose a person's work:
- a file is changed or removed only when we wrote it and it is unchanged since: its bytes
  still hash to what `written` in the scope's agents.json records (catalog/managed.py). A
  hand-written or hand-edited file is refused unless the caller passes force;
- create and eject never write over an existing file, forced or not;
- a new file is written beside its final name and linked into place (link(2) fails if the
  name exists), so a reader never sees half a definition and a racing writer is never
  replaced;
- every definition is validated by the catalog's own schema before anything is written.
Markdown agent files (.claude/agents, .pi/agents) are read by the catalog but never
rewritten here: they belong to those tools.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import UserError
from specialists.base.reader import Invalid
from specialists.catalog import Catalog, Specialist, load_catalog
from specialists.catalog.discovery import BUILTIN_DIR, project_dirs, user_dirs
from specialists.catalog.managed import WritableScope, digest, settings_path
from specialists.catalog.schema import check_name, specialist_from_data
from specialists.features.manage.settings import change_settings

ChangeKind = Literal["created", "updated", "deleted", "ejected", "disabled", "enabled", "reset"]
HEADER = (
    "# Written by `specialists agents`. Edit it freely: once edited it is yours, and\n"
    "# `specialists agents update/delete/reset` will leave it alone.\n"
)
# Editable fields -> where they live in a definition (section, key).
FIELDS: dict[str, tuple[str, str]] = {
    "description": ("metadata", "description"),
    "model": ("execution", "model"),
    "runner": ("execution", "runner"),
    "permission": ("execution", "permission_required"),
    "thinking": ("execution", "thinking_level"),
    "timeout_ms": ("execution", "timeout_ms"),
    "system": ("prompt", "system"),
    "task_template": ("prompt", "task_template"),
}


@dataclass(frozen=True)
class AgentChange:
    kind: ChangeKind
    name: str
    scope: WritableScope
    path: Path | None
    changed: bool = True
    warnings: tuple[str, ...] = field(default_factory=tuple)


def target_dir(scope: WritableScope, project_root: Path) -> Path:
    """Where new definitions of a scope go: `<root>/specialists/`, or the user's."""
    dirs = project_dirs(project_root) if scope == "project" else user_dirs()
    return dirs[0].path


def _file_for(name: str, scope: WritableScope, project_root: Path) -> Path:
    return target_dir(scope, project_root) / f"{name}.specialist.yaml"


def in_scope(catalog: Catalog, name: str, scope: str) -> Specialist | None:
    """The definition of `name` in one scope (winner, shadowed or disabled), if any."""
    candidates = [catalog.by_name.get(name)]
    candidates += [loser for winner, loser in catalog.shadowed if winner.name == name]
    if name in catalog.disabled:
        candidates.append(catalog.disabled[name][1])
    for spec in candidates:
        if spec is not None and spec.scope == scope:
            return spec
    return None


def builtin_file(name: str) -> Path | None:
    path = BUILTIN_DIR / f"{name}.specialist.yaml"
    return path if path.is_file() else None


# --- create / update / delete -----------------------------------------------------------------


def create(
    project_root: Path, scope: WritableScope, name: str, values: dict[str, Any]
) -> AgentChange:
    try:
        check_name(name, "name")
    except Invalid as exc:
        raise UserError(f"invalid specialist name {name[:64]!r}: {exc.problem}") from None
    catalog = load_catalog(project_root)
    existing = in_scope(catalog, name, scope)
    if existing is not None:
        raise UserError(
            f"{name!r} is defined in {scope} scope already ({existing.source})",
            hint=f"use: specialists agents update {name}",
        )
    data: dict[str, Any] = {"specialist": {"metadata": {"name": name}}}
    _merge(data, values)
    path = _file_for(name, scope, project_root)
    body = HEADER + _dump_yaml(data)
    _validate(body, path, scope, project_root)
    _write_new(path, body.encode(), project_root, scope)
    warnings = []
    if scope == "user" and in_scope(catalog, name, "project"):
        warnings.append(f"a project definition of {name!r} shadows this one here")
    return AgentChange("created", name, scope, path, warnings=tuple(warnings))


def update(
    project_root: Path,
    scope: WritableScope,
    name: str,
    values: dict[str, Any],
    *,
    force: bool = False,
) -> AgentChange:
    path = _own_file(project_root, scope, name, force, verb="update")
    from specialists.catalog.files import parse_definition, read_definition

    try:
        data = parse_definition(path, read_definition(path))
    except Invalid as exc:
        raise UserError(f"{path}: {exc.problem}", hint="fix the file by hand") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold a mapping", hint="fix the file by hand")
    _merge(data, values)
    if path.name.endswith(".json"):
        import json

        body = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    else:
        body = HEADER + _dump_yaml(data)
    _validate(body, path, scope, project_root)
    _replace_file(path, body.encode(), project_root, scope)
    return AgentChange("updated", name, scope, path)


def delete(
    project_root: Path, scope: WritableScope, name: str, *, force: bool = False
) -> AgentChange:
    path = _own_file(project_root, scope, name, force, verb="delete")
    _remove_file(path, project_root, scope)
    warnings = []
    if builtin_file(name):
        warnings.append(f"the builtin {name!r} is visible again")
    return AgentChange("deleted", name, scope, path, warnings=tuple(warnings))


def eject(project_root: Path, scope: WritableScope, name: str) -> AgentChange:
    """Copy a builtin verbatim into a scope, to be edited there; never over a file."""
    source = builtin_file(name)
    if source is None:
        raise UserError(
            f"{name!r} is not a builtin specialist", hint="only builtins can be ejected"
        )
    existing = in_scope(load_catalog(project_root), name, scope)
    if existing is not None:
        raise UserError(
            f"{name!r} is defined in {scope} scope already ({existing.source})",
            hint=f"reset it first (specialists agents reset {name} --scope {scope})",
        )
    path = _file_for(name, scope, project_root)
    _write_new(path, source.read_bytes(), project_root, scope)
    return AgentChange("ejected", name, scope, path)


# --- disable / enable / reset -----------------------------------------------------------------


def set_disabled(
    project_root: Path, scope: WritableScope, name: str, disabled: bool
) -> AgentChange:
    catalog = load_catalog(project_root)
    if name not in catalog.by_name and name not in catalog.disabled:
        catalog.get(name)  # the catalog's own "unknown specialist" error, with suggestions
    with change_settings(scope, project_root) as settings:
        before = settings.disabled.get(name)
        if disabled:
            settings.disabled[name] = True
        elif scope == "project" and _user_disables(name, project_root):
            settings.disabled[name] = False  # the project's word wins over the user's
        else:
            settings.disabled.pop(name, None)
        changed = settings.disabled.get(name) != before
    after = load_catalog(project_root)
    warnings = []
    if not disabled and name in after.disabled:
        other = after.disabled[name][0]
        warnings.append(f"still disabled in {other} scope (enable it there: --scope {other})")
    path = settings_path(scope, project_root)
    return AgentChange(
        "disabled" if disabled else "enabled", name, scope, path, changed, tuple(warnings)
    )


def reset(
    project_root: Path, scope: WritableScope, name: str, *, force: bool = False
) -> AgentChange:
    """Back to the builtin: the scope's file (if ours) and its disable entry are removed."""
    if builtin_file(name) is None:
        raise UserError(
            f"{name!r} has no builtin to reset to",
            hint=f"use: specialists agents delete {name}",
        )
    spec = in_scope(load_catalog(project_root), name, scope)
    path = None
    if spec is not None and spec.source is not None:
        path = _own_file(project_root, scope, name, force, verb="reset")
        _remove_file(path, project_root, scope)
    with change_settings(scope, project_root) as settings:
        dropped = settings.disabled.pop(name, None) is not None
    return AgentChange("reset", name, scope, path, changed=path is not None or dropped)


def _user_disables(name: str, project_root: Path) -> bool:
    from specialists.catalog.managed import read_settings

    return read_settings(settings_path("user", project_root)).disabled.get(name) is True


# --- internals --------------------------------------------------------------------------------


def _own_file(project_root: Path, scope: WritableScope, name: str, force: bool, verb: str) -> Path:
    """The scope's definition file of `name`, refused unless we wrote it (or `force`)."""
    from specialists.catalog.managed import read_settings

    spec = in_scope(load_catalog(project_root), name, scope)
    if spec is None or spec.source is None:
        raise UserError(
            f"no {scope} definition of {name!r} to {verb}",
            hint="see: specialists agents list"
            + (" (builtins: eject first)" if verb == "update" else ""),
        )
    path = Path(spec.source)
    if path.name.endswith(".md"):
        raise UserError(
            f"{path} is a Markdown agent file of another tool; not rewritten",
            hint="edit or remove it by hand",
        )
    if force:
        return path
    recorded = read_settings(settings_path(scope, project_root)).written.get(str(path))
    try:
        current = digest(path.read_bytes())
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if recorded != current:
        why = "was written by hand" if recorded is None else "was edited since we wrote it"
        raise UserError(
            f"{path} {why}; not going to {verb} it",
            hint=f"edit it yourself, or pass --force to {verb} it anyway",
        )
    return path


def _merge(data: dict[str, Any], values: dict[str, Any]) -> None:
    body = data["specialist"] if isinstance(data.get("specialist"), dict) else data
    for key, value in values.items():
        if key not in FIELDS:
            raise UserError(f"unknown field {key!r}", hint="one of " + ", ".join(FIELDS))
        section, inner = FIELDS[key]
        if not isinstance(body.get(section), dict):
            body[section] = {}
        if value is None:
            body[section].pop(inner, None)
        else:
            body[section][inner] = value


def _dump_yaml(data: dict[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


def _validate(body: str, path: Path, scope: WritableScope, project_root: Path) -> None:
    from specialists.catalog.files import parse_definition

    try:
        specialist_from_data(
            parse_definition(path, body), source=path, scope=scope, project_root=project_root
        )
    except Invalid as exc:
        where = f"{exc.field}: " if exc.field else ""
        raise UserError(f"the definition would not load: {where}{exc.problem}") from None


def _write_new(path: Path, data: bytes, project_root: Path, scope: WritableScope) -> None:
    from specialists.store.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        raise UserError(f"{path} exists already; not written over", hint="move it away first")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    write_atomic(tmp, data, mode=0o644)
    try:
        with change_settings(scope, project_root) as settings:
            try:
                os.link(tmp, path)  # fails if the name was taken meanwhile: never replaces
            except FileExistsError:
                raise UserError(f"{path} exists already; not written over") from None
            settings.written[str(path)] = digest(data)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _replace_file(path: Path, data: bytes, project_root: Path, scope: WritableScope) -> None:
    from specialists.store.atomic import write_atomic

    with change_settings(scope, project_root) as settings:
        write_atomic(path, data, mode=0o644)
        settings.written[str(path)] = digest(data)


def _remove_file(path: Path, project_root: Path, scope: WritableScope) -> None:
    with change_settings(scope, project_root) as settings:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        settings.written.pop(str(path), None)
