"""Taking over pi, Claude Code and Codex jobs on a real local Ray cluster (the two-node
cluster of tests/integration/test_ray_executor.py, started once for this module).

Each job runs the real agent CLI on the worker node against the mock model. Its supervisor
is killed with SIGKILL while the model is answering (the mock holds the answer until the
test lets it go); the next `status` finds the supervisor dead and crash recovery starts one
that takes the job over (supervise/checkpoint.py). Each test proves: the job ends `done` with
the answer, every event is there once and `seq` has no gap, the model was asked no more
often than the run needed (the agent on the node was not restarted), and the node's process
is the same pid. A keep-alive job taken over while it waits between runs comes back waiting
and answers a follow-up. Run alone: `pytest -m ray tests/ray -n 0 -x`."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from tests.integration.test_cli_pi import sp, status, wait_until
from tests.integration.test_ray_executor import (
    ACTIVE,
    events,
    job_dir,
    placed_on,
    project,
    worker_ids,
)
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.processes import alive

pytestmark = [
    pytest.mark.integration,
    pytest.mark.ray,
    pytest.mark.xdist_group("ray"),
    pytest.mark.timeout(600),
]

PI = ('["*_API_KEY", "PI_*"]', "{runner: pi, model: mock/mock-model}")
CLAUDE = (
    '["*_API_KEY", "ANTHROPIC_*", "CLAUDE_*", "DISABLE_*"]',
    "{runner: claude, model: anthropic/claude-sonnet-4-5}",
)
CODEX = ('["*_API_KEY", "CODEX_*", "OPENAI_*", "TMPDIR"]', "{runner: codex, model: mock-model}")
SHELL = {
    "pi": ToolCall("bash", {"command": "echo before-the-crash"}),
    "claude": ToolCall("Bash", {"command": "echo before-the-crash"}),
    "codex": ToolCall("exec_command", {"cmd": "echo before-the-crash"}),
}
RUNNERS = {"pi": PI, "claude": CLAUDE, "codex": CODEX}


def start(c: Any, runner: str, *extra: str) -> str:
    forward, execution = RUNNERS[runner]
    project(c, "true", config=f"forward_env = {forward}\n", runner=execution)
    out = sp(
        "run",
        "job",
        "--prompt",
        "use your shell tool once",
        "--background",
        "--executor",
        "ray",
        *extra,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def kill_supervisor(job_id: str) -> int:
    first = status(job_id)["supervisor_pid"]
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not alive(first), 30, "the supervisor's death")
    return first


def node_pid(job_id: str) -> int:
    return int(json.loads((job_dir(job_id) / "executor.json").read_text())["pid"])


def ended(job_id: str) -> dict[str, Any]:
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 240, "the job's end")
    return status(job_id)


def assert_once_each(job_id: str, *, turns: int = 2) -> list[str]:
    """seq without a gap or a repeat; the job started once, its run answered once, its
    tool was called and ran once, its answer's text began once, a turn ended per model
    request; a notice says the job was taken over."""
    evs = events(job_id)
    seqs = [e["seq"] for e in evs]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    kinds = [e["event"] for e in evs]
    once = ("starting", "toolcall", "tool_execution_end", "text", "run_end", "done")
    assert [kinds.count(k) for k in once] == [1] * len(once), kinds
    assert kinds.count("turn_end") <= turns, kinds
    notices = [e.get("message", "") for e in evs if e["event"] == "notice"]
    assert any("supervisor restarted" in n for n in notices), notices
    return kinds


def diagnose(job_id: str) -> Any:
    log = job_dir(job_id) / "supervisor.log"
    return (status(job_id), events(job_id)[-6:], log.read_text()[-3000:] if log.exists() else "")


@pytest.mark.parametrize("runner", ["pi", "claude", "codex"])
def test_a_job_whose_supervisor_is_killed_mid_run_is_taken_over(
    cluster: Any, mock_llm: MockLLM, runner: str, request: pytest.FixtureRequest
) -> None:
    """The model answers the tool call; the supervisor is killed while the model holds its
    second answer; the successor reads the agent's output on from its checkpoint."""
    request.getfixturevalue(f"{runner}_bin")
    mock_llm.enqueue(
        Reply(tool_calls=(SHELL[runner],)), Reply("DONE after the crash", hang_after=0)
    )
    job_id = start(cluster, runner)
    mock_llm.wait_for_requests(2, timeout=240)
    assert placed_on(job_id) in worker_ids(cluster)
    pid = node_pid(job_id)
    first = kill_supervisor(job_id)
    mock_llm.release()
    st = ended(job_id)
    assert st["status"] == "done", diagnose(job_id)
    assert st["supervisor_pid"] != first
    assert sp("result", job_id).stdout.strip() == "DONE after the crash"
    assert len(mock_llm.model_requests) == 2
    assert node_pid(job_id) == pid
    assert_once_each(job_id)


@pytest.mark.parametrize("runner", ["pi", "claude"])
def test_a_job_taken_over_while_it_waits_between_runs_accepts_a_follow_up(
    cluster: Any, mock_llm: MockLLM, runner: str, request: pytest.FixtureRequest
) -> None:
    """A keep-alive job answers and waits; its supervisor is killed; its keeper (or the
    next `status`) brings it back `waiting` (not `error`), under a new supervisor; a
    follow-up then runs on the node (pi: in the same process; Claude Code: a new one
    resuming the session) and its answer is the job's; stopping the wait ends the job
    `done`."""
    request.getfixturevalue(f"{runner}_bin")
    mock_llm.enqueue(
        Reply(tool_calls=(SHELL[runner],)), Reply("FIRST answer"), Reply("SECOND answer")
    )
    job_id = start(cluster, runner, "--keep-alive")
    wait_until(lambda: status(job_id)["status"] == "waiting", 240, "the first answer")
    first = kill_supervisor(job_id)
    # Its keeper (supervise/keeper.py) starts the successor at once; `status` would too. A
    # reader shows the successor's pid as soon as it started it, but status.json names the
    # dead one until the successor has taken the job over: wait for that.
    on_disk = job_dir(job_id) / "status.json"
    wait_until(
        lambda: json.loads(on_disk.read_text())["supervisor_pid"] != first, 60, "the successor"
    )
    st = status(job_id)
    assert st["status"] == "waiting", diagnose(job_id)
    assert st["supervisor_pid"] != first and alive(st["supervisor_pid"])
    out = sp("follow-up", job_id, "and once more", timeout=240)
    assert out.returncode == 0, out.stderr
    wait_until(
        lambda: (
            sp("result", job_id).stdout.strip() == "SECOND answer"
            and status(job_id)["status"] == "waiting"
        ),
        240,
        "the follow-up's answer",
    )
    assert len(mock_llm.model_requests) == 3
    history = json.dumps(mock_llm.model_requests[-1].messages())
    assert "FIRST answer" in history and "and once more" in history
    assert sp("stop", job_id, timeout=120).returncode == 0
    st = ended(job_id)
    assert st["status"] in ("done", "cancelled"), diagnose(job_id)
    evs = events(job_id)
    seqs = [e["seq"] for e in evs]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    kinds = [e["event"] for e in evs]
    assert kinds.count("starting") == 1 and kinds.count("run_end") == 2, kinds
    notices = [e.get("message", "") for e in evs if e["event"] == "notice"]
    assert any("supervisor restarted" in n for n in notices), notices
