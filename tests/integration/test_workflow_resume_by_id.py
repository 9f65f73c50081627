"""Seed 004's oracle loop in a Python workflow: `runs.run(key, resume=first.run_id, ...)`
continues the first child's session on the native runtime against the mock LLM, and the
follow-up is a new job whose model sees the first exchange."""

from __future__ import annotations

import pytest

from specialists.fronts.cli.main import main
from tests.support.mock_llm import MockLLM, Reply
from tests.support.workflows import result, store, wait_ended, workflow_project

pytestmark = pytest.mark.integration

LOOP = """
async def main(runs, args):
    first = await runs.run("consult", agent="nat", task="first question")
    final = await runs.run("follow-up", resume=first.run_id, task="second question")
    return {"first": first.run_id, "final": final.run_id, "answer": final.output}
"""


def test_resume_by_run_id_continues_the_session(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_llm.enqueue(Reply("FIRST-ANSWER"), Reply("SECOND-ANSWER"))
    project = workflow_project({"loop.py": LOOP})
    assert main(["workflow", "run", "loop", "--detach"]) == 0
    wf = capsys.readouterr().out.strip()
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    out = result(project, wf)
    assert out["answer"] == "SECOND-ANSWER" and out["final"] != out["first"]
    second = mock_llm.model_requests[-1]
    history = str(second.messages())
    assert "first question" in history and "FIRST-ANSWER" in history
    assert second.last_user_text().endswith("second question")
    record = store(project).read_record(out["final"])
    assert record.parent_id == wf and record.thread["continues"] == out["first"]
    assert record.specialist == "nat"  # the revived child keeps its agent
