"""An interrupted job is `waiting` (the seeds' word: idle, takes follow-ups) and named paused
on every view: status rows, `top`, the owner's notice, the MCP status (issue 21 item 17)."""

from __future__ import annotations

from specialists.events.notices import notice_body
from specialists.fronts.jobs import job_brief
from specialists.store.records import PAUSED_EVENT, JobStatus
from specialists.store.view import PAUSED_DOING, WAITING_DOING, doing, is_paused


def status(current_event: str) -> JobStatus:
    return JobStatus(
        id="abcd1234", specialist="tester", status="waiting", current_event=current_event
    )


def test_paused_and_answered_are_told_apart() -> None:
    paused, answered = status(PAUSED_EVENT), status("waiting")
    assert is_paused(paused) and not is_paused(answered)
    assert doing(paused) == PAUSED_DOING and doing(answered) == WAITING_DOING
    assert job_brief(paused)["paused"] is True and "paused" not in job_brief(answered)
    assert job_brief(paused)["status"] == "waiting"


def test_the_owner_is_told_it_was_interrupted_not_that_it_answered() -> None:
    body = notice_body("abcd1234", status(PAUSED_EVENT).to_dict())
    assert "was interrupted" in body and "paused" in body and "answered" not in body
    assert "specialists resume abcd1234" in body
    assert "answered" in notice_body("abcd1234", status("waiting").to_dict())
