"""Asking the supervisor end to end: a native job under its real detached supervisor, the
mock LLM over HTTP, and the CLI as the supervisor (a person, owner key cli-boss)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp, wait_until
from tests.integration.test_cli_runners import finished, project, run_bg
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration
__all__ = ["project"]

NATIVE = ("--runner", "native", "--model", "mockhttp/mock-model")


def open_asks() -> list[dict]:
    out = sp("asks", "--json")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout)["asks"])


def echo_tool_result(req: Request) -> Reply:
    results = req.tool_results()
    return Reply("final: " + (results[-1] if results else "no tool result"))


@pytest.fixture
def boss(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SPECIALISTS_OWNER", "cli-boss")
    return "cli-boss"


def test_an_ask_is_answered_and_the_waiting_child_gets_the_reply(
    project: Path, mock_llm: MockLLM, boss: str
) -> None:
    """The child's contact_supervisor call blocks until the reply; the reply is the tool's
    result (the model's next request carries it); a second reply is refused."""
    ask = {"kind": "need_decision", "message": "Readability or speed?", "timeout_s": 120}
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("contact_supervisor", ask),)))
    mock_llm.set_default(echo_tool_result)
    job_id = run_bg(*NATIVE, "--prompt", "decide with your supervisor")
    wait_until(lambda: len(open_asks()) == 1, 60, "the ask")
    (row,) = open_asks()
    assert row["job_id"] == job_id and row["kind"] == "need_decision" and row["to"] == [boss]
    inbox = sp("events", "--owner", boss).stdout
    assert "[specialists event] ask from contact_supervisor" in inbox and row["id"] in inbox
    out = sp("reply", row["id"], "Readability,", "always.")
    assert out.returncode == 0, out.stderr
    st = finished(job_id)
    assert st["status"] == "done", st
    answer = sp("result", job_id).stdout
    assert "Your supervisor replied" in answer and "Readability, always." in answer
    again = sp("reply", row["id"], "speed")
    assert again.returncode == 2 and "already settled: answered by cli-" in again.stderr
    assert open_asks() == []


def test_an_ask_times_out_and_the_child_goes_on(
    project: Path, mock_llm: MockLLM, boss: str
) -> None:
    ask = {"kind": "interview_request", "message": "Which files?", "timeout_s": 1}
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("contact_supervisor", ask),)))
    mock_llm.set_default(echo_tool_result)
    job_id = run_bg(*NATIVE, "--prompt", "ask and time out")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert "No reply in 1 s" in sp("result", job_id).stdout
    (row,) = json.loads(sp("asks", "--all", "--json").stdout)["asks"]
    assert row["state"] == "timeout"
    late = sp("reply", row["id"], "too late")
    assert late.returncode == 2 and "already settled: timed out" in late.stderr


def test_progress_update_does_not_wait(project: Path, mock_llm: MockLLM, boss: str) -> None:
    ask = {"kind": "progress_update", "message": "half way", "timeout_s": 3600}
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("contact_supervisor", ask),)))
    mock_llm.set_default(echo_tool_result)
    job_id = run_bg(*NATIVE, "--prompt", "report progress")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert "Progress update sent" in sp("result", job_id).stdout
    (row,) = json.loads(sp("asks", "--all", "--json").stdout)["asks"]
    assert row["state"] == "progress" and row["timeout_s"] == 0
    refused = sp("reply", row["id"], "thanks")
    assert refused.returncode == 2 and "progress update; it takes no reply" in refused.stderr
    assert "reports progress" in sp("events", "--owner", boss).stdout
