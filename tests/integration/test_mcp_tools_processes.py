"""The tests of tests/unit/test_mcp_tools.py that start processes (a background job's
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import jsonschema

from specialists.mcp import table
from specialists.mcp.table import TOOLS_BY_NAME, ToolOutcome
from tests.unit.test_mcp_tools import ctx, ok, scripts

__all__ = ["ctx", "scripts"]  # fixtures, used by name


def test_guidance_and_warnings_ride_in_the_structured_data(ctx):
    """Claude Code shows the model structuredContent, not the text: what the text says
    beyond the data (a dispatch's nudge, a warning) is in the data too, and the served
    output schema allows it."""
    started = ok(ctx, "run", specialist="tester", prompt="x")
    assert started["note"] == table.RUN_NOTE
    outcome = table.guided("status", {"active": []}, ["bead not made"])
    assert outcome == {"active": [], "warnings": ["bead not made"]}
    jsonschema.validate(outcome, TOOLS_BY_NAME["status"].served_output_schema or {})
    wired = table.wire_result("run", ToolOutcome(started, "started job"))
    assert wired["structuredContent"]["note"] == table.RUN_NOTE
