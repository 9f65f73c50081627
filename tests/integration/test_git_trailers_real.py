"""A commit an agent makes inside a job carries `Specialists-Job: <id>`: the real pi 1.6.0 and
Claude Code 2.1.197 (their bash tools, against the mock LLM) and a command agent, each run as a
background job through the CLI, committing in a repository whose own pre-commit hook must
still run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_job_processes import root, start, status, wait_until, write_spec
from tests.support.agent_env import CLAUDE_MOCK_MODEL
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

COMMIT = "echo work > work.txt && git add work.txt && git commit -q -m 'agent work'"


@pytest.fixture
def hooked_repo(tmp_path: Path) -> Path:
    """The project with its own pre-commit hook, which must keep running."""
    marker = tmp_path / "pre-commit-ran"
    hook = root() / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (root() / ".gitignore").write_text(".specialists/\nspecialists/\n")
    return marker


def last_commit() -> str:
    out = subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=root(), capture_output=True, text=True
    )
    return out.stdout


def finish(job_id: str) -> None:
    wait_until(lambda: status(job_id)["status"] in ("done", "error"), 90, "the job's end")
    assert status(job_id)["status"] == "done", status(job_id)


def test_a_command_agents_commit_carries_the_job(hooked_repo: Path) -> None:
    write_spec("committer", f"{{runner: {{type: command, command: sh, args: ['-c', {COMMIT!r}]}}}}")
    job_id = start("committer")
    finish(job_id)
    assert f"Specialists-Job: {job_id}" in last_commit()
    assert hooked_repo.exists()


def test_a_pi_bash_tool_commit_carries_the_job(
    pi_bin: Path, mock_llm: MockLLM, hooked_repo: Path
) -> None:
    write_spec("tester", "{runner: pi, model: mock/mock-model, permission_required: LOW}")
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": COMMIT}),)), "DONE")
    job_id = start("tester", "commit your work")
    finish(job_id)
    assert mock_llm.model_requests[-1].tool_results(), "pi never ran the command"
    text = last_commit()
    assert text.startswith("agent work\n") and f"Specialists-Job: {job_id}" in text
    assert hooked_repo.exists()


def test_a_claude_code_bash_commit_carries_the_job(
    claude_bin: Path, mock_llm: MockLLM, hooked_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECIALISTS_CLAUDE_BIN", str(claude_bin))
    write_spec(
        "claudette",
        f"{{runner: claude, model: anthropic/{CLAUDE_MOCK_MODEL}, permission_required: MEDIUM}}",
    )
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("Bash", {"command": COMMIT})]), Reply("DONE"))
    job_id = start("claudette", "commit your work")
    finish(job_id)
    results = json.dumps(mock_llm.model_requests[-1].tool_results())
    text = last_commit()
    assert text.startswith("agent work\n"), results
    assert f"Specialists-Job: {job_id}" in text
    assert hooked_repo.exists()
    assert os.environ.get("GIT_CONFIG_PARAMETERS") is None  # our own process is untouched
