"""Control end to end on the native runtime under its real detached supervisor (mock LLM over
HTTP): interrupt then resume, stop is final, two concurrent resumes of one child, a stale
lease after kill -9, acknowledged steering, and wait (next / all / one, with a timeout)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from specialists.store import keys
from specialists.supervise.start import session_key
from tests.integration.test_cli_pi import events, sp, status, wait_until
from tests.integration.test_cli_runners import finished, project, run_bg
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration
__all__ = ["project"]

NATIVE = ("--runner", "native", "--model", "mockhttp/mock-model")
SLOW = {"command": "sleep 15; echo slept"}  # under the bash guard's 20 s sleep limit


def in_tool(job_id: str) -> bool:
    kinds = [e["event"] for e in events(job_id)]
    return "toolcall" in kinds and "tool_execution_end" not in kinds


def echo_user(req: Request) -> Reply:
    return Reply("answer to: " + req.last_user_text()[-60:])


def test_interrupt_pauses_a_native_job_and_resume_continues_it(
    project: Path, mock_llm: MockLLM
) -> None:
    """The run is cancelled mid-tool (no model call after it); the job waits, paused; resume
    sends the new prompt into the same job, which then answers and ends done."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", SLOW),)))
    mock_llm.set_default(echo_user)
    job_id = run_bg(*NATIVE, "--prompt", "run the slow thing")
    wait_until(lambda: in_tool(job_id), 60, "the slow tool call")
    started = time.monotonic()
    out = sp("interrupt", job_id)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"interrupted: job {job_id} is paused"), out.stdout
    assert time.monotonic() - started < 14  # the 15 s sleep was cut short
    st = status(job_id)
    assert st["status"] == "waiting", st
    assert "interrupted" in [e["event"] for e in events(job_id)]
    assert len(mock_llm.model_requests) == 1
    again = sp("interrupt", job_id)
    assert again.returncode == 0 and "nothing to interrupt" in again.stdout
    resumed = sp("resume", job_id, "--prompt", "go on, briefly")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed: job {job_id} continues in place" in resumed.stdout
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip().endswith("go on, briefly")


