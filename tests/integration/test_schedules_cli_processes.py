"""The tests of tests/unit/test_schedules_cli.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

from specialists.schedules.store import ScheduleStore
from tests.support.jobs import echo_project
from tests.support.tmpfs import fill, small_tmpfs
from tests.unit.test_schedules_cli import HOUR, _due, left_behind


def test_a_full_disk_at_create_leaves_nothing_behind(tmp_path):
    store = ScheduleStore(tmp_path / "disk" / ".specialists")
    with small_tmpfs(tmp_path / "disk", size="64k"):
        store.root.mkdir(parents=True)
        fill(store.root)
        with pytest.raises(OSError):
            _due(store, "s1", 10 * HOUR)
        assert [n for n in os.listdir(store.root) if not n.startswith("filler")] == []


def test_the_mcp_schedule_tool_creates_runs_and_refuses_like_the_cli():
    """`schedule` over the MCP table: create, run now (a real command job), show, and the
    bad inputs as one error line with nothing written."""
    from specialists.mcp.handlers import ServerContext
    from specialists.mcp.table import call_tool
    from tests.support.waiting import wait_until

    echo_project()
    ctx = ServerContext()
    made = call_tool(
        ctx,
        "schedule",
        {"action": "create", "id": "m1", "every": "1h", "specialist": "echo", "prompt": "hi"},
    )
    assert not made.is_error, made.text
    fired = call_tool(ctx, "schedule", {"action": "run", "id": "m1"})
    assert fired.data["outcome"] == "fired", fired.text
    job = fired.data["job_id"]
    store = ctx.project.store
    wait_until(lambda: (st := store.read_status(job)) is not None and st.status == "done")
    shown = call_tool(ctx, "schedule", {"action": "show", "id": "m1"})
    assert shown.data["state"]["last_job"] == job
    for bad, says in (
        ({"action": "create", "every": "1h", "cron": "* * * * *", "specialist": "echo",
          "prompt": "x"}, "two triggers"),
        ({"action": "create", "every": "1h", "workflow": "w"}, "unknown workflow 'w'"),
        ({"action": "create", "cron": "* * * * *", "zone": "Nowhere/X", "specialist": "echo",
          "prompt": "x"}, "unknown time zone"),
        ({"action": "show", "id": "nope"}, "no schedule"),
    ):  # fmt: skip
        out = call_tool(ctx, "schedule", bad)
        assert out.is_error and says in out.text, out.text
    assert left_behind() == ["m1"]
