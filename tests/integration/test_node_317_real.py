"""3.17 definitions on real processes (issue 21 item 16): a required pre-script that fails
ends the job before its agent starts; `auto_commit: checkpoint_on_waiting` commits a pi
job's sandbox at its answer while it waits; `system_prompt_mode: replace` reaches pi."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def sp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=root(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def define(name: str, body: dict) -> None:
    (root() / "specialists").mkdir(exist_ok=True)
    (root() / "specialists" / f"{name}.specialist.json").write_text(json.dumps(body))


def status(job_id: str) -> dict:
    return json.loads(sp("status", "--job", job_id, "--json").stdout)


def test_a_required_pre_script_that_fails_stops_the_job_before_its_agent(tmp_path: Path):
    started = tmp_path / "agent-started"
    define(
        "guarded",
        {
            "specialist": {
                "metadata": {"name": "guarded", "version": "1.0.0"},
                "execution": {
                    "runner": {"type": "command", "command": "sh",
                               "args": ["-c", f"touch {started}; cat"]},
                },
                "prompt": {"task_template": "$prompt"},
                "skills": {"scripts": [
                    {"run": "exit 3", "phase": "pre", "required": True},
                    {"run": f"touch {tmp_path / 'second'}", "phase": "pre"},
                ]},
            }
        },
    )  # fmt: skip
    out = sp("run", "guarded", "--prompt", "go", "--json")
    assert out.returncode == 1, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "error" and "required pre-script" in result["error"]
    assert not started.exists() and not (tmp_path / "second").exists()


def test_checkpoint_on_waiting_commits_at_the_answer(pi_bin: Path, mock_llm: MockLLM) -> None:
    """A keep-alive pi job in a sandbox writes a file and answers: while it waits, its
    branch already holds the file in a checkpoint commit."""
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "base"], cwd=root(), check=True)
    define(
        "worker",
        {
            "specialist": {
                "metadata": {"name": "worker", "version": "1.0.0"},
                "execution": {
                    "runner": "pi", "model": "mock/mock-model", "permission_required": "HIGH",
                    "keep_alive": True, "requires_worktree": True,
                    "auto_commit": "checkpoint_on_waiting",
                },
                "prompt": {"system": "You write files.", "system_prompt_mode": "replace",
                           "task_template": "$prompt"},
            }
        },
    )  # fmt: skip
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "echo made > made.txt"}),)),
        Reply("DONE"),
    )
    out = sp("run", "worker", "--prompt", "make a file", "--background")
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    wait_until(lambda: status(job_id)["status"] == "waiting", 120, "the answer")
    record = json.loads((root() / ".specialists" / "jobs" / job_id / "job.json").read_text())
    branch = f"sandbox-{record['sandbox']}"
    log = subprocess.run(
        ["git", "log", "--format=%s", branch], cwd=root(), capture_output=True, text=True
    ).stdout
    assert f"checkpoint: job {job_id} answer 1" in log, log
    shown = subprocess.run(
        ["git", "show", f"{branch}:made.txt"], cwd=root(), capture_output=True, text=True
    )
    assert shown.stdout == "made\n"
    feed = sp("feed", "--job", job_id).stdout
    assert "checkpoint" in feed
    # replace: pi was given our system prompt instead of its own coding-assistant prompt
    system = mock_llm.model_requests[0].system_text()
    assert system.startswith("You write files.")
    assert sp("stop", job_id).returncode == 0
