"""End to end, no network: the native runtime under the real detached supervisor, against
the mock LLM over HTTP. `sleep` yields (no model call until the timer), the supervisor fires
the timer and wakes the loop, the model's next request carries the timer event in the one
format, and the answer mentions the wake-up.
"""

from __future__ import annotations

import json
import os
import signal
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


def test_bg_run_keeps_a_native_job_waiting_until_its_job_exit_wakes_it(
    project: Path, mock_llm: MockLLM
) -> None:
    """The agent dispatches a command and ends its turn without yielding; the command is
    pending work of the job, so the job waits; its one job_exit wakes the loop."""

    def after_exit(req: Request) -> Reply:
        text = req.last_user_text()
        if text.startswith("[specialists event] job_exit from bg_run ("):
            return Reply("The command finished: " + ("BUILT" if "BUILT" in text else "?"))
        return Reply("Dispatched; waiting for it.")

    # bg_run runs a command: a MEDIUM job has it, the shared LOW tester does not
    # (docs/runners.md, "Our agent tools")
    spec = project / "specialists" / "tester.specialist.yaml"
    spec.write_text(
        spec.read_text().replace("permission_required: LOW", "permission_required: MEDIUM")
    )
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bg_run", {"command": "sleep 2; echo BUILT"}),)))
    mock_llm.set_default(after_exit)
    job_id = run_bg(*NATIVE, "--prompt", "build in the background")
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip() == "The command finished: BUILT"
    requests = mock_llm.model_requests
    assert len(requests) == 3  # call, "waiting" answer, the wake with the job_exit
    assert "job_exit from bg_run (" in requests[2].last_user_text()


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


def test_a_timer_whose_supervisor_was_killed_fires_late_for_the_next_front(
    project: Path, mock_llm: MockLLM
) -> None:
    """SIGKILL the waiting job's supervisor: nothing runs for its timer any more. The next
    front that looks at the owner (here `specialists events`) fires it once, "(late by N s)",
    and a second look neither fires nor shows it twice."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("sleep", {"seconds": 8, "note": "ping"}),)))
    job_id = run_bg(*NATIVE, "--prompt", "sleep a while")
    wait_until(lambda: waiting_for_events(job_id), 60, "the wait")
    owner = f"job-{job_id}"
    (timer,) = json.loads(sp("timer", "list", "--owner", owner, "--json").stdout)["timers"]
    os.kill(status(job_id)["supervisor_pid"], signal.SIGKILL)
    if time.time() * 1000 >= timer["due_ms"]:
        pytest.skip("the machine was too slow to kill the supervisor before the timer was due")
    wait_until(lambda: status(job_id)["status"] == "error", 60, "crash recovery")
    wait_until(lambda: time.time() * 1000 > timer["due_ms"] + 2500, 30, "the timer overdue")
    shown = sp("events", "--owner", owner)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("[specialists event] timer from sleep") == 1
    assert "fired: ping (late by" in shown.stdout
    again = sp("events", "--owner", owner, "--all")
    assert again.stdout.count("[specialists event] timer") == 1  # fired once, shown once
    listed = json.loads(sp("timer", "list", "--owner", owner, "--all", "--json").stdout)["timers"]
    assert [t["state"] for t in listed] == ["fired"]
    assert len(mock_llm.model_requests) == 1
