"""The MCP tool `manage_specialist`: `specialists agents` for an orchestrating agent.

Kept beside the table so the table needs one line: the handler is manage/actions.py, which
refuses, as the CLI does, to change a file a person wrote (docs/specialists.md).
"""

from __future__ import annotations

from typing import Any

from specialists.fronts.mcp import handlers as h
from specialists.fronts.mcp import schemas as s

DESCRIPTION = (
    "Create, update, delete, eject, disable, enable or reset a specialist definition (the "
    "roles run and list_specialists use). create writes <project>/specialists/NAME."
    "specialist.yaml (scope user: the user's directory) from fields; update changes fields of "
    "a file this tool wrote; eject copies a builtin into the scope to be edited there; "
    "disable hides a name (reversible, per scope; the project's setting wins); reset goes "
    "back to the builtin. A file a person wrote, or edited since, is never changed unless "
    "force is true; create and eject never write over a file. Only change definitions when "
    "the user asked for it."
)
_FIELD = s.text("a field value", max_length=64_000, one_line=False)
ARGS = s.obj(
    {
        "action": {
            "type": "string",
            "enum": ["create", "update", "delete", "eject", "disable", "enable", "reset"],
        },
        "name": s.text("the specialist's name", max_length=64, min_length=1),
        "scope": {"type": "string", "enum": ["project", "user"], "default": "project"},
        "fields": s.obj(
            {
                "description": _FIELD,
                "system": _FIELD,
                "task_template": _FIELD,
                "model": s.text("provider/model", max_length=256),
                "runner": s.text("pi, claude, codex, command or native", max_length=64),
                "permission": s.text("READ_ONLY ... HIGH", max_length=16),
                "thinking": s.text("off ... xhigh", max_length=16),
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 31_622_400_000},
            }
        ),
        "force": {"type": "boolean", "default": False},
    },
    ("action", "name"),
)
RESULT = s.obj(
    {
        "action": {"type": "string"},
        "name": {"type": "string"},
        "scope": {"type": "string"},
        "path": {"type": ["string", "null"]},
        "changed": {"type": "boolean"},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    ("action", "name", "scope", "changed"),
)


def manage_specialist(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    from specialists.features.manage.actions import apply_action

    data = apply_action(ctx.root(), args)
    ctx.warnings.extend(data["warnings"])
    return data
