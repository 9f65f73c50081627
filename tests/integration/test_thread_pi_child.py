"""A pi child (the real pi 1.6.0, mock LLM) gets the thread tools through our extension, loaded
with `-e` because it is a thread; its report and its close reach the parent's inbox once each."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.jobs.store import JobStore
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.threads import inbox_events, root_caller, spawn, thread_project, wait_closed

pytestmark = pytest.mark.integration

PI_CHILD = (
    "metadata: {name: pichild, description: t}\n"
    "execution: {runner: pi, model: mock/mock-model, permission_required: LOW}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)


def test_a_pi_child_reports_and_closes_through_its_own_tools(
    pi_bin: Path, mock_llm: MockLLM
) -> None:
    """The child's model calls report_to_parent, then close_thread with a structured report:
    the parent holds one child_report and one child_closed (by the child, with the report),
    and the child saw the task header in its first request."""
    project = thread_project()
    (project / "specialists" / "pichild.specialist.yaml").write_text(PI_CHILD)
    closing = {"structured": {"summary": "all done", "files": ["x.py"], "tests": ["t passes"]}}
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("report_to_parent", {"report": "halfway there"})]),
        Reply(tool_calls=[ToolCall("close_thread", closing)]),
        Reply("Closed."),
    )
    reply = spawn(root_caller(project), specialist="pichild", instructions="do the pi part")
    assert not reply.is_error, reply.text
    tid, job_id = reply.data["thread_id"], reply.data["job_id"]
    record = JobStore(project / ".specialists", news=None).read_record(job_id)
    assert record.runner == "pi" and record.runner_options["specialists_extension"] is True
    closed = wait_closed(project, tid)
    assert closed.details["by"] == "child" and closed.details["failed"] is False
    assert "all done" in closed.body and "files: x.py" in closed.body
    events = inbox_events(project)
    reports = [e for e in events if e.kind == "child_report"]
    assert [e.id for e in reports] == [f"{tid}:child_report:1"]
    assert "halfway there" in reports[0].body
    assert sum(e.kind == "child_closed" for e in events) == 1
    first = mock_llm.model_requests[0]
    assert f"You are thread {tid}" in first.last_user_text()
    assert "do the pi part" in first.last_user_text()
