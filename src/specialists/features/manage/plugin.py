"""What managing definitions adds: the `agents` noun, its command and the MCP tool
`manage_specialist`; `show`."""

from __future__ import annotations

from specialists.base.ops import register_noun


def register() -> None:
    register_noun("agents", "specialists.features.manage.verbs:AGENTS")
    register_noun("show", "specialists.features.manage.verbs:SHOW")
