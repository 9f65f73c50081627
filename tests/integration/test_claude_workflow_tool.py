"""Claude Code's OWN `Workflow` tool (2.1.332; first written on 2.1.197), run for real
against the scripted mock: the harness of benchmarks/bench_workflow_vs_claude.py, proven
here so it cannot rot silently.

The mock answers the top-level request with a `Workflow` tool_use, each subagent request
(recognised by its system prompt) with a short answer, and Claude Code brings the script's
return value back to the top-level conversation as a `<task-notification>`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_workflow import (
    SUBAGENT_MARK,
    WorkflowMock,
    child_tag,
    claude_workflow_argv,
    fan_script,
    journaled_results,
    launch_of,
)
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def run_claude(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    out = subprocess.run(
        argv,
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return out, events


def final_results(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("result")) for e in events if e.get("type") == "result"]


def test_a_parallel_fan_out_of_three_reaches_the_mock_and_comes_back(
    mock_llm: MockLLM, claude_bin: Path
) -> None:
    """Three `agent()` calls behind `parallel`: the mock sees exactly one request from each
    subagent (and only three subagent requests), and the array the script returned is what
    the top-level conversation receives, in order."""
    rule = WorkflowMock({"script": fan_script(3, "parallel")})
    mock_llm.set_default(rule)
    out, events = run_claude(claude_workflow_argv(str(claude_bin)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert rule.children == {"p0": 1, "p1": 1, "p2": 1}
    subagent = [r for r in mock_llm.model_requests if SUBAGENT_MARK in r.system_text()]
    assert len(subagent) == 3
    assert [json.loads(r) for r in rule.results] == [["ok-p0", "ok-p1", "ok-p2"]]
    assert 'workflow finished: ["ok-p0","ok-p1","ok-p2"]' in final_results(events)


def test_a_two_stage_pipeline_with_a_schema_returns_validated_objects(
    mock_llm: MockLLM, claude_bin: Path
) -> None:
    """`pipeline` over two items, two stages, each `agent()` with a schema: every subagent
    is offered the StructuredOutput tool, one call of it is its whole answer (one request
    per child), and the script gets the second stage's objects."""
    rule = WorkflowMock({"script": fan_script(4, "pipeline", schema=True)})
    mock_llm.set_default(rule)
    out, _ = run_claude(claude_workflow_argv(str(claude_bin)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert rule.children == {"a0": 1, "a1": 1, "b0": 1, "b1": 1}
    subagent = [r for r in mock_llm.model_requests if SUBAGENT_MARK in r.system_text()]
    assert all("StructuredOutput" in r.tool_names() for r in subagent)
    assert [json.loads(r) for r in rule.results] == [[{"answer": "ok-b0"}, {"answer": "ok-b1"}]]


def test_in_print_mode_an_unlisted_workflow_call_is_denied(
    mock_llm: MockLLM, claude_bin: Path
) -> None:
    """The one gate met offline: the tool is offered by default (an API key, no plan), but
    `-p` without `--allowedTools Workflow` denies the call with this exact reason and no
    subagent runs. If a release changes the gate, this names the new one."""
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("Workflow", {"script": fan_script(2, "parallel")})]),
        Reply("denied"),
    )
    argv = claude_workflow_argv(str(claude_bin))
    out, events = run_claude(argv[: argv.index("--allowedTools")])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Workflow" in mock_llm.model_requests[0].tool_names()
    assert mock_llm.model_requests[1].tool_results() == ["Review dynamic workflow before running"]
    assert not [r for r in mock_llm.model_requests if SUBAGENT_MARK in r.system_text()]
    (result,) = [e for e in events if e.get("type") == "result"]
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Workflow"]


def test_after_kill_9_only_a_resume_of_the_same_session_skips_finished_agents(
    mock_llm: MockLLM, claude_bin: Path
) -> None:
    """Six agents; the Claude Code process dies by SIGKILL once p0..p2 are journaled and
    every other child waits in the mock. The agents in flight die with it (they are in
    the process). From the same session (`--resume`), `resumeFromRunId` re-runs only
    p3..p5. From a new session 2.1.332 refuses it (the run's journal lies under the old
    session: "nothing to resume"); 2.1.197 accepted it and re-ran all six, which the
    bench's kill figures, measured on 2.1.197, rest on."""
    assert kill_then_resume(mock_llm, claude_bin, same_session=False) == set()
    assert kill_then_resume(mock_llm, claude_bin, same_session=True) == {"p3", "p4", "p5"}


def kill_then_resume(mock_llm: MockLLM, claude_bin: Path, *, same_session: bool) -> set[str]:
    """The child tags the resumed run asked the mock for."""
    rule = WorkflowMock({"script": fan_script(6, "parallel")})
    release = threading.Event()

    def holding(req: Request) -> Reply:
        if child_tag(req) in {"p3", "p4", "p5"} and not release.is_set():
            release.wait(120)
            return Reply.server_error()
        return rule(req)

    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    finished = journaled_results(config)
    mock_llm.set_default(holding)
    proc = subprocess.Popen(
        claude_workflow_argv(str(claude_bin)),
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: journaled_results(config) - finished >= 3, timeout=120, what="p0..p2")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        release.set()
    launch = launch_of(out)
    again = WorkflowMock(launch.resume_call())
    mock_llm.set_default(again)
    argv = claude_workflow_argv(str(claude_bin))
    done, _ = run_claude([*argv, "--resume", launch.session] if same_session else argv)
    assert done.returncode == 0, done.stderr[-2000:]
    if not same_session:
        refused = " ".join(mock_llm.model_requests[-1].tool_results())
        assert "nothing to resume" in refused and again.results == [], refused[-500:]
        return set(again.children)
    assert [sorted(json.loads(r)) for r in again.results] == [[f"ok-p{i}" for i in range(6)]]
    return set(again.children)
