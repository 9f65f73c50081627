"""One specialist definition on every runner, through the CLI: same job files, same commands.

Claude Code and Codex are the real CLIs against the mock LLM; native is our loop against the
mock over HTTP through the official SDK; command is a real process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import SPEC, sp, status, wait_until
from tests.support.mock_llm import MockLLM, Reply, ToolCall, write_mockhttp_project

pytestmark = pytest.mark.integration


@pytest.fixture
def project(mock_llm: MockLLM) -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    os.environ["MOCK_KEY"] = "sk-test"
    return write_mockhttp_project(root, mock_llm.openai_base_url, SPEC.format(extra=""))


def run_bg(*args: str) -> str:
    out = sp("run", "tester", "--background", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def finished(job_id: str) -> dict:
    wait_until(lambda: status(job_id)["status"] in ("done", "error", "cancelled"), 60, "end")
    return status(job_id)


def test_native_runner_through_cli(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "echo native-ran"}),)), Reply("native ok")
    )
    job_id = run_bg("--runner", "native", "--model", "mockhttp/mock-model", "--prompt", "go")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip() == "native ok"
    assert st["runner"] == "native" and st["tool_calls"] == 1
    assert st["tokens"].get("input", 0) > 0
    assert "native-ran" in json.dumps(mock_llm.model_requests[-1].messages())


def test_native_missing_key_is_one_clear_error(project: Path) -> None:
    os.environ.pop("MOCK_KEY")
    job_id = run_bg("--runner", "native", "--model", "mockhttp/mock-model", "--prompt", "go")
    st = finished(job_id)
    assert st["status"] == "error" and "MOCK_KEY" in st["error"]


def test_claude_runner_through_cli(project: Path, mock_llm: MockLLM, claude_bin: Path) -> None:
    mock_llm.enqueue(Reply("claude says hi"))
    job_id = run_bg("--runner", "claude", "--model", "claude-sonnet-4-5", "--prompt", "hello")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip() == "claude says hi"
    assert st["session_file"]  # the Claude session id, for --continue
    mock_llm.enqueue(Reply("claude remembers"))
    again = sp("run", "tester", "--continue", job_id, "--prompt", "again")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "claude remembers"
    assert "claude says hi" in json.dumps(mock_llm.model_requests[-1].json)


def test_codex_runner_through_cli(project: Path, mock_llm: MockLLM, codex_bin: Path) -> None:
    mock_llm.enqueue(Reply("codex says hi"))
    job_id = run_bg("--runner", "codex", "--model", "mock-model", "--prompt", "hello")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip() == "codex says hi"


def test_command_runner_and_steer_refused(project: Path) -> None:
    # The command runs until the test releases it, so the steer always meets it running
    # (a fixed `sleep 1` lost that race on a loaded machine).
    release = project / "release"
    (project / "specialists" / "slowcat.specialist.yaml").write_text(
        "metadata: {name: slowcat}\n"
        "execution:\n"
        "  runner: {type: command, command: sh, args: ['-c', "
        f"'while [ ! -e {release} ]; do sleep 0.05; done; cat']}}\n"
    )
    out = sp("run", "slowcat", "--prompt", "echo me", "--background")
    job_id = out.stdout.strip()
    wait_until(lambda: status(job_id)["status"] == "running", 20, "running")
    refused = sp("steer", job_id, "hurry")
    assert refused.returncode == 1 and "cannot be steered" in refused.stderr
    release.touch()
    assert finished(job_id)["status"] == "done"
    assert "echo me" in sp("result", job_id).stdout


def test_unknown_runner_is_refused(project: Path) -> None:
    out = sp("run", "tester", "--runner", "gemini", "--prompt", "x")
    assert out.returncode == 2 and "unknown runner 'gemini'" in out.stderr


# --- what a person sees: the agent's words and why a tool failed, on every runner --------

WORDS = "Let me look at \x1b[31mthe\x1b[0m failing file first."
FAILING = {  # runner: (tool, arguments, model, what the tool answers)
    "pi": ("bash", {"command": "cat /no/such/file"}, "mock/mock-model", "No such file"),
    "claude": ("Read", {"file_path": "/no/such/file"}, "claude-sonnet-4-5", "does not exist"),
    "codex": ("exec_command", {"cmd": "cat /no/such/file"}, "mock-model", "No such file"),
    "native": ("bash", {"command": "cat /no/such/file"}, "mockhttp/mock-model", "No such file"),
}


def events_of(project: Path, job_id: str) -> list[dict]:
    path = project / ".specialists" / "jobs" / job_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("runner", sorted(FAILING))
def test_every_runner_logs_the_agents_words_and_a_failed_tools_reason(
    project: Path, mock_llm: MockLLM, runner: str, request: pytest.FixtureRequest
) -> None:
    """Before: `text` events carried no text and `tool_end bash error` no reason. Now every
    runner's events say both (bounded), and the feed shows them with escapes made visible."""
    if runner in ("pi", "claude", "codex"):
        request.getfixturevalue(f"{runner}_bin")
    tool, args, model, reason = FAILING[runner]
    mock_llm.enqueue(
        Reply(WORDS, tool_calls=(ToolCall(tool, args),)), Reply("It is missing; all done.")
    )
    job_id = run_bg("--runner", runner, "--model", model, "--prompt", "look")
    st = finished(job_id)
    assert st["status"] == "done", st
    events = events_of(project, job_id)
    said = [e["text"] for e in events if e["event"] == "text"]
    assert WORDS in said and "It is missing; all done." in said, said
    ends = [e for e in events if e["event"] == "tool_execution_end"]
    assert ends and ends[0].get("is_error") is True, ends
    assert reason in ends[0]["error"], ends
    feed = sp("feed", job_id).stdout
    assert "says" in feed and "\\e[31mthe\\e[0m failing file" in feed and "\x1b" not in feed
    assert "tool failed" in feed and reason in feed
    assert st["last_text"] == "It is missing; all done."


def test_a_command_agents_output_is_its_words(project: Path) -> None:
    script = project / "talk.sh"
    script.write_text('printf "compiling \\033[1mall\\n"; cat\n')
    (project / "specialists" / "talker.specialist.yaml").write_text(
        "metadata: {name: talker}\n"
        "execution:\n"
        f"  runner: {{type: command, command: sh, args: ['{script}']}}\n"
    )
    out = sp("run", "talker", "--prompt", "of it", "--background")
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert finished(job_id)["status"] == "done"
    said = [e["text"] for e in events_of(project, job_id) if e["event"] == "text"]
    assert "".join(said) == "compiling \x1b[1mall\nof it", said
