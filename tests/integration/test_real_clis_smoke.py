"""The real agent CLIs run against the mock LLM, offline, in the isolated test environment.

These prove the test support (mock_llm, agent_env, conftest fixtures) is faithful enough for
runner integration tests: each CLI does one scripted tool call and answers DONE. Startup
times are printed (run with -s to see them).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.agent_env import CLAUDE_MOCK_MODEL, MOCK_MODEL, AgentEnv
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

TIMEOUT = 60.0


class JsonLines:
    """Reads a child's stdout as JSON lines (split on b"\\n" only) on a thread."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        buf = b""
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                if raw.strip():
                    self.lines.put(json.loads(raw))
        self.lines.put(None)

    def until(self, predicate: Any, what: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {what} within {timeout}s; saw {self._kinds()}")
            try:
                item = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if item is None:
                raise AssertionError(f"stdout closed before {what}; saw {self._kinds()}")
            self.seen.append(item)
            if predicate(item):
                return item

    def _kinds(self) -> list[str]:
        return [str(x.get("type")) for x in self.seen[-30:]]


def _spawn(argv: list[str], env: AgentEnv, stdin: int | IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        cwd=env.project,
        env=env.env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return proc.returncode, stderr


# --------------------------------------------------------------------------- pi


def test_pi_rpc_bash_tool_round_trip(
    pi_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv, tmp_path: Path
) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo hi-from-pi"})]),
        Reply("DONE"),
    )
    argv = [
        str(pi_bin),
        "--mode",
        "rpc",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-context-files",
        "--provider",
        "mock",
        "--model",
        MOCK_MODEL,
        "--session",
        str(tmp_path / "s.jsonl"),
    ]
    started = time.monotonic()
    proc = _spawn(argv, isolated_env, subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    out = JsonLines(proc.stdout)

    def send(cmd: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(cmd).encode() + b"\n")
        proc.stdin.flush()

    try:
        send({"id": "p1", "type": "prompt", "message": "Run echo hi-from-pi, then say DONE."})
        ack = out.until(lambda e: e.get("id") == "p1", "prompt ack")
        startup = time.monotonic() - started
        assert ack["success"] is True
        tool_end = out.until(lambda e: e["type"] == "tool_execution_end", "tool_execution_end")
        assert "hi-from-pi" in json.dumps(tool_end["result"])
        out.until(lambda e: e["type"] == "agent_end", "agent_end")
        send({"id": "t1", "type": "get_last_assistant_text"})
        last = out.until(lambda e: e.get("id") == "t1", "get_last_assistant_text response")
        assert last["data"] == {"text": "DONE"}
        proc.stdin.close()  # only after the run: EOF mid-run abandons it
        code, stderr = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    total = time.monotonic() - started
    print(f"\npi: startup (spawn -> prompt ack) {startup:.2f}s, whole run {total:.2f}s")
    assert code == 0, stderr

    first, second = mock_llm.wait_for_requests(2)
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-mock-literal"
    assert first.json["stream_options"] == {"include_usage": True}
    assert "bash" in first.tool_names()
    assert first.last_user_text() == "Run echo hi-from-pi, then say DONE."
    assert second.tool_results() == ["hi-from-pi\n"]
    assert (tmp_path / "s.jsonl").is_file()


# --------------------------------------------------------------------------- claude


def _claude(claude_bin: Path, env: AgentEnv, prompt: str, *extra: str) -> tuple[list[dict], float]:
    argv = [
        str(claude_bin),
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        CLAUDE_MOCK_MODEL,
        *extra,
    ]
    started = time.monotonic()
    proc = _spawn(argv, env, subprocess.DEVNULL)
    assert proc.stdout is not None
    out = JsonLines(proc.stdout)
    out.until(lambda e: e["type"] == "system" and e.get("subtype") == "init", "system/init")
    startup = time.monotonic() - started
    out.until(lambda e: e["type"] == "result", "result")
    code, stderr = _finish(proc)
    assert code == 0, stderr
    return out.seen, startup


def test_claude_print_text(claude_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv) -> None:
    mock_llm.enqueue(Reply("Scripted answer from the mock."))
    events, startup = _claude(claude_bin, isolated_env, "say something")
    print(f"\nclaude: startup (spawn -> system/init) {startup:.2f}s")
    result = events[-1]
    assert result["subtype"] == "success"
    assert result["result"] == "Scripted answer from the mock."
    (call,) = mock_llm.model_requests
    assert call.path.startswith("/v1/messages")
    assert call.api_key == "dummy"
    assert call.stream and call.last_user_text().endswith("say something")
    # Nothing leaked into the real home: Claude Code keeps its state in CLAUDE_CONFIG_DIR.
    assert any(isolated_env.claude_config_dir.iterdir())


def test_claude_bash_tool_round_trip(
    claude_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    mock_llm.enqueue(
        Reply(
            thinking="I should run the command.",
            tool_calls=[ToolCall("Bash", {"command": "echo hi-from-claude", "description": "x"})],
        ),
        Reply("DONE"),
    )
    events, _ = _claude(claude_bin, isolated_env, "run echo", "--allowedTools", "Bash")
    tool_results = [
        block
        for e in events
        if e["type"] == "user"
        for block in e["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert [r["content"] for r in tool_results] == ["hi-from-claude"]
    assert events[-1]["result"] == "DONE"
    assert events[-1]["num_turns"] == 2
    assert mock_llm.model_requests[-1].tool_results() == ["hi-from-claude"]


# --------------------------------------------------------------------------- codex


def test_codex_exec_tool_round_trip(
    codex_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("exec_command", {"cmd": "echo hi-from-codex"})]),
        Reply("DONE"),
    )
    argv = [str(codex_bin), "exec", "--json", "--skip-git-repo-check", "-m", MOCK_MODEL, "go"]
    started = time.monotonic()
    proc = _spawn(argv, isolated_env, subprocess.DEVNULL)
    assert proc.stdout is not None
    out = JsonLines(proc.stdout)
    out.until(lambda e: e["type"] == "thread.started", "thread.started")
    startup = time.monotonic() - started
    out.until(lambda e: e["type"] == "turn.completed", "turn.completed")
    code, stderr = _finish(proc)
    print(f"\ncodex: startup (spawn -> thread.started) {startup:.2f}s")
    assert code == 0, stderr
    items = [e["item"] for e in out.seen if e["type"] == "item.completed"]
    commands = [i for i in items if i["type"] == "command_execution"]
    assert [c["aggregated_output"] for c in commands] == ["hi-from-codex\n"]
    assert [i["text"] for i in items if i["type"] == "agent_message"] == ["DONE"]
    first, second = mock_llm.wait_for_requests(2)
    assert first.path == "/v1/responses" and first.stream
    assert "hi-from-codex" in second.tool_results()[0]
