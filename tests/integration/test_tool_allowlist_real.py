"""A `tools: read, grep, find, ls` agent gets no shell from the real pi 1.6.0 or Claude Code
2.1.197 (seed 004: `tools` is a strict allowlist): what the model is offered, seen at the
mock LLM, is the list and nothing the READ_ONLY tier would add."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp
from tests.support.agent_env import CLAUDE_MOCK_MODEL, AgentEnv
from tests.support.mock_llm import MockLLM, Reply

pytestmark = pytest.mark.integration

BUILTIN = {"read", "bash", "edit", "write", "grep", "find", "ls"}
CLAUDE_BUILTIN = {"Read", "Bash", "Edit", "Write", "Grep", "Glob", "NotebookEdit", "WebFetch"}


def _agent(name: str, runner: str, model: str) -> None:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    path = root / ".pi" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\nrunner: {runner}\nmodel: {model}\n"
        "tools: read, grep, find, ls\n---\nYou look, you never change anything.\n"
    )


def test_pi_offers_the_list_and_no_bash(pi_bin: Path, mock_llm: MockLLM) -> None:
    _agent("scout", "pi", "mock/mock-model")
    mock_llm.enqueue(Reply("looked"))
    out = sp("run", "scout", "--prompt", "map it", timeout=120)
    assert out.returncode == 0, out.stderr
    (request,) = mock_llm.model_requests
    assert set(request.tool_names()) & BUILTIN == {"read", "grep", "find", "ls"}


def test_claude_offers_the_list_and_no_bash(
    claude_bin: Path, isolated_env: AgentEnv, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECIALISTS_CLAUDE_BIN", str(claude_bin))
    _agent("scout", "claude", f"anthropic/{CLAUDE_MOCK_MODEL}")
    mock_llm.set_default(Reply("looked"))
    out = sp("run", "scout", "--prompt", "map it", timeout=120)
    assert out.returncode == 0, out.stderr
    offered = {n for r in mock_llm.model_requests for n in r.tool_names()}
    assert offered & CLAUDE_BUILTIN == {"Read", "Grep", "Glob"}


def test_codex_refuses_a_list_without_its_shell_before_any_job(mock_llm: MockLLM) -> None:
    _agent("scout", "codex", "openai/mock-model")
    out = sp("run", "scout", "--prompt", "map it")
    assert out.returncode == 2 and "allows no bash" in out.stderr, out.stderr
    assert not (
        Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists/jobs"
    ).is_dir() or not [
        *(Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists/jobs").iterdir()
    ]
    assert mock_llm.model_requests == []


def test_pi_with_an_empty_list_offers_no_builtin_tool(pi_bin: Path, mock_llm: MockLLM) -> None:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    path = root / ".pi" / "agents" / "thinker.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nname: thinker\nrunner: pi\nmodel: mock/mock-model\ntools: []\n---\nThink.\n"
    )
    mock_llm.enqueue(Reply("thought"))
    out = sp("run", "thinker", "--prompt", "think", timeout=120)
    assert out.returncode == 0, out.stderr
    (request,) = mock_llm.model_requests
    assert not set(request.tool_names()) & BUILTIN, request.tool_names()
