"""Claude Code and Codex children (the real CLIs, mock LLM) get the thread tools through
`specialists mcp --job <id>`, which their runner puts on the child's command line: the
child's model calls report_to_parent and close_thread, and the parent's inbox holds one
child_report and one child_closed for each child."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.store.jobs import JobStore
from tests.support.agent_env import CLAUDE_MOCK_MODEL, MOCK_MODEL
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall
from tests.support.threads import inbox_events, root_caller, spawn, thread_project, wait_closed

# Two or three real agents, each waiting for our MCP server or pi extension to start (the
# mcp SDK import alone took 10-28 s at load 50): more than the default 120 s under load.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

CLAUDE_CHILD = (
    "metadata: {name: cchild, description: t}\n"
    f"execution: {{runner: claude, model: anthropic/{CLAUDE_MOCK_MODEL}, "
    "permission_required: LOW}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)
CODEX_CHILD = (
    "metadata: {name: xchild, description: t}\n"
    f"execution: {{runner: codex, model: {MOCK_MODEL}, permission_required: LOW}}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)
NAMESPACE = "mcp__specialists"  # Codex's one namespace tool for our server


def _on_path(*bins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's supervisor finds the agent CLI on PATH, as a user's would."""
    dirs = ":".join(str(b.parent) for b in bins)
    monkeypatch.setenv("PATH", f"{dirs}:{os.environ['PATH']}")


def _check_closed(project: Path, tid: str, summary: str) -> None:
    closed = wait_closed(project, tid)
    assert closed.details["by"] == "child" and closed.details["failed"] is False, closed.body
    assert summary in closed.body
    events = [e for e in inbox_events(project) if e.id.startswith(tid)]
    reports = [e for e in events if e.kind == "child_report"]
    assert [e.id for e in reports] == [f"{tid}:child_report:1"]
    assert "halfway there" in reports[0].body
    assert sum(e.kind == "child_closed" for e in events) == 1


def _claude_tools(request: Request) -> set[str]:
    return set(request.tool_names())


def test_a_claude_child_reports_and_closes_through_its_job_server(
    claude_bin: Path, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Claude Code child sees mcp__specialists__report_to_parent and close_thread on its
    first request (it waited for our server), and none of the orchestrator's job tools; its
    calls run as the child job and reach the parent's inbox once each."""
    _on_path(claude_bin, monkeypatch=monkeypatch)
    project = thread_project()
    (project / "specialists" / "cchild.specialist.yaml").write_text(CLAUDE_CHILD)
    closing = {"structured": {"summary": "claude part done", "files": ["c.py"]}}
    mock_llm.enqueue(
        Reply(
            tool_calls=[ToolCall("mcp__specialists__report_to_parent", {"report": "halfway there"})]
        ),
        Reply(tool_calls=[ToolCall("mcp__specialists__close_thread", closing)]),
        Reply("Closed."),
    )
    reply = spawn(root_caller(project), specialist="cchild", instructions="do the claude part")
    assert not reply.is_error, reply.text
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    record = JobStore(project / ".specialists", news=None).read_record(job_id)
    assert record.runner == "claude" and record.runner_options["specialists_mcp"] is True
    _check_closed(project, tid, "claude part done")
    first = mock_llm.model_requests[0]
    tools = _claude_tools(first)
    assert {"mcp__specialists__report_to_parent", "mcp__specialists__close_thread"} <= tools
    assert "mcp__specialists__spawn_thread" in tools
    assert (
        not {"mcp__specialists__run", "mcp__specialists__status"} & tools
    )  # not the orchestrator's
    assert f"You are thread {tid}" in json.dumps(first.messages())


def _codex_tools(request: Request) -> set[str]:
    return {
        inner["name"]
        for tool in (request.json or {}).get("tools", [])
        if tool.get("type") == "namespace" and tool.get("name") == NAMESPACE
        for inner in tool.get("tools", [])
    }


def test_a_codex_child_reports_and_closes_through_its_job_server(
    codex_bin: Path, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Codex child gets our server as a `required` MCP server (-c mcp_servers.specialists
    with its own env: Codex passes a server only a short allow-list of variables): the
    model's first request offers report_to_parent and close_thread in our namespace, and the
    calls reach the parent's inbox once each."""
    _on_path(codex_bin, monkeypatch=monkeypatch)
    project = thread_project()
    (project / "specialists" / "xchild.specialist.yaml").write_text(CODEX_CHILD)
    closing = {"structured": {"summary": "codex part done", "tests": ["t passes"]}}
    mock_llm.enqueue(
        Reply(
            tool_calls=[
                ToolCall("report_to_parent", {"report": "halfway there"}, namespace=NAMESPACE)
            ]
        ),
        Reply(tool_calls=[ToolCall("close_thread", closing, namespace=NAMESPACE)]),
        Reply("Closed."),
    )
    reply = spawn(root_caller(project), specialist="xchild", instructions="do the codex part")
    assert not reply.is_error, reply.text
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    record = JobStore(project / ".specialists", news=None).read_record(job_id)
    assert record.runner == "codex" and record.runner_options["specialists_mcp"] is True
    _check_closed(project, tid, "codex part done")
    tools = _codex_tools(mock_llm.model_requests[0])
    assert {"report_to_parent", "close_thread", "spawn_thread"} <= tools
    assert not {"run", "status", "events"} & tools
