"""A child agent is not the orchestrator (issue 7 item 9), with the real Claude Code 2.1.197 and
Codex 0.171.0 against the mock LLM: after `specialists init` (and with the orchestrator's user
config in place), a child job runs none of the orchestrator's hooks, starts none of its MCP
servers and is offered none of their tools, while provider settings and credentials from the
user's config keep working. Each test ends with the orchestrator itself run the same way, as
the control that proves the setup would have fired."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from specialists.events.inbox import Inbox
from tests.integration.test_job_processes import root, sp, start, status, wait_until, write_spec
from tests.support.agent_env import CLAUDE_MOCK_MODEL, AgentEnv
from tests.support.mock_llm import MockLLM, Reply

pytestmark = pytest.mark.integration

ECHO = "{runner: {type: command, command: cat}}"


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`specialists` on PATH records every MCP server start (`mcp-started.<who>`), then runs."""
    real = Path(sys.executable).parent / "specialists"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "specialists"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = mcp ]; then touch {tmp_path}/mcp-started.${{WHO:-project}}; fi\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{real.parent}:{os.environ['PATH']}")
    return tmp_path


def started(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.glob("mcp-started.*"))


def finished_echo_job() -> Callable[[], bool]:
    """A done job whose notice event the orchestrator's hook would take; returns "is it
    still pending in the orchestrator's inbox?"."""
    write_spec("echo", ECHO)
    job_id = start("echo", "hello")
    wait_until(lambda: status(job_id)["status"] == "done", 30, "the echo job")

    def pending() -> bool:
        inbox = Inbox(root() / ".specialists", "claude-orchestrator")
        return f"job-{job_id}:notice:1" in inbox.pending().ids

    assert pending()
    return pending


def finish(job_id: str) -> dict:
    wait_until(lambda: status(job_id)["status"] in ("done", "error"), 120, "the child's end")
    return status(job_id)


# --- Claude Code ------------------------------------------------------------------------------


def test_a_claude_child_runs_no_hook_and_no_mcp_server_of_the_orchestrator(
    mock_llm: MockLLM,
    claude_bin: Path,
    isolated_env: AgentEnv,
    marks: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sp("init").returncode == 0  # .mcp.json + .claude/settings.json hooks
    # init names this interpreter (`python -m specialists mcp ...`); run our MCP servers
    # through the marking `specialists` on PATH instead, so their starts are seen.
    mcp = root() / ".mcp.json"
    doc = json.loads(mcp.read_text())
    for server in doc["mcpServers"].values():
        assert server["args"][:2] == ["-m", "specialists"], server
        server["command"], server["args"] = "specialists", server["args"][2:]
    mcp.write_text(json.dumps(doc))
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    # The user's own settings: a hook and an MCP server of theirs, and the provider settings
    # and credentials the child must keep (taken out of the process environment for that).
    (config / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [{"type": "command", "command": f"touch {marks}/user-hook"}]}
                    ]
                },
                "env": {"ANTHROPIC_BASE_URL": os.environ["ANTHROPIC_BASE_URL"]},
                "apiKeyHelper": "echo dummy-from-helper",
            }
        )
    )
    (config / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mine": {"command": "sh", "args": ["-c", f"touch {marks}/mcp-started.user"]}
                }
            }
        )
    )
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("SPECIALISTS_CLAUDE_BIN", str(claude_bin))
    # Notices go to the session that asked (issue 7 item 10): one owner for the orchestrator,
    # inherited by the child, so a hook that ran in the child would take this notice.
    monkeypatch.setenv("SPECIALISTS_OWNER", "claude-orchestrator")
    notice_pending = finished_echo_job()
    write_spec("child", f"{{runner: claude, model: anthropic/{CLAUDE_MOCK_MODEL}}}")
    mock_llm.set_default(Reply("child answer"))

    child = finish(start("child", "do the work"))

    assert child["status"] == "done", child
    assert sp("result", child["id"]).stdout.strip() == "child answer"
    requests = list(mock_llm.model_requests)
    assert requests and all(r.headers.get("x-api-key") == "dummy-from-helper" for r in requests)
    assert notice_pending(), "the child ran the orchestrator's UserPromptSubmit hook"
    assert not (marks / "user-hook").exists(), "the child ran the user's hook"
    assert started(marks) == [], "the child started an MCP server"
    assert not any(n.startswith("mcp__") for r in requests for n in r.tool_names())

    # The control: the orchestrator itself, run the same way, fires all of it.
    out = subprocess.run(
        [str(claude_bin), "-p", "--model", CLAUDE_MOCK_MODEL, "what's new?"],
        cwd=root(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert not notice_pending() and (marks / "user-hook").exists()
    assert "mcp-started.project" in started(marks)


# --- Codex ----------------------------------------------------------------------------------


def test_a_codex_child_starts_no_mcp_server_of_the_orchestrator(
    mock_llm: MockLLM,
    codex_bin: Path,
    isolated_env: AgentEnv,
    marks: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrapper = marks / "bin" / "specialists"
    project = root()
    user_config = isolated_env.codex_home / "config.toml"  # already the mock provider
    user_config.write_text(
        user_config.read_text()
        + f'notify = ["sh", "-c", "touch {marks}/notified"]\n'
        + "\n[mcp_servers.specialists]\n"
        + f"command = {json.dumps(str(wrapper))}\n"
        + 'args = ["mcp"]\n'
        + 'env = { WHO = "codex-user" }\n'
        + f"\n[projects.{json.dumps(str(project))}]\n"
        + 'trust_level = "trusted"\n'
    )
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(
        "[mcp_servers.theirs]\n"
        + f"command = {json.dumps(str(wrapper))}\n"
        + 'args = ["mcp"]\n'
        + 'env = { WHO = "codex-project" }\n'
    )
    monkeypatch.setenv("SPECIALISTS_CODEX_BIN", str(codex_bin))
    write_spec("child", "{runner: codex, model: openai/mock-model, permission_required: READ_ONLY}")
    mock_llm.set_default(Reply("codex child answer"))

    child = finish(start("child", "do the work"))

    assert child["status"] == "done", child
    assert sp("result", child["id"]).stdout.strip() == "codex child answer"
    assert started(marks) == [], "the child started the orchestrator's MCP servers"
    assert not (marks / "notified").exists(), "the child ran the orchestrator's notify hook"

    # The control: the orchestrator's own codex starts both servers.
    out = subprocess.run(
        [str(codex_bin), "exec", "--json", "--skip-git-repo-check", "-C", str(project), "hi"],
        cwd=project,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert started(marks) == ["mcp-started.codex-project", "mcp-started.codex-user"]
