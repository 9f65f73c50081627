"""One entry point over agents.py for programs (the MCP tool `manage_specialist`): an action
name and plain arguments in, plain data out. Refusals leave as UserError, as on the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.base.errors import UserError
from specialists.catalog.managed import WritableScope
from specialists.features.manage import agents

ACTIONS = ("create", "update", "delete", "eject", "disable", "enable", "reset")


def apply_action(project_root: Path, args: dict[str, Any]) -> dict[str, Any]:
    action, name = args.get("action"), args.get("name")
    scope: WritableScope = "user" if args.get("scope") == "user" else "project"
    fields = dict(args.get("fields") or {})
    force = bool(args.get("force", False))
    if not isinstance(name, str) or action not in ACTIONS:
        raise UserError("manage_specialist needs an action and a name")
    if fields and action not in ("create", "update"):
        raise UserError(f"fields are for create and update, not {action}")
    if action == "create":
        change = agents.create(project_root, scope, name, fields)
    elif action == "update":
        if not fields:
            raise UserError("nothing to update", hint='give fields, e.g. {"model": "a/b"}')
        change = agents.update(project_root, scope, name, fields, force=force)
    elif action == "delete":
        change = agents.delete(project_root, scope, name, force=force)
    elif action == "eject":
        change = agents.eject(project_root, scope, name)
    elif action == "reset":
        change = agents.reset(project_root, scope, name, force=force)
    else:
        change = agents.set_disabled(project_root, scope, name, action == "disable")
    return {
        "action": change.kind,
        "name": change.name,
        "scope": change.scope,
        "path": str(change.path) if change.path else None,
        "changed": change.changed,
        "warnings": list(change.warnings),
    }