def test_stop_is_final_a_stopped_job_is_not_resumable(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", SLOW),)))
    job_id = run_bg(*NATIVE, "--prompt", "run the slow thing")
    wait_until(lambda: in_tool(job_id), 60, "the slow tool call")
    assert sp("stop", job_id).returncode == 0
    assert finished(job_id)["status"] == "cancelled"
    refused = sp("resume", job_id, "--prompt", "again")
    assert refused.returncode == 2
    assert "was stopped; a stopped job is not resumable" in refused.stderr
    assert sp("interrupt", job_id).returncode == 1


def _hanging_resume(mock_llm: MockLLM, source: str) -> str:
    mock_llm.enqueue(Reply("partial", hang_after=1))
    out = sp("resume", source, "--prompt", "continue", "--background")
    assert out.returncode == 0, out.stderr
    holder = out.stdout.strip()
    mock_llm.wait_until_hanging(1, timeout=60)
    return holder


def test_two_concurrent_resumes_of_one_child_one_is_refused_naming_the_holder(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply("first answer"))
    source = run_bg(*NATIVE, "--prompt", "start")
    assert finished(source)["status"] == "done"
    holder = _hanging_resume(mock_llm, source)
    jobs_before = set(os.listdir(project / ".specialists" / "jobs"))
    second = sp("resume", source, "--prompt", "me too", "--background")
    assert second.returncode == 2
    assert f"being resumed by job {holder}" in second.stderr, second.stderr
    assert set(os.listdir(project / ".specialists" / "jobs")) == jobs_before  # nothing made
    listed = sp("children", "cli-boss", "--json")  # nobody's children: an empty list
    assert listed.returncode == 0 and json.loads(listed.stdout)["children"] == []
    mock_llm.release()
    assert finished(holder)["status"] == "done"
    third = sp("resume", source, "--prompt", "now me", "--background")
    assert third.returncode == 0, third.stderr  # the holder's end released the lease
    assert finished(third.stdout.strip())["status"] == "done"


def test_a_stale_claim_is_taken_over_after_kill_9_of_its_holder(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply("first answer"))
    source = run_bg(*NATIVE, "--prompt", "start")
    assert finished(source)["status"] == "done"
    holder = _hanging_resume(mock_llm, source)
    os.kill(status(holder)["supervisor_pid"], signal.SIGKILL)
    mock_llm.release()
    claim = keys.read(project / ".specialists", session_key(source)) or {}
    assert claim["job"] == holder
    out = sp("resume", source, "--prompt", "after the crash", "--background")
    assert out.returncode == 0, out.stderr
    new = out.stdout.strip()
    claim = keys.read(project / ".specialists", session_key(source)) or {}
    assert claim["job"] == new and claim["took_over"] == holder
    assert finished(new)["status"] == "done"


def test_steer_waits_for_the_agents_acknowledgement(project: Path, mock_llm: MockLLM) -> None:
    """delivered: the native loop took the steer into its conversation (its own ack); a steer
    to an ended job fails with the reason."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 3; echo ok"}),)))
    mock_llm.set_default(echo_user)
    job_id = run_bg(*NATIVE, "--prompt", "work")
    wait_until(lambda: in_tool(job_id), 60, "the tool call")
    out = sp("steer", job_id, "focus", "on", "tests")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("delivered:", "scheduled:")), out.stdout
    finished(job_id)
    kinds = [e["event"] for e in events(job_id)]
    assert "steer_ack" in kinds and "steer_delivered" in kinds, kinds
    late = sp("steer", job_id, "too late")
    assert late.returncode == 1 and "failed: job" in late.stderr
    inbox = project / ".specialists" / "owners" / f"job-{job_id}" / "events.jsonl"
    sent = inbox.read_text().count('"kind":"control"')
    for verb in (("follow-up", job_id, "more"), ("interrupt", job_id)):
        out = sp(*verb)
        assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out
        assert "Traceback" not in out.stderr
    assert inbox.read_text().count('"kind":"control"') == sent  # nothing sent to an ended job


def test_wait_next_all_one_and_timeout(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.set_default(Reply("quick"))
    quick = run_bg(*NATIVE, "--prompt", "quick")
    finished(quick)  # before the slow job's reply is queued: both read one queue
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 8; echo x"}),)))
    slow = run_bg(*NATIVE, "--prompt", "slow")
    wait_until(lambda: in_tool(slow), 60, "the slow job's tool call")
    nxt = sp("wait", "--next", quick, slow, "--timeout", "60s")
    assert nxt.returncode == 0, nxt.stderr
    assert nxt.stdout.split()[:2] == [quick, "done"]
    timed = sp("wait", slow, "--timeout", "200ms")
    assert timed.returncode == 124 and f"still running: {slow}" in timed.stderr
    both = sp("wait", "--all", quick, slow, "--timeout", "60s", "--json")
    assert both.returncode == 0, both.stderr
    assert {x["id"] for x in json.loads(both.stdout)["jobs"]} == {quick, slow}
    one = sp("wait", quick)
    assert one.returncode == 0 and one.stdout.startswith(f"{quick} done")


def test_an_attached_run_detaches_on_ctrl_c_and_the_job_goes_on(
    project: Path, mock_llm: MockLLM
) -> None:
    """`run --attach` follows a detached job; SIGINT detaches (exit 0, how to follow it is
    printed) and the job still ends done on its own."""
    import subprocess
    import sys

    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 3; echo x"}),)))
    mock_llm.set_default(Reply("finished alone"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "run", "tester", "--attach", *NATIVE,
         "--prompt", "slow"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stderr is not None
    first = proc.stderr.readline()
    if first.startswith("mission "):  # the run's mission (missions.md), said before it starts
        first = proc.stderr.readline()
    assert "started; Ctrl-C detaches" in first, first
    job_id = first.split()[1]
    wait_until(lambda: in_tool(job_id), 60, "the tool call")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"detached: job {job_id} keeps running" in err
    assert f"specialists feed --job {job_id} --follow" in err
    assert finished(job_id)["status"] == "done"
    assert sp("result", job_id).stdout.strip() == "finished alone"
    attached = sp("run", "tester", "--attach", *NATIVE, "--prompt", "quick")
    assert attached.returncode == 0 and attached.stdout.strip() == "finished alone"


def test_subscribe_puts_the_completion_event_in_the_owners_inbox(
    project: Path, mock_llm: MockLLM
) -> None:
    """Not blocking: the subscriber gets the job's one completion notice (the generic end
    notice, same id), also when it subscribes after the end."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 2; echo x"}),)))
    mock_llm.set_default(Reply("ok"))
    job_id = run_bg(*NATIVE, "--prompt", "slow")
    out = sp("wait", job_id, "--subscribe", "--owner", "cli-watcher")
    assert out.returncode == 0 and "when it ends" in out.stdout, out.stdout + out.stderr
    finished(job_id)

    def inbox(owner: str) -> str:
        return sp("events", "--owner", owner).stdout

    wait_until(lambda: f"job-{job_id}:notice:1" in inbox("cli-watcher"), 30, "the notice")
    assert inbox("cli-watcher").count("completed (job") == 1
    late = sp("wait", job_id, "--subscribe", "--owner", "cli-late")
    assert "it has ended" in late.stdout
    assert f"job-{job_id}:notice:1" in inbox("cli-late")


@pytest.mark.parametrize("runner,model", [("claude", "claude-sonnet-4-5"), ("codex", "mock-model")])
def test_interrupt_then_resume_on_the_one_shot_runners(
    project: Path, mock_llm: MockLLM, runner: str, model: str, request: pytest.FixtureRequest
) -> None:
    """The real Claude Code and Codex: SIGINT ends the turn mid-stream (the session is kept),
    the job pauses, and resume's follow-up starts a new process that continues the session."""
    request.getfixturevalue(f"{runner}_bin")
    mock_llm.enqueue(Reply("never finished " * 50, hang_after=3))
    mock_llm.set_default(Reply("resumed after the interrupt"))
    job_id = run_bg("--runner", runner, "--model", model, "--prompt", "hello")
    mock_llm.wait_until_hanging(timeout=60)
    out = sp("interrupt", job_id)
    mock_llm.release()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"interrupted: job {job_id} is paused"), out.stdout
    resumed = sp("resume", job_id, "--prompt", "go on")
    assert resumed.returncode == 0, resumed.stderr
    st = finished(job_id)
    assert st["status"] == "done", st
    assert sp("result", job_id).stdout.strip() == "resumed after the interrupt"
