"""Fork versus fresh context, asserted on what a native child's first model request contains
(real native jobs, real supervisors, the mock LLM over HTTP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from tests.support.mock_llm import MockLLM
from tests.support.threads import job_caller, spawn, thread_project, wait_closed
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

NATIVE = (
    "metadata: {name: nat, description: t}\n"
    "execution: {runner: native, model: openai/mock-model, permission_required: READ_ONLY}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)


def _parent(project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A finished native job whose conversation says the secret."""
    (project / "specialists" / "nat.specialist.yaml").write_text(NATIVE)
    code = main(["run", "nat", "--background", "--cwd", str(project), "-p", "The secret is 4217."])
    assert code == 0
    job_id = capsys.readouterr().out.strip()
    store = JobStore(project / ".specialists", news=None)
    wait_until(lambda: (st := store.read_status(job_id)) and st.status == "done", what="parent")
    return job_id


def _texts(request: object) -> str:
    return str(request.messages())  # type: ignore[attr-defined]


def test_a_forked_child_sees_the_parents_conversation_and_a_fresh_one_does_not(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Context (issue item 2): without fresh_context the native child starts from a copy of
    the parent's session, so its first request carries the parent's messages; with
    fresh_context it carries only the header and the instructions. Both close by the runtime
    with their answer, to the parent job's inbox."""
    project = thread_project()
    mock_llm.enqueue("Noted.", "It is 4217.", "I cannot know.")
    parent = _parent(project, capsys)
    as_parent = job_caller(project, parent)
    owner = f"job-{parent}"

    forked = spawn(
        as_parent, instructions="What is the secret?", fresh_context=None, specialist=None
    )
    assert not forked.is_error, forked.text
    closed = wait_closed(project, forked.data["thread_id"], owner=owner)
    assert "It is 4217." in closed.body
    first = mock_llm.model_requests[1]
    assert "The secret is 4217." in _texts(first) and "Noted." in _texts(first)
    assert "Your context is forked" in first.last_user_text()
    assert "What is the secret?" in first.last_user_text()

    fresh = spawn(as_parent, instructions="What is the secret?", specialist=None)
    wait_closed(project, fresh.data["thread_id"], owner=owner)
    second = mock_llm.model_requests[2]
    assert "4217" not in _texts(second)
    assert "Your context is fresh" in second.last_user_text()
    assert (
        JobStore(project / ".specialists", news=None).read_record(forked.data["job_id"]).runner
        == "native"
    )
