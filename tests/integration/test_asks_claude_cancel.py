"""The REAL Claude Code (mock LLM) asks through its job server (`specialists mcp --job`) and
is interrupted while the ask waits: the ask ends at once (cancelled, with the reason), the
parent no longer lists it, and a late reply is refused. Claude Code 2.1.197 answers the
SIGINT by cancelling the MCP call (notifications/cancelled), so the reason seen is "its MCP
client cancelled the call"; the job's pause settles it otherwise (whichever is first wins,
recorded once), so both reasons are accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.asks.ops import list_asks, reply
from specialists.store.jobs import JobStore
from specialists.supervise.steering import interrupt_job
from tests.integration.test_thread_mcp_children import CLAUDE_CHILD, _on_path
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.threads import ROOT_OWNER, root_caller, spawn, thread_project
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

REASONS = ("its MCP client cancelled the call", "the asking job was interrupted")


def test_interrupting_a_claude_child_that_asks_ends_the_ask(
    claude_bin: Path, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(claude_bin, monkeypatch=monkeypatch)
    project = thread_project()
    (project / "specialists" / "cchild.specialist.yaml").write_text(CLAUDE_CHILD)
    ask = {"kind": "need_decision", "message": "tabs or spaces?", "timeout_s": 900}
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("mcp__specialists__contact_supervisor", ask)]))
    mock_llm.set_default(Reply("Decided alone."))
    spawned = spawn(root_caller(project), specialist="cchild", instructions="ask first")
    assert not spawned.is_error, spawned.text
    job_id = spawned.data["job_id"]
    state = project / ".specialists"

    def open_asks() -> list:
        return list_asks(state, (ROOT_OWNER,), include_settled=False)[0]

    wait_until(lambda: len(open_asks()) == 1, timeout=240, what="the claude child's ask")
    (row,) = open_asks()
    store = JobStore(state, news=None)
    paused = interrupt_job(store, job_id, wait_s=60)
    assert paused.ok, paused.describe()
    wait_until(lambda: not open_asks(), timeout=30, what="the ask to end")
    (settled,) = list_asks(state, (ROOT_OWNER,), include_settled=True)[0]
    assert settled.state == "cancelled" and settled.outcome is not None
    assert settled.outcome.why in REASONS, settled.outcome
    with pytest.raises(UserError, match="already settled: cancelled by the asker"):
        reply(state, row.ask.id, "spaces", by=ROOT_OWNER, owners=(ROOT_OWNER,))
