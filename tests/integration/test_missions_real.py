"""Missions with real processes (issue 12 items 1 and 6): a mission recovered by a new
process after a simulated compaction (nothing but `mission list` and `mission show`) and
continued; `state set` from two processes at once, both merged; a goal mission on a real pi
job against the mock LLM that stops at its small budget without claiming success; and the
MCP front (`run` with mission false / a missing mission_id, the `mission` tool)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.events.inbox import Inbox
from tests.integration.test_cli_pi import sp, write_spec
from tests.support.jobs import echo_project
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def state_root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"


def ok(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    out = sp(*args, input=input)
    assert out.returncode == 0, out.stderr
    return out


def show(mission_id: str) -> dict:
    return json.loads(ok("mission", "show", mission_id, "--json").stdout)


def test_a_mission_is_recovered_after_compaction_by_list_and_show_and_continued():
    echo_project()
    # A plain run makes no mission and says none (issue 22 item 2): only work someone keeps
    # open is a mission.
    probe = ok("run", "echo", "--prompt", "a throwaway probe", "--background")
    assert "mission" not in probe.stderr
    assert json.loads(ok("mission", "list", "--json").stdout)["missions"] == []
    mission_id = ok("mission", "new", "Map the auth module").stdout.split()[0]
    started = ok("run", "echo", "--prompt", "Map the auth module", "--mission", mission_id, "-b")
    job = started.stdout.strip()
    assert f"mission {mission_id}" in started.stderr
    # The orchestrator's context is gone: a new process knows nothing but the files.
    listed = json.loads(ok("mission", "list", "--json").stdout)["missions"]
    assert len(listed) == 1 and listed[0]["runs"] == 1
    assert listed[0]["id"] == mission_id and listed[0]["title"] == "Map the auth module"
    wait_until(lambda: show(mission_id)["runs"][0]["status"] == "done", what="the run ends")
    ok("mission", "decide", mission_id, "Split the module?")
    ok("mission", "state", "set", mission_id, "step", '"mapped"')
    # ...and carries on from it: the next run attaches, the state is there.
    second = ok("run", "echo", "--prompt", "Write the tests", "--mission", mission_id, "-b")
    wait_until(
        lambda: [r["status"] for r in show(mission_id)["runs"]] == ["done", "done"],
        what="both runs done",
    )
    data = show(mission_id)
    assert [r["job_id"] for r in data["runs"]] == [job, second.stdout.strip()]
    assert data["state"] == {"step": "mapped"} and data["decisions"][0]["status"] == "open"
    assert data["warnings"] == []
    ok("run", "echo", "--prompt", "another probe", "--no-mission", "-b")  # still accepted
    assert len(json.loads(ok("mission", "list", "--json").stdout)["missions"]) == 1
    ok("mission", "close", mission_id, "--status", "completed", "--summary", "mapped, tested")
    assert (
        json.loads(ok("mission", "list", "--global", "--all", "--json").stdout)["missions"][0][
            "status"
        ]
        == "completed"
    )


SETTER = """
import sys
from pathlib import Path
from specialists.features.missions.state import state_set
root, mid, tag = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
print("ready", flush=True)
sys.stdin.readline()
for n in range(40):
    state_set(root, mid, f"{tag}{n}", {"n": n, "by": tag})
