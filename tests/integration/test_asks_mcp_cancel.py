"""An MCP client that cancels its waiting `contact_supervisor` call ends the ask: the SDK's own
Python client against the real job-scoped server (`specialists mcp --job <id>`) over stdio.

Before, the server abandoned the call's worker thread and the ask waited out its timeout:
the parent kept seeing a question nobody waited on, and a reply "reached" nobody."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from specialists.base.errors import UserError
from specialists.features.asks.ops import list_asks, reply
from specialists.store.jobs import JobStore
from specialists.store.paths import state_dir
from tests.support.jobs import new_job

pytestmark = pytest.mark.integration

BOSS = "cli-boss"


def _asking_job(root: Path) -> str:
    record, lock = new_job(JobStore(state_dir(root), news=None), root, owner=[BOSS])
    lock.release()
    return record.id


def _open(root: Path) -> list[str]:
    rows, problems = list_asks(state_dir(root), (BOSS,), include_settled=False)
    assert problems == []
    return [r.ask.id for r in rows]


def test_a_cancelled_contact_supervisor_call_ends_its_ask_at_once() -> None:
    """The client cancels the call (notifications/cancelled) while the ask waits (timeout
    600 s): the ask is settled `cancelled` within seconds with the reason, once; the parent no
    longer lists it; a late reply is refused in one line; the server goes on serving."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    job_id = _asking_job(root)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "specialists", "mcp", "--job", job_id],
        env=dict(os.environ),
        cwd=str(root),
    )
    ask = {"kind": "need_decision", "message": "tabs or spaces?", "timeout_s": 600}

    async def main() -> float:
        async with Client(params) as client:
            with anyio.CancelScope() as scope:

                async def cancel_once_open() -> None:
                    while not _open(root):
                        await anyio.sleep(0.05)
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_once_open)
                    await client.call_tool("contact_supervisor", ask)
                    raise AssertionError("the call returned instead of being cancelled")
            cancelled_at = time.monotonic()
            while _open(root):
                assert time.monotonic() - cancelled_at < 20, "the ask still waits"
                await anyio.sleep(0.05)
            took = time.monotonic() - cancelled_at
            after = await client.call_tool("list_asks", {})  # still serving
            assert not after.is_error, after.content
            return took

    took = anyio.run(main)
    assert took < 20
    (row,) = list_asks(state_dir(root), (BOSS,), include_settled=True)[0]
    assert row.state == "cancelled" and row.outcome is not None
    assert row.outcome.why == "its MCP client cancelled the call"
    with pytest.raises(UserError) as late:
        reply(state_dir(root), row.ask.id, "spaces", by=BOSS, owners=(BOSS,))
    line = late.value.one_line()
    assert "already settled: cancelled by the asker (its MCP client cancelled" in line
