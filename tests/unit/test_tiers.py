"""Permission tier tables: every tier maps for every agent, and trust only grows."""

from __future__ import annotations

import pytest

from specialists.base.errors import UserError
from specialists.base.vocab import PERMISSION_TIERS
from specialists.runners.tiers import (
    CLAUDE_CONTROLS,
    CLAUDE_HIGH_AS_ROOT,
    CODEX_SANDBOX,
    PI_TOOLS,
    claude_controls,
    codex_sandbox,
    pi_tools,
)


def test_every_table_covers_exactly_the_tiers() -> None:
    for table in (PI_TOOLS, CLAUDE_CONTROLS, CODEX_SANDBOX):
        assert tuple(table) == PERMISSION_TIERS


def test_pi_tools() -> None:
    assert pi_tools("READ_ONLY") == "read,bash,grep,find,ls"
    assert pi_tools("BASH_ONLY") == "bash"
    for tier in ("LOW", "MEDIUM", "HIGH"):
        assert pi_tools(tier) == "read,bash,edit,write,grep,find,ls"


def test_claude_read_only_and_bash_only_cannot_edit() -> None:
    for tier in ("READ_ONLY", "BASH_ONLY"):
        c = claude_controls(tier)
        assert c.tools is not None
        assert not {"Edit", "Write"} & set(c.tools)
        assert {"Edit", "Write"} <= set(c.disallowed)
        assert c.permission_mode == "default"
    assert claude_controls("BASH_ONLY").tools == ("Bash",)
    assert set(claude_controls("READ_ONLY").tools or ()) == {"Read", "Grep", "Glob", "Bash"}


def test_claude_low_edits_without_bash_medium_adds_bash() -> None:
    low, medium = claude_controls("LOW"), claude_controls("MEDIUM")
    assert low.permission_mode == medium.permission_mode == "acceptEdits"
    assert "Bash" not in (low.tools or ()) and "Edit" in (low.tools or ())
    assert set(medium.tools or ()) == set(low.tools or ()) | {"Bash"}
    assert "Bash" in medium.allowed


def test_claude_high_bypasses_but_not_as_root() -> None:
    assert claude_controls("HIGH").permission_mode == "bypassPermissions"
    assert claude_controls("HIGH").tools is None
    root = claude_controls("HIGH", as_root=True)
    assert root is CLAUDE_HIGH_AS_ROOT
    assert root.permission_mode != "bypassPermissions"
    assert {"Bash", "Edit", "Write"} <= set(root.allowed)
    # other tiers do not change as root
    assert claude_controls("LOW", as_root=True) == claude_controls("LOW")


def test_codex_sandbox() -> None:
    assert codex_sandbox("READ_ONLY") == "read-only"
    assert codex_sandbox("MEDIUM") == "workspace-write"
    assert codex_sandbox("HIGH") == "danger-full-access"


@pytest.mark.parametrize("lookup", [pi_tools, claude_controls, codex_sandbox])
def test_unknown_tier_is_a_user_error(lookup: object) -> None:
    with pytest.raises(UserError, match="unknown permission tier 'ROOT'"):
        lookup("ROOT")  # type: ignore[operator]
