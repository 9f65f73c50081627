"""A declarative workflow submitted over MCP by the REAL Claude Code (2.1.197), driven by the
scripted mock: the `workflow` tool starts one background workflow job whose children run;
a Python workflow named over MCP is refused (a model must not get code execution this way)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_claude_code_control_plane import claude, project  # noqa: F401
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.waiting import wait_until
from tests.support.workflows import result, store, wait_ended

pytestmark = pytest.mark.integration

DOCUMENT = {
    "defaults": {"agent": "echo"},
    "steps": [
        {"phase": "fan"},
        {"all": {"items": "{args.files}", "child": {"key": "look-{item}", "task": "look {item}"}}},
        {
            "run": {
                "key": "sum",
                "task": "summary: {results.look-a.output} + {results.look-b.output}",
            }
        },
    ],
}


def test_claude_code_runs_a_declarative_workflow_and_cannot_submit_python(
    project: Path,  # noqa: F811
    mock_llm: MockLLM,
    claude_bin: Path,
) -> None:
    (project / ".specialists" / "workflows").mkdir(parents=True, exist_ok=True)
    (project / ".specialists" / "workflows" / "py.py").write_text(
        "async def main(runs, args):\n    return 1\n"
    )
    run_args = {"action": "run", "document": DOCUMENT, "args": {"files": ["a", "b"]}}
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("mcp__specialists-more__workflow", run_args)]),
        Reply(
            tool_calls=[
                ToolCall("mcp__specialists-more__workflow", {"action": "run", "name": "py"})
            ]
        ),
        Reply("dispatched"),
    )
    out = claude(
        claude_bin, project, "fan out", "--allowedTools", "mcp__specialists-more__workflow"
    )
    assert out.returncode == 0, out.stderr[-2000:]
    first = " ".join(mock_llm.model_requests[1].tool_results())
    jobs = store(project).list_ids()
    (wf,) = [j for j in jobs if store(project).read_record(j).runner == "workflow"]
    assert wf in first
    refused = " ".join(mock_llm.model_requests[2].tool_results())
    assert "is Python, which the workflow tool does not" in refused
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    out_json = result(project, wf)
    assert out_json["sum"]["output"] == "summary: look a + look b"
    assert set(out_json) == {"look-a", "look-b", "sum"}
    record = store(project).read_record(wf)
    assert any(k.startswith("claude-") for k in record.owner)
    wait_until(lambda: len(os.listdir(project / ".specialists" / "jobs")) >= 4, what="children")
    assert json.loads(json.dumps(out_json))  # plain JSON all the way down
