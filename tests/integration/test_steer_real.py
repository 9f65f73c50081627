"""Multi-job steering and `steer --recover` end to end: real detached supervisors, the native
runtime and REAL pi 1.6.0 against the mock LLM, the CLI as the steering side.

pi acknowledges a steer at once even mid-tool; the native loop takes steers between steps, so
a native job inside a 15 s bash call cannot acknowledge within the 3 s bound: the missed
acknowledgement that partial and recovered are about."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import events, sp, status, wait_until
from tests.integration.test_cli_runners import finished, project, run_bg
from tests.integration.test_control_real import NATIVE, SLOW, echo_user, in_tool
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = pytest.mark.integration
__all__ = ["project"]


def _slow_native(mock_llm: MockLLM, prompt: str) -> str:
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", SLOW),)))
    job_id = run_bg(*NATIVE, "--prompt", prompt)
    wait_until(lambda: in_tool(job_id), 60, "the slow tool call")
    return job_id


def test_recover_interrupts_a_native_job_that_missed_the_ack_and_resumes_it(
    project: Path, mock_llm: MockLLM
) -> None:
    """Busy in a 15 s tool call, the job cannot take the steer in 3 s: it is interrupted (the
    call is cut short), its late acknowledgement is recorded, and it resumes in place with one
    follow-up; the model reads the steer once and answers; the job ends done."""
    mock_llm.set_default(echo_user)
    job_id = _slow_native(mock_llm, "run the slow thing")
    started = time.monotonic()
    out = sp("steer", job_id, "--recover", "focus", "on", "the", "tests")
    took = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"recovered: job {job_id} missed"), out.stdout
    assert "took the steer late" in out.stdout
    assert took < 14  # the 15 s sleep was cut short
    st = finished(job_id)
    assert st["status"] == "done", st
    kinds = [e["event"] for e in events(job_id)]
    for kind in ("steer_ack", "steer_delivered", "interrupted", "follow_up_sent"):
        assert kind in kinds, kinds
    assert kinds.index("steer_delivered") < kinds.index("follow_up_sent")
    (req,) = mock_llm.model_requests[1:]  # one model call after the pause
    assert "Go on with your task" in req.last_user_text()
    assert json.dumps(req.json).count("focus on the tests") == 1  # read once, not twice


def test_a_steer_of_several_jobs_reports_each_state_and_partial(
    project: Path, mock_llm: MockLLM, pi_bin: Path
) -> None:
    """A pi job in a tool call acknowledges at once, a native one cannot, an ended job is
    refused: overall partial, exit 5, one line per job; nobody is interrupted."""

    def by_prompt(req: Request) -> Reply:
        # Each job's first request gets its slow call, whatever order the agents ask in.
        if "slow" in req.last_user_text() and not req.tool_results():
            return Reply(tool_calls=(ToolCall("bash", SLOW),))
        return echo_user(req)

    mock_llm.set_default(by_prompt)
    ended = run_bg(*NATIVE, "--prompt", "quick")
    finished(ended)
    pi = run_bg("--prompt", "pi slow")
    native = run_bg(*NATIVE, "--prompt", "native slow")
    wait_until(lambda: in_tool(pi), 90, "pi's slow tool call")
    wait_until(lambda: in_tool(native), 90, "the native slow tool call")
    out = sp("steer", f"{pi},{native},{ended}", "look", "again")
    assert out.returncode == 5, (out.stdout, out.stderr)
    lines = out.stdout.splitlines()
    assert lines[0] == "partial: 1 of 3 of the jobs acknowledged the steer", lines
    assert lines[1].split()[:2] == [pi, "delivered:"]
    assert lines[2].split()[:2] == [native, "scheduled:"]
    assert lines[3].split()[:2] == [ended, "failed:"] and "is done" in lines[3]
    assert status(native)["status"] == "running"  # a fan-out never interrupts
    none = sp("steer", f"{ended},{ended[:6]}", "hello")
    assert none.returncode == 1 and none.stderr.startswith("error: steer failed:")
    assert sp("stop", native).returncode == 0 and sp("stop", pi).returncode == 0


BLOCKER = """\
import { execSync } from "node:child_process";
// Blocks pi's one thread in a bash call that says PI_BLOCK: pi reads no stdin meanwhile,
// so a steer cannot be acknowledged (a tool that hogs the event loop).
export default function (pi) {
  pi.on("tool_call", (event) => {
    if (event.toolName === "bash" && String(event.input?.command ?? "").includes("PI_BLOCK")) {
      execSync("sleep 8");
    }
  });
}
"""
BLOCKED_PI = """\
metadata:
  name: blockedpi
  description: pi with an extension that blocks its event loop
execution:
  runner: {type: pi, extensions: [./blocker.mjs]}
  model: mock/mock-model
  permission_required: LOW
prompt:
  system: You are a careful tester.
  task_template: "$prompt"
"""


def test_recover_interrupts_a_pi_job_that_cannot_ack_and_resumes_it(
    project: Path, mock_llm: MockLLM, pi_bin: Path
) -> None:
    """pi stuck in a call that blocks its event loop cannot acknowledge in 3 s: it is
    interrupted, pauses once it can read again (taking the steer late, which pi keeps through
    the abort), and resumes with a follow-up that says go on; the model's next request has
    the steer once; the job ends done."""
    (project / "blocker.mjs").write_text(BLOCKER)
    (project / "specialists" / "blockedpi.specialist.yaml").write_text(BLOCKED_PI)
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "echo PI_BLOCK"}),)))
    mock_llm.set_default(echo_user)
    out = sp("run", "blockedpi", "--background", "--prompt", "block yourself")
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    wait_until(lambda: in_tool(job_id), 90, "the blocking tool call")
    steered = sp("steer", job_id, "--recover", "mind", "the", "docs")
    assert steered.returncode == 0, (steered.stdout, steered.stderr)
    assert steered.stdout.startswith(f"recovered: job {job_id} missed"), steered.stdout
    # pi reads its stdin in order once it can: the steer (its late ack), then the abort.
    assert "took the steer late" in steered.stdout
    st = finished(job_id)
    assert st["status"] == "done", st
    kinds = [e["event"] for e in events(job_id)]
    assert "interrupted" in kinds and "follow_up_sent" in kinds, kinds
    last = mock_llm.model_requests[-1]
    assert json.dumps(last.json).count("mind the docs") == 1, last.json  # kept, not doubled
