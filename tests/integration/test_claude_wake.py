"""A headless Claude Code orchestrator dispatches, yields and is woken (issue 9 item 6).

The REAL Claude Code 2.1.332, driven by the scripted mock model, with our MCP server and
hooks installed by `specialists init`, and no network: the model calls a table tool through
the MCP server and ends its turn; our Stop hook waits for the event and hands it over as
non-error feedback (additionalContext), so the model's next request contains the event. The
same events reach the model mid-turn through PostToolUse, and the bash guard refuses a
blocking command in PreToolUse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.events.inbox import Inbox
from specialists.events.timers import TimerStore
from tests.integration.test_cli_pi import sp
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

TIMER_EVENT = "[specialists event] timer from sleep ("


@pytest.fixture
def project(mock_llm: MockLLM, claude_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert sp("init").returncode == 0
    load_our_tools_at_once(root)
    return root


def load_our_tools_at_once(root: Path) -> None:
    """`init` writes two servers: `specialists` (the core, `alwaysLoad`) and `specialists-more`
    (deferred behind Claude Code's ToolSearch). The scripted model calls the others directly,
    without a ToolSearch turn first, so here they load at once too (the tool search itself is
    tested in test_claude_code_tool_table.py)."""
    mcp = root / ".mcp.json"
    doc = json.loads(mcp.read_text())
    for server in doc["mcpServers"].values():
        server["alwaysLoad"] = True
    mcp.write_text(json.dumps(doc))


def claude(
    claude_bin: Path, project: Path, prompt: str, *allowed: str
) -> subprocess.CompletedProcess[str]:
    argv = [str(claude_bin), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    # MCP_CONNECTION_NONBLOCKING=false: -p waits for our MCP server, at most
    # MCP_CONNECT_TIMEOUT_MS (default 5 s, too short under load; docs/mcp.md).
    env = {**os.environ, "MCP_CONNECT_TIMEOUT_MS": "90000", "MCP_TIMEOUT": "90000"}
    env["MCP_CONNECTION_NONBLOCKING"] = "false"
    return subprocess.run(
        [*argv, "--model", "claude-sonnet-4-5", "--allowedTools", *allowed],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )


def session_of(out: subprocess.CompletedProcess[str]) -> str:
    first = next(json.loads(line) for line in out.stdout.splitlines() if line.startswith("{"))
    return str(first["session_id"])


def mcp_servers(out: subprocess.CompletedProcess[str]) -> object:
    """What Claude Code's init line says of the MCP servers (for a failure message)."""
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    init = next((d for d in lines if d.get("subtype") == "init"), {})
    return init.get("mcp_servers"), hooks_log()[-2000:], out.stderr[-2000:]


def hooks_log() -> str:
    path = Path(os.environ["XDG_STATE_HOME"]) / "specialists" / "hooks.log"
    return path.read_text() if path.exists() else ""


def result_of(out: subprocess.CompletedProcess[str]) -> dict:
    lines = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    return next(d for d in reversed(lines) if d.get("type") == "result")


def test_sleep_through_mcp_ends_the_turn_and_the_stop_hook_wakes_the_session(
    project, mock_llm, claude_bin
):
    """The orchestrator calls `sleep` (2 s) and ends its turn; the Stop hook waits for the
    timer and blocks the stop with its event; the model's next request contains it, and
    after the model's answer the session has nothing pending and ends."""
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("mcp__specialists-more__sleep", {"seconds": 2, "note": "CI"})]),
        Reply("Waiting for the timer."),
        Reply("Woken by the timer; all done."),
    )
    out = claude(
        claude_bin, project, "wait two seconds, then finish", "mcp__specialists-more__sleep"
    )
    assert out.returncode == 0, out.stderr[-2000:]
    requests = mock_llm.model_requests
    assert "mcp__specialists-more__sleep" in requests[0].tool_names(), mcp_servers(out)
    assert "end it now" in " ".join(requests[1].tool_results())  # the yield, said in MCP terms
    woken = json.dumps(requests[2].json)
    assert TIMER_EVENT in woken and "CI" in woken
    assert TIMER_EVENT not in json.dumps(requests[1].json)  # it came with the wake, not before
    # 2.1.332: the wake is non-error feedback (the Stop hook's additionalContext): the model
    # reads it as such, and the person is shown no "stop hook problem" / "Stop hook error".
    assert "Stop hook additional context: " + TIMER_EVENT in woken
    assert "stop-hook-error" not in out.stdout and "Stop hook feedback" not in out.stdout
    assert result_of(out)["result"] == "Woken by the timer; all done."
    assert len(requests) == 3  # nothing pending after the wake: the turn ended
    key = f"claude-{session_of(out)}"
    assert TimerStore(project / ".specialists", key).pending() == []
    assert Inbox(project / ".specialists", key).pending().events == ()  # acknowledged


