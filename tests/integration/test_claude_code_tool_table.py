"""What the REAL Claude Code (>= 2.1.332, mock LLM) offers its model after `specialists init`,
started from a shell whose PATH lacks our virtualenv, with none of the MCP wait variables set.

Claude Code defers MCP tools behind its ToolSearch tool. `init` writes two servers: the core
(`alwaysLoad`, so the first request offers it and startup waits for it) and the rest
(deferred: named in a reminder, loaded by a search). Read from the model requests:
- the first offers exactly the core tools, for at most MAX_CORE_SCHEMA_BYTES;
- a deferred tool is found with ToolSearch and called in the same session;
- what the model reads of a structured result carries its guidance.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.fronts.mcp.table import TOOLS
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

MAX_CORE_SCHEMA_BYTES = 12_000
CORE = {f"mcp__specialists__{t.name}" for t in TOOLS if t.core}
ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def version_of(claude_bin: Path) -> tuple[int, ...]:
    out = subprocess.run([str(claude_bin), "--version"], capture_output=True, text=True)
    return tuple(int(n) for n in re.findall(r"\d+", out.stdout)[:3])


def test_first_request_offers_the_core_and_the_rest_is_one_search_away(
    mock_llm: MockLLM, claude_bin: Path
) -> None:
    if version_of(claude_bin) < (2, 1, 332):
        pytest.skip(f"{claude_bin} predates deferred MCP tools for any base URL (2.1.332)")
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env["PATH"] = BARE_PATH
    init = subprocess.run(
        [sys.executable, "-m", "specialists", "init"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stderr
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    mock_llm.enqueue(
        Reply(
            tool_calls=[ToolCall("ToolSearch", {"query": "select:mcp__specialists-more__schedule"})]
        ),
        Reply(tool_calls=[ToolCall("mcp__specialists-more__schedule", {"action": "list"})]),
        Reply(
            tool_calls=[ToolCall("mcp__specialists__run", {"specialist": "echo", "prompt": "hi"})]
        ),
        Reply("dispatched"),
    )
    allowed = "ToolSearch,mcp__specialists-more__schedule,mcp__specialists__run"
    out = subprocess.run(
        [
            str(claude_bin),
            "-p",
            "plan the week",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
            "--allowedTools",
            allowed,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # (then the Stop hook wakes the session when the echo job ends: more requests)
    first, searched, scheduled, dispatched = mock_llm.model_requests[:4]

    ours = [t for t in first.json["tools"] if t["name"].startswith("mcp__specialists")]
    assert {t["name"] for t in ours} == CORE
    size = sum(len(json.dumps(t, separators=(",", ":"), ensure_ascii=False)) for t in ours)
    assert size <= MAX_CORE_SCHEMA_BYTES, f"{size} bytes of our schema in every request"
    reminder = json.dumps(first.json["messages"])
    assert "mcp__specialists-more__schedule" in reminder  # named, not loaded
    assert "[specialists] available:" in reminder  # the SessionStart hook ran, off PATH

    assert "mcp__specialists-more__schedule" in {t["name"] for t in searched.json["tools"]}
    assert json.loads(scheduled.tool_results()[-1])["schedules"] == []
    seen = dispatched.tool_results()[-1]
    started = json.loads(seen.split("\n\n<system-reminder>")[0])  # structuredContent, as shown
    assert re.fullmatch(r"[0-9a-f]{8}", started["job_id"])
    assert "call result once" in started["note"]
