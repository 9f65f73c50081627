"""The tests of tests/unit/test_hook_turns.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from tests.support.tmpfs import fill, small_tmpfs
from tests.unit.test_hook_turns import (
    INPUTS,
    call,
    hook_input,
    hook_log,
    pending,
    post_event,
    state,  # noqa: F401 - fixtures
)


def test_a_full_disk_never_fails_the_host_and_loses_nothing(state):
    """The project's .specialists/ on a full tmpfs: the oversized result cannot be spilled,
    so the model gets it whole; the event is delivered, and since its acknowledgement
    cannot be written it stays pending (at-least-once, never lost); every hook exits 0."""
    with small_tmpfs(state / "owners", "256k"):
        event_id = post_event(state, "written before the disk filled")
        fill(state / "owners")
        response = {**INPUTS["PostToolUse:Bash"]["tool_response"], "stdout": "q" * 50_000}
        reply = call("post-tool-use", hook_input("PostToolUse:Bash", tool_response=response))
        assert reply is not None
        inner = reply["hookSpecificOutput"]
        assert "updatedToolOutput" not in inner  # not spilled: the whole result stands
        assert "written before the disk filled" in inner["additionalContext"]
        assert "not spilled" in hook_log()
        assert call("stop", hook_input("Stop")) is not None  # delivered again, not lost
        assert event_id in pending(state)
