"""Threads across runners (issue 10 item 6): a native parent job spawns a pi child and a
Claude Code child (the real CLIs, one mock LLM for all three agents); each child reports and
closes through its own front (the pi extension; `specialists mcp --job`), and the parent's
next model request holds both reports and both closes, each once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from tests.support.agent_env import CLAUDE_MOCK_MODEL
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall
from tests.support.threads import thread_project
from tests.support.waiting import wait_until

# Two or three real agents, each waiting for our MCP server or pi extension to start (the
# mcp SDK import alone took 10-28 s at load 50): more than the default 120 s under load.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

SPECS = {
    "nat": "execution: {runner: native, model: openai/mock-model, permission_required: READ_ONLY}",
    "pichild": "execution: {runner: pi, model: mock/mock-model, permission_required: LOW}",
    "cchild": (
        f"execution: {{runner: claude, model: anthropic/{CLAUDE_MOCK_MODEL}, "
        "permission_required: LOW}"
    ),
}
CHILDREN = {  # instructions -> (specialist, tool prefix, report, close summary)
    "do the pi part": ("pichild", "", "pi is halfway", "pi part done"),
    "do the claude part": ("cchild", "mcp__specialists__", "claude is halfway", "claude part done"),
}


def _first_user_text(req: Request) -> str:
    for message in req.messages():
        if message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


def _script(req: Request) -> Reply:
    """One rule for all three agents, told apart by what their conversation holds."""
    first = _first_user_text(req)
    done = len(req.tool_results())
    for instructions, (_, prefix, report, summary) in CHILDREN.items():
        if "You are thread" in first and instructions in first:
            if done == 0:
                return Reply(tool_calls=[ToolCall(f"{prefix}report_to_parent", {"report": report})])
            if done == 1:
                close = {"structured": {"summary": summary}}
                return Reply(tool_calls=[ToolCall(f"{prefix}close_thread", close)])
            return Reply("Closed.")
    if done == 0:  # the parent's first turn: both children at once
        calls = [
            ToolCall(
                "spawn_thread",
                {
                    "instructions": instructions,
                    "child_of": ["root"],
                    "fresh_context": True,
                    "specialist": specialist,
                },
            )
            for instructions, (specialist, *_) in CHILDREN.items()
        ]
        return Reply(tool_calls=calls)
    history = json.dumps(req.messages())
    if all(summary in history for *_, summary in CHILDREN.values()):
        return Reply("Both children reported and closed.")
    return Reply("Waiting for my children.")


def test_a_native_parent_hears_its_pi_and_claude_children(
    pi_bin: Path,
    claude_bin: Path,
    mock_llm: MockLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each child's first request carries its own task header; the parent job ends done once
    both have closed, and its last model request (after the last wake-up) holds each child's
    report and close exactly once: the deliveries are deduplicated across fronts."""
    dirs = f"{pi_bin.parent}:{claude_bin.parent}"
    monkeypatch.setenv("PATH", f"{dirs}:{os.environ['PATH']}")
    project = thread_project()
    for name, execution in SPECS.items():
        (project / "specialists" / f"{name}.specialist.yaml").write_text(
            f"metadata: {{name: {name}, description: t}}\n{execution}\n"
            'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
        )
    mock_llm.set_default(_script)
    assert main(["run", "nat", "--background", "--cwd", str(project), "-p", "Split the work."]) == 0
    parent = capsys.readouterr().out.strip()
    store = JobStore(project / ".specialists", news=None)
    wait_until(
        lambda: (st := store.read_status(parent)) and st.status in ("done", "error", "cancelled"),
        timeout=300,
        what="the parent job's end",
    )
    status = store.read_status(parent)
    assert status is not None and status.status == "done", status
    assert store.read_result(parent) == "Both children reported and closed."

    parent_requests = [
        r for r in mock_llm.model_requests if "You are thread" not in _first_user_text(r)
    ]
    last = json.dumps(parent_requests[-1].messages())
    for _, _, report, summary in CHILDREN.values():
        assert last.count(report) == 1, (report, last[-3000:])
        assert last.count(summary) == 1, (summary, last[-3000:])
    assert "child_report" in last and "child_closed" in last
    for instructions in CHILDREN:
        assert any(
            instructions in _first_user_text(r) and "You are thread" in _first_user_text(r)
            for r in mock_llm.model_requests
        )
