"""End to end, no network: the native runtime under the real detached supervisor, against
the mock LLM over HTTP. `sleep` yields (no model call until the timer), the supervisor fires
the timer and wakes the loop, the model's next request carries the timer event in the one
format, and the answer mentions the wake-up.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import events, sp, status, wait_until
from tests.integration.test_cli_runners import finished, project, run_bg
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration
__all__ = ["project"]  # the fixture, shared with the runner tests

NATIVE = ("--runner", "native", "--model", "mockhttp/mock-model")


def waiting_for_events(job_id: str) -> bool:
    return status(job_id).get("current_event") == "waiting_for_events"


def woken_reply(req: Request) -> Reply:
    """The model after the wake-up: it says what woke it (or that nothing did)."""
    text = req.last_user_text()
    if "[specialists event] timer from sleep" in text:
        return Reply("I woke up from my timer (" + text.rsplit("---\n", 1)[-1].strip() + ").")
    return Reply(f"unexpected request: {text[:200]}")


def test_sleep_yields_and_the_timer_wakes_the_native_agent(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("sleep", {"seconds": 2, "note": "check the build"}),))
    )
    mock_llm.set_default(woken_reply)
    started = time.monotonic()
    job_id = run_bg(*NATIVE, "--prompt", "wait two seconds, then report")
    # While the timer is pending the job waits (still `running` for callers: its answer is
    # not in yet), and the model is not called again.
    wait_until(lambda: waiting_for_events(job_id) or status(job_id)["status"] == "done", 60, "wait")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert time.monotonic() - started >= 2
    answer = sp("result", job_id).stdout.strip()
    assert answer.startswith("I woke up from my timer (Timer tm-") and "check the build" in answer
    first, second = mock_llm.model_requests  # exactly two: the yield cost no model call
    assert "sleep" in first.tool_names()
    assert "Working without blocking (specialists)" in first.system_text()
    woken = second.last_user_text()
    assert woken.startswith("[specialists event] timer from sleep (")
    assert 'original_args: {"seconds":2,"note":"check the build"}' in woken
    kinds = [e.get("event") for e in events(job_id)]
    assert "waiting" in kinds and "woken" in kinds, kinds
    assert "late by" not in woken  # fired on time


def test_stop_ends_a_native_job_waiting_on_a_long_timer(project: Path, mock_llm: MockLLM) -> None:
    """Bounded: a stop request ends a job that waits for an hour-long timer, at once, and
    its timer is cancelled on record."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("sleep", {"seconds": 3600}),)))
    job_id = run_bg(*NATIVE, "--prompt", "sleep an hour")
    wait_until(lambda: waiting_for_events(job_id), 60, "the wait")
    st = status(job_id)
    assert st["status"] == "running" and st["current_tool"].startswith("1 timer due "), st
    assert sp("stop", job_id).returncode == 0
    st = finished(job_id)
    assert st["status"] == "cancelled", st
    assert len(mock_llm.model_requests) == 1
    listed = sp("timer", "list", "--all", "--owner", f"job-{job_id}").stdout
    assert "cancelled" in listed