def test_bg_run_through_mcp_then_the_stop_hook_wakes_the_session_with_job_exit(
    project, mock_llm, claude_bin
):
    """Issue 9 item 6 as written: the orchestrator dispatches a background command with
    `bg_run` and ends its turn; the Stop hook waits while the command runs and blocks the
    stop with its job_exit; the model's next request carries the exit and the last lines."""
    mock_llm.enqueue(
        Reply(
            tool_calls=[
                ToolCall("mcp__specialists-more__bg_run", {"command": "sleep 2; echo BUILT"})
            ]
        ),
        Reply("Waiting for the build."),
        Reply("The build finished; done."),
    )
    out = claude(claude_bin, project, "build in the background", "mcp__specialists-more__bg_run")
    assert out.returncode == 0, out.stderr[-2000:]
    requests = mock_llm.model_requests
    assert "mcp__specialists-more__bg_run" in requests[0].tool_names(), mcp_servers(out)
    assert "job_exit from bg_run (" not in json.dumps(requests[1].json)  # returned at once
    woken = json.dumps(requests[2].json)
    assert "[specialists event] job_exit from bg_run (" in woken, (hooks_log(), woken[-2000:])
    assert "BUILT" in woken
    assert result_of(out)["result"] == "The build finished; done."
    assert len(requests) == 3


def test_an_event_reaches_the_model_mid_turn_after_a_tool_call(project, mock_llm, claude_bin):
    """A timer fires while a Bash call runs: PostToolUse adds it to that call's context."""
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("mcp__specialists-more__sleep", {"seconds": 1})]),
        Reply(tool_calls=[ToolCall("Bash", {"command": "sleep 3; echo slept"})]),
        Reply("Seen it."),
    )
    out = claude(claude_bin, project, "go", "mcp__specialists-more__sleep", "Bash")
    assert out.returncode == 0, out.stderr[-2000:]
    requests = mock_llm.model_requests
    assert "mcp__specialists-more__sleep" in requests[0].tool_names(), mcp_servers(out)
    assert "slept" in " ".join(requests[2].tool_results())
    assert TIMER_EVENT in json.dumps(requests[2].json), (hooks_log(), out.stdout[-3000:])
    assert len(requests) == 3  # delivered mid-turn, so the Stop hook had nothing to add


def test_the_bash_guard_refuses_a_blocking_command_with_the_way_out(project, mock_llm, claude_bin):
    mock_llm.enqueue(
        # 2.1.332 refuses a bare `sleep 120` itself (pointing at its Monitor tool); a log
        # follower reaches our guard.
        Reply(tool_calls=[ToolCall("Bash", {"command": "tail -f build.log"})]),
        Reply("Understood."),
    )
    out = claude(claude_bin, project, "follow the build log", "Bash")
    assert out.returncode == 0, out.stderr[-2000:]
    refused = " ".join(mock_llm.model_requests[1].tool_results())
    assert "bg_run" in refused and "tail -f" in refused and "warn" in refused
