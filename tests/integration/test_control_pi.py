"""Interrupt then resume, and an ask, on the REAL pi 1.6.0 (mock LLM) under the real detached
supervisor: pi's RPC `abort` cancels the turn and the job pauses; the ask goes through our pi
extension's contact_supervisor and the CLI answers it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import events, sp, status, wait_until
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: pitester
  description: a pi specialist with the specialists tools
execution:
  runner: {type: pi, specialists_extension: true}
  model: mock/mock-model
  permission_required: LOW
prompt:
  system: You are a careful tester.
  task_template: "$prompt"
"""


@pytest.fixture(autouse=True)
def _project(pi_bin: Path, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "pitester.specialist.yaml").write_text(SPEC)
    monkeypatch.setenv("SPECIALISTS_OWNER", "cli-boss")


def start(prompt: str) -> str:
    out = sp("run", "pitester", "--prompt", prompt, "--background")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def finished(job_id: str) -> dict:
    wait_until(lambda: status(job_id)["status"] in ("done", "error", "cancelled"), 90, "end")
    return status(job_id)


def in_tool(job_id: str) -> bool:
    kinds = [e["event"] for e in events(job_id)]
    return "toolcall" in kinds and "tool_execution_end" not in kinds


def test_interrupt_pauses_a_pi_job_and_resume_continues_it(mock_llm: MockLLM) -> None:
    def answer(req: Request) -> Reply:
        return Reply("resumed: " + req.last_user_text()[-40:])

    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 15; echo x"}),)))
    mock_llm.set_default(answer)
    job_id = start("run the slow thing")
    wait_until(lambda: in_tool(job_id), 90, "the slow tool call")
    out = sp("interrupt", job_id)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"interrupted: job {job_id} is paused"), out.stdout
    # Paused, named so everywhere (issue 21 item 17): still `waiting` (idle, takes a
    # follow-up), with current_event `interrupted`; the owner's notice says it was
    # interrupted and is paused, never that it answered.
    st = status(job_id)
    assert (st["status"], st["current_event"]) == ("waiting", "interrupted")
    kinds = [e["event"] for e in events(job_id)]
    assert "interrupted" in kinds and events(job_id)[-1].get("paused") is True
    assert "paused by an interrupt" in sp("status").stdout
    inbox = [
        json.loads(x) for x in sp("events", "--owner", "cli-boss", "--json").stdout.splitlines()
    ]
    (notice,) = [e for e in inbox if (e.get("details") or {}).get("job_id") == job_id]
    assert "was interrupted" in notice["body"] and "paused" in notice["body"]
    assert "answered" not in notice["body"]
    resumed = sp("resume", job_id, "--prompt", "carry on now")
    assert resumed.returncode == 0, resumed.stderr
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip().endswith("carry on now")


def test_a_pi_child_asks_through_the_extension_and_gets_the_reply(mock_llm: MockLLM) -> None:
    def answer(req: Request) -> Reply:
        results = req.tool_results()
        return Reply("final: " + (results[-1] if results else "none"))

    ask = {"kind": "need_decision", "message": "tabs or spaces?", "timeout_s": 120}
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("contact_supervisor", ask),)))
    mock_llm.set_default(answer)
    job_id = start("ask your supervisor")

    def open_ask() -> dict | None:
        rows = json.loads(sp("asks", "--json").stdout)["asks"]
        return rows[0] if rows else None

    row = wait_until(open_ask, 90, "the ask")
    assert row["job_id"] == job_id and row["to"] == ["cli-boss"]
    assert sp("reply", row["id"], "spaces").returncode == 0
    st = finished(job_id)
    assert st["status"] == "done", st
    assert "Your supervisor replied" in sp("result", job_id).stdout
    assert "spaces" in sp("result", job_id).stdout