"""


def test_state_sets_from_two_processes_at_once_are_both_merged():
    ok("mission", "new", "shared", "--id", "m1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SETTER, str(state_root()), "m1", tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:  # released together
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        assert p.wait(timeout=120) == 0
    state = json.loads(ok("mission", "state", "get", "m1", "--json").stdout)["value"]
    assert sorted(state) == sorted(f"{t}{n}" for t in "ab" for n in range(40))


def test_a_goal_mission_on_a_real_pi_job_stops_at_its_budget_without_claiming_success(
    mock_llm, pi_bin, monkeypatch
):
    monkeypatch.setenv("PATH", f"{pi_bin.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SPECIALISTS_OWNER", "claude-goaltest")  # the orchestrator's session
    write_spec()
    ok("mission", "new", "Ship auth", "--id", "g1", "--goal", "--budget-tokens", "5")
    ok("mission", "state", "set", "g1", "nextReadyAction", '"review the diff"')
    job = ok("run", "tester", "--prompt", "say hi", "--mission", "g1", "-b").stdout.strip()
    inbox = Inbox(state_root(), "claude-goaltest")

    def goal_notices() -> list:
        return [e for e in inbox.pending().events if e.id.startswith("mission-g1:")]

    wait_until(lambda: goal_notices(), timeout=120, what="the goal's notice")
    (notice,) = goal_notices()
    assert notice.kind == "notice" and notice.details["goal"] == "budget-exhausted"
    assert notice.details["job_id"] == job and notice.details["spent_tokens"] >= 5
    assert "NOT done" in notice.body
    data = show("g1")
    assert data["status"] == "active" and data["goal"]["ended"] == "budget-exhausted"
    assert data["runs"][0]["status"] == "done"
    # The job's own completion notice went to the same owner, separately.
    assert any(
        e.details.get("job_id") == job and e.id.startswith("job-") for e in inbox.pending().events
    )


def test_mcp_run_with_and_without_a_mission_and_the_mission_tool():
    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool

    echo_project()
    ctx = ServerContext()
    missing = call_tool(ctx, "run", {"specialist": "echo", "prompt": "hi", "mission_id": "nope"})
    assert missing.is_error and "no mission 'nope'" in missing.text
    assert not (state_root() / "jobs").exists() or os.listdir(state_root() / "jobs") == []
    bare = call_tool(ctx, "run", {"specialist": "echo", "prompt": "probe", "mission": False})
    assert not bare.is_error and bare.data["mission_id"] is None
    plain = call_tool(ctx, "run", {"specialist": "echo", "prompt": "probe"})
    assert not plain.is_error and plain.data["mission_id"] is None
    made = call_tool(ctx, "run", {"specialist": "echo", "prompt": "real work", "mission": True})
    mission_id = made.data["mission_id"]
    assert mission_id and f"Mission: {mission_id}" in made.text
    listed = call_tool(ctx, "mission", {"action": "list"})
    assert [m["id"] for m in listed.data["missions"]] == [mission_id]
    shown = call_tool(ctx, "mission", {"action": "show", "mission_id": mission_id})
    assert shown.data["runs"][0]["job_id"] == made.data["job_id"]
    attached = call_tool(
        ctx, "run", {"specialist": "echo", "prompt": "more", "mission_id": mission_id}
    )
    job = json.loads((state_root() / "jobs" / attached.data["job_id"] / "job.json").read_text())
    assert job["ceiling"] == {"mission": mission_id}  # the mission's ceiling covers it
    bad = call_tool(
        ctx,
        "mission",
        {
            "action": "receipt",
            "mission_id": mission_id,
            "kind": "ci",
            "url": "ci/1",
            "status": "ok",
        },
    )
    assert bad.is_error and "absolute URL" in bad.text


def test_a_job_continued_on_any_front_joins_the_mission_and_counts_against_its_ceiling(
    mock_llm, pi_bin, monkeypatch
):
    """MCP `run` with continue_from, `resume` and `run --continue` all start through one
    sequence (fronts/starting.py): the new job joins the mission of the job it continues, and
    job.json names that mission in its ceiling, so the mission's spend covers it too."""
    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool
    from tests.support.mock_llm import Reply

    monkeypatch.setenv("PATH", f"{pi_bin.parent}{os.pathsep}{os.environ['PATH']}")
    write_spec()
    mock_llm.enqueue(Reply("one"), Reply("two"), Reply("three"), Reply("four"))
    ok("mission", "new", "Ship auth", "--id", "m1", "--max-cost", "20")
    first = ok("run", "tester", "--prompt", "start", "--mission", "m1", "-b").stdout.strip()
    ok("result", first, "--wait", "--timeout", "60s")
    continued = call_tool(
        ServerContext(), "run", {"specialist": "tester", "prompt": "on", "continue_from": first}
    )
    assert not continued.is_error, continued.text
    assert continued.data["mission_id"] == "m1"
    ok("result", continued.data["job_id"], "--wait", "--timeout", "60s")
    resumed = ok("resume", continued.data["job_id"], "--prompt", "on", "-b", "--max-cost", "2")
    assert "mission m1" in resumed.stderr
    ok("result", resumed.stdout.strip(), "--wait", "--timeout", "60s")
    rerun = ok("run", "tester", "--continue", resumed.stdout.strip(), "-p", "on", "-b")
    ids = [first, continued.data["job_id"], resumed.stdout.strip(), rerun.stdout.strip()]
    ceilings = [
        json.loads((state_root() / "jobs" / job_id / "job.json").read_text())["ceiling"]
        for job_id in ids
    ]
    mine = {"mission": "m1"}
    assert ceilings == [mine, mine, {"cost_usd": 2.0, **mine}, mine]
    assert [r["job_id"] for r in show("m1")["runs"]] == ids


def test_a_fast_job_on_a_goal_mission_gets_exactly_one_notice_per_idle_turn(monkeypatch):
    """The echo job may end before its link is written (its news then finds no mission):
    the launcher takes that turn after linking. Either way the end is counted once."""
    monkeypatch.setenv("SPECIALISTS_OWNER", "claude-fast")
    echo_project()
    ok("mission", "new", "Fast", "--id", "f1", "--goal", "--budget-tokens", "1000")
    job = ok("run", "echo", "--prompt", "hi", "--mission", "f1", "-b").stdout.strip()
    inbox = Inbox(state_root(), "claude-fast")

    def goal_notices() -> list:
        return [e for e in inbox.pending().events if e.id.startswith("mission-f1:")]

    wait_until(lambda: show("f1")["runs"][0]["status"] == "done", what="the job ends")
    wait_until(lambda: goal_notices(), what="the goal's notice")
    (notice,) = goal_notices()
    assert notice.details["goal"] == "continue" and notice.details["job_id"] == job
    assert f"job {job} is idle" in notice.body and "No next action is recorded" in notice.body
    assert show("f1")["goal"]["notices"] == 1
