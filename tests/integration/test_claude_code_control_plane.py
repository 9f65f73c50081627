"""The control plane inside the REAL Claude Code CLI: after `specialists init`, Claude Code
runs our hooks (a job's end wakes the session that started it) and starts our MCP server
(the model calls `run`, a background job starts and finishes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_claude_wake import load_our_tools_at_once
from tests.integration.test_cli_pi import sp, status, wait_until
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
# Slow enough that the job is still running when the model ends its turn.
SLOW = (
    "metadata: {name: slow}\nexecution:\n"
    '  runner: {type: command, command: sh, args: ["-c", "sleep 3; cat"]}\n'
)


@pytest.fixture
def project(mock_llm: MockLLM, claude_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Claude Code runs `specialists ...` from the project's hook and MCP config: put the
    # console script of this virtualenv on PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert sp("init").returncode == 0
    load_our_tools_at_once(root)
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    (root / "specialists" / "slow.specialist.yaml").write_text(SLOW)
    return root


def claude(
    claude_bin: Path, project: Path, prompt: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [str(claude_bin), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    # Claude Code (2.1.197, 2.1.332) -p sends its first request without waiting for MCP servers
    # (they show as "pending"): MCP_CONNECTION_NONBLOCKING=false makes it wait, for at most
    # MCP_CONNECT_TIMEOUT_MS (default 5,000 ms: too short for our `import mcp` under load;
    # MCP_TIMEOUT does not bound this wait). See docs/mcp.md.
    env = {**os.environ, "MCP_CONNECT_TIMEOUT_MS": "90000", "MCP_TIMEOUT": "90000"}
    env["MCP_CONNECTION_NONBLOCKING"] = "false"
    return subprocess.run(
        [*argv, "--model", "claude-sonnet-4-5", *extra],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def session_of(out: subprocess.CompletedProcess[str]) -> str:
    first = next(json.loads(line) for line in out.stdout.splitlines() if line.startswith("{"))
    return str(first["session_id"])


def test_a_job_end_wakes_the_session_that_asked_once(project, mock_llm, claude_bin):
    """A job started from a session's Bash tool belongs to that session (matched by
    CLAUDE_CODE_SESSION_ID): when the model ends its turn, the Stop hook waits for the job
    and wakes the session with its notice, once; another session and a later resume of the
    same session hear nothing more of it."""
    mock_llm.enqueue(
        Reply(
            tool_calls=[
                ToolCall("Bash", {"command": "specialists run slow --prompt hello --background"})
            ]
        ),
        Reply("dispatched"),
        Reply("the slow job is done"),
    )
    out = claude(claude_bin, project, "start a slow job", "--allowedTools", "Bash")
    assert out.returncode == 0, out.stderr[-2000:]
    session = session_of(out)
    (job_id,) = [j for j in os.listdir(project / ".specialists" / "jobs") if j[0] != "."]
    owner = json.loads((project / ".specialists" / "jobs" / job_id / "job.json").read_text())
    assert f"claude-{session}" in owner["owner"]
    notice = f"Specialist 'slow' completed (job {job_id}"
    woken = json.dumps(mock_llm.model_requests[2].json)
    assert notice in woken and f"[specialists event] notice from run ({job_id})" in woken
    assert notice not in json.dumps(mock_llm.model_requests[1].json)  # the wake brought it
    assert len(mock_llm.model_requests) == 3
    assert status(job_id)["status"] == "done"

    asked = len(mock_llm.model_requests)
    other = claude(claude_bin, project, "what's new elsewhere?")
    assert other.returncode == 0, other.stderr[-2000:]
    assert notice not in json.dumps(mock_llm.model_requests[asked].json)

    asked = len(mock_llm.model_requests)
    resumed = claude(claude_bin, project, "anything else?", "--resume", session)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    history = json.dumps(mock_llm.model_requests[asked].json)
    # A resumed history holds the one wake once, as the Stop hook's additional context
    # (2.1.332; 2.1.197's blocked stop left it twice, with a "Stop hook blocking error"
    # reminder beside the "Stop hook feedback"); no hook told it again.
    assert history.count("Stop hook additional context: [specialists event] notice") == 1
    assert history.count(notice) == 1


def test_model_dispatches_a_job_through_our_mcp_server(project, mock_llm, claude_bin):
    mock_llm.enqueue(
        Reply(
            tool_calls=(
                ToolCall(
                    "mcp__specialists__run", {"specialist": "echo", "prompt": "ping from claude"}
                ),
            )
        ),
        Reply("dispatched"),
    )
    # Claude Code asks before a tool runs; headless, the user grants it up front.
    out = claude(claude_bin, project, "delegate a ping", "--allowedTools", "mcp__specialists__run")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "mcp__specialists__run" in mock_llm.model_requests[0].tool_names()
    tool_result = " ".join(mock_llm.model_requests[1].tool_results())
    (job_id,) = [j for j in os.listdir(project / ".specialists" / "jobs") if j[0] != "."]
    assert job_id in tool_result  # the model was told the id at once
    wait_until(lambda: status(job_id)["status"] == "done", 30, "job done")
    assert sp("result", job_id).stdout.strip() == "ping from claude"
