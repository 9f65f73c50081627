"""The control plane inside the REAL Codex CLI: Codex starts our MCP server from
$CODEX_HOME/config.toml, offers its tools to the model, and a model call to `run` starts a
background job that finishes.

Codex (0.171.0) sends an MCP server's tools as one Responses API `namespace` tool
(`mcp__specialists`, holding `run`, `result`, ...) and only accepts a call that names the
namespace: `{"type": "function_call", "namespace": "mcp__specialists", "name": "run"}`. A flat
`mcp__specialists__run` is refused ("unsupported call"), so the scripted call names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp, status, wait_until
from tests.support.agent_env import AgentEnv
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration

ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
NAMESPACE = "mcp__specialists"


@pytest.fixture
def project(mock_llm: MockLLM, isolated_env: AgentEnv) -> Path:
    root = isolated_env.project
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    server = Path(sys.executable).parent / "specialists"  # this virtualenv's console script
    config = isolated_env.codex_home / "config.toml"  # already points Codex at the mock
    # Codex passes an MCP server only a short allow-list of variables: name ours in `env`.
    config.write_text(
        config.read_text()
        + "\n[mcp_servers.specialists]\n"
        + f"command = {json.dumps(str(server))}\n"
        + 'args = ["mcp"]\n'
        + f"cwd = {json.dumps(str(root))}\n"
        # `codex exec` 0.171.0 sends its first model request about 1.5 s after starting its
        # MCP servers, ready or not; our server imports the mcp SDK (about 1 s idle, 6 s on a
        # loaded 2-core machine). `required = true` makes Codex wait for it (up to
        # startup_timeout_sec) and fail if it cannot start: see docs/mcp.md.
        + "required = true\n"
        + "startup_timeout_sec = 90\n"
        + "tool_timeout_sec = 30\n"
        + f"env = {{ SPECIALISTS_PROJECT_ROOT = {json.dumps(str(root))} }}\n"
    )
    return root


def offered_mcp_tools(request: Request) -> set[str]:
    """`<namespace>__<tool>` for every tool inside a namespace tool the model was offered."""
    return {
        f"{tool['name']}__{inner['name']}"
        for tool in (request.json or {}).get("tools", [])
        if tool.get("type") == "namespace"
        for inner in tool.get("tools", [])
    }


def codex(codex_bin: Path, project: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    argv = [str(codex_bin), "exec", "--json", "--skip-git-repo-check", "-C", str(project)]
    # Nobody can answer an approval prompt here (0.171.0 runs MCP calls without asking anyway).
    argv += ["-c", 'approval_policy="never"', prompt]
    return subprocess.run(
        argv, cwd=project, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


def test_model_dispatches_a_job_through_our_mcp_server(
    project: Path, mock_llm: MockLLM, codex_bin: Path
) -> None:
    mock_llm.enqueue(
        Reply(
            tool_calls=(
                ToolCall(
                    "run", {"specialist": "echo", "prompt": "ping from codex"}, namespace=NAMESPACE
                ),
            )
        ),
        Reply("dispatched"),
    )
    out = codex(codex_bin, project, "delegate a ping")
    assert out.returncode == 0, out.stderr[-2000:]
    first, second = mock_llm.model_requests[:2]
    assert NAMESPACE in first.tool_names()
    assert {f"{NAMESPACE}__run", f"{NAMESPACE}__result"} <= offered_mcp_tools(first)
    (job_id,) = [j for j in os.listdir(project / ".specialists" / "jobs") if j[0] != "."]
    assert job_id in " ".join(second.tool_results())  # the model was told the id at once
    wait_until(lambda: status(job_id)["status"] == "done", 30, "job done")
    assert sp("result", job_id).stdout.strip() == "ping from codex"
