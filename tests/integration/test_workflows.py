"""Workflows end to end: a workflow job and its children are real jobs with real supervisors;
children run on the command runner, the native runtime and pi against the mock LLM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.features.threads.records import ThreadStore
from specialists.fronts.cli.main import main
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.waiting import wait_until
from tests.support.workflows import (
    agent_started,
    journal,
    keys,
    launched_keys,
    receipt,
    result,
    store,
    wait_ended,
    workflow_project,
)

pytestmark = pytest.mark.integration

PIPELINE = """
async def main(runs, args):
    items = [f"i{n:02d}" for n in range(int(args["n"]))]
    runs.phase("pipeline")

    def first(item, prev):
        return {"key": f"echo-{item}", "agent": "echo", "task": f"item {item}"}

    def second(item, prev):
        return {"key": f"nat-{item}", "agent": "nat", "task": f"check <{prev.output}>"}

    def third(item, prev):
        agent = "pichild" if item == args.get("pi_item") else "echo"
        return {"key": f"last-{item}", "agent": agent, "task": f"final <{prev.output}>"}

    return await runs.pipeline(items, first, second, third)
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["workflow", "run", *argv, "--detach"]) == 0
    return capsys.readouterr().out.strip()


def test_a_three_stage_pipeline_over_20_items_with_mixed_runners(
    mock_llm: MockLLM, pi_bin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11 item 9: 20 items through command -> native -> command (pi for one item),
    no barrier between stages; every child is an ordinary job whose record names the
    workflow as parent, with a thread record under job-<workflow>."""
    os.environ["PATH"] = f"{pi_bin.parent}{os.pathsep}{os.environ['PATH']}"
    mock_llm.set_default(lambda req: Reply(f"native saw {req.last_user_text()[-30:]}"))
    project = workflow_project({"pipe.py": PIPELINE})
    wf = _run(capsys, "pipe", "--arg", "n=20", "--arg", "pi_item=i07", "--concurrency", "6")
    status = wait_ended(project, wf, timeout=600)
    assert status.status == "done", status.error
    out = result(project, wf)
    assert [r["key"] for r in out] == [f"last-i{n:02d}" for n in range(20)]
    assert all(r["status"] == "done" for r in out)
    assert "native saw" in out[3]["output"] and "item i03" in out[3]["output"]
    s = store(project)
    runners = {}
    for key, state in keys(project, wf).items():
        record = s.read_record(state.job)
        assert record.parent_id == wf and record.owner == [f"job-{wf}"]
        assert record.thread["workflow_key"] == key
        runners[key] = record.runner
    assert len(runners) == 60
    assert runners["nat-i05"] == "native" and runners["last-i07"] == "pi"
    assert runners["echo-i00"] == "command" and runners["last-i08"] == "command"
    threads = [t for t in ThreadStore(project / ".specialists").all()[0] if t.parent == f"job-{wf}"]
    assert len(threads) == 60
    lines = journal(project, wf)
    launches = [e["key"] for e in lines if e.get("e") == "launch"]
    # No barrier: item 0's second stage launched before the last item's first stage.
    assert launches.index("nat-i00") < launches.index("echo-i19")
    assert receipt(project, wf)["status"] == "done"


SCHEMA_FLOW = """
SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}

async def main(runs, args):
    r = await runs.run("count", agent="nat", task="How many files?", schema=SCHEMA)
    return {"data": r.data, "jobs": list(r.jobs)}
"""


def test_a_child_that_answers_badly_once_is_asked_again_and_then_passes(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Schema enforcement: the first answer is not valid, so the child is continued in its
    own session with the validation error; the second answer satisfies the schema."""
    mock_llm.enqueue('{"count": "three"}', '{"count": 3}')
    project = workflow_project({"schema.py": SCHEMA_FLOW})
    wf = _run(capsys, "schema")
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    out = result(project, wf)
    assert out["data"] == {"count": 3} and len(out["jobs"]) == 2
    second = store(project).read_record(out["jobs"][1])
    assert second.resume_session  # a continuation of the first child's session
    retry_text = mock_llm.model_requests[1].last_user_text()
    assert "'three' is not of type 'integer'" in retry_text
    assert "How many files?" in json.dumps(mock_llm.model_requests[1].messages())


BLOCKING = """
async def main(runs, args):
    await runs.all([
        {"key": "a0", "agent": "echo", "task": "zero"},
        {"key": "a1", "agent": "echo", "task": "one"},
        {"key": "a2", "agent": "wait", "task": "two"},
    ])
    await runs.all([{"key": f"b{n}", "agent": "echo", "task": f"b {n}"} for n in range(2)])
    return "finished"
"""


def test_kill_9_of_the_workflow_then_resume_runs_only_unfinished_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workflow's supervisor and engine die by SIGKILL while a2 runs and b0/b1 never
    launched. The children are jobs of their own and live on. Resume takes a0 and a1 from
    the journal (not relaunched), adopts a2's job (waits for it, not relaunched) and
    launches only b0 and b1."""
    flag = tmp_path / "go"
    wait = f"cat >/dev/null; while [ ! -e {flag} ]; do sleep 0.05; done; echo waited"
    project = workflow_project({"block.py": BLOCKING}, wait=wait)
    wf = _run(capsys, "block", "--concurrency", "3")
    wait_until(
        lambda: (
            {"a0", "a1"} <= {e["key"] for e in journal(project, wf) if e["e"] == "end"}
            and agent_started(project, wf, "a2")
        ),
        timeout=120,
        what="a0, a1 done, a2 running",
    )
    st = store(project).read_status(wf)
    assert st is not None and st.pid and st.supervisor_pid
    a2_job = keys(project, wf)["a2"].job
    os.kill(st.supervisor_pid, signal.SIGKILL)
    os.kill(st.pid, signal.SIGKILL)
    dead = wait_ended(project, wf)
    assert dead.status == "error"
    assert main(["workflow", "resume", wf, "--detach"]) == 0
    again = capsys.readouterr().out.strip()
    # A second resume of the same run while the first is going launches nothing.
    assert main(["workflow", "resume", wf, "--detach"]) == 2
    assert f"being resumed by job {again}" in capsys.readouterr().err
    wait_until(lambda: any(e.get("e") == "start" for e in journal(project, again)), what="resumed")
    flag.write_text("")
    status = wait_ended(project, again)
    assert status.status == "done", status.error
    assert main(["workflow", "resume", wf, "--detach"]) == 2  # the newest run is the one to resume
    err = capsys.readouterr().err
    assert f"resumed already, as job {again}" in err and f"workflow resume {again}" in err
    assert launched_keys(project, again) == ["b0", "b1"]
    assert keys(project, again)["a2"].job == a2_job  # adopted, not relaunched
    children = receipt(project, again)["children"]
    assert set(children) == {"a0", "a1", "a2", "b0", "b1"}
    assert children["a2"]["latest_job"] == a2_job and children["a2"]["status"] == "done"


ORACLE = """
async def main(runs, args):
    return await runs.run("oracle", agent="nat", task="Remember the word: heron.")
"""
FOLLOW = """
async def main(runs, args):
    return await runs.run("again", task="Which word?",
                          resume={"workflow": args["from"], "key": "oracle", "latest": True})
"""


def test_keyed_resume_continues_the_child_named_by_another_workflows_receipt(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second workflow reads the first one's receipt, revalidates the oracle child at
    launch and continues its session; a second keyed resume from the same receipt is stale."""
    mock_llm.enqueue("Noted.", "heron")
    project = workflow_project({"oracle.py": ORACLE, "follow.py": FOLLOW})
    first = _run(capsys, "oracle")
    assert wait_ended(project, first).status == "done"
    entry = receipt(project, first)["children"]["oracle"]
    assert entry["resumable"] is True and entry["agent"] == "nat"
    second = _run(capsys, "follow", "--arg", f"from={first}")
    assert wait_ended(project, second).status == "done"
    assert result(project, second)["output"] == "heron"
    assert "Remember the word: heron." in json.dumps(mock_llm.model_requests[1].messages())
    lineage = receipt(project, second)["children"]["again"]["lineage"]
    assert lineage[0] == {"continues": entry["latest_job"]}
    third = _run(capsys, "follow", "--arg", f"from={first}")
    status = wait_ended(project, third)
    assert status.status == "error" and "is stale" in (status.error or "")


def test_keyed_resume_of_a_child_without_a_session_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = workflow_project(
        {
            "one.py": "async def main(runs, args):\n"
            '    return await runs.run("oracle", agent="echo", task="x")\n',
            "follow.py": FOLLOW,
        }
    )
    first = _run(capsys, "one")
    assert wait_ended(project, first).status == "done"
    second = _run(capsys, "follow", "--arg", f"from={first}")
    status = wait_ended(project, second)
    assert status.status == "error"
    assert "is not resumable: its runner (command) keeps no session" in (status.error or "")


def test_stopping_a_workflow_stops_its_children_and_it_cannot_be_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = tmp_path / "never"
    wait = f"cat >/dev/null; while [ ! -e {flag} ]; do sleep 0.05; done"
    project = workflow_project({"block.py": BLOCKING}, wait=wait)
    wf = _run(capsys, "block", "--concurrency", "3")
    wait_until(lambda: agent_started(project, wf, "a2"), timeout=120, what="a2 runs")
    a2 = keys(project, wf)["a2"].job
    assert main(["stop", wf]) == 0
    assert wait_ended(project, wf).status == "cancelled"
    assert wait_ended(project, a2).status == "cancelled"
    assert receipt(project, wf)["status"] == "cancelled"
    capsys.readouterr()
    assert main(["workflow", "resume", wf]) == 2
    assert "a stopped run is final" in capsys.readouterr().err


def test_an_unknown_agent_fails_the_workflow_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = workflow_project(
        {
            "bad.py": "async def main(runs, args):\n"
            '    await runs.run("k", agent="nobody", task="x")\n'
        }
    )
    assert main(["workflow", "run", "bad"]) == 1
    err = capsys.readouterr().err
    assert "unknown specialist" in err.lower() or "nobody" in err
    assert "Traceback" not in err
    assert project.exists()


def test_a_schedule_starts_a_workflow_owned_by_the_schedule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The schedules' typed workflow target is wired: `schedule run` starts the workflow as
    a job owned by the schedule, and it runs its children to the end."""
    project = workflow_project(
        {"nightly.yaml": "steps:\n  - run: {key: one, agent: echo, task: nightly run}\n"}
    )
    assert main(["schedule", "create", "nightly", "--every", "1d", "--workflow", "nightly"]) == 0
    assert main(["schedule", "run", "nightly"]) == 0
    capsys.readouterr()
    (wf,) = [
        j for j in store(project).list_ids() if store(project).read_record(j).runner == "workflow"
    ]
    assert store(project).read_record(wf).owner == ["schedule-nightly"]
    assert wait_ended(project, wf).status == "done"
    assert result(project, wf)["one"]["output"] == "nightly run"
    assert main(["schedule", "create", "bad", "--every", "1d", "--workflow", "missing"]) == 2
    assert "unknown workflow 'missing'" in capsys.readouterr().err


def test_a_native_child_with_a_schema_must_answer_through_the_final_answer_tool(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """The native runtime forces a structured-output tool: every request of the child says a
    tool call is required and offers final_answer with the schema; an invalid call is an
    error result the model fixes in the same run, a valid one ends it. One job, no retry."""
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("final_answer", {"count": "three"})]),
        Reply(tool_calls=[ToolCall("final_answer", {"count": 3})]),
    )
    project = workflow_project({"schema.py": SCHEMA_FLOW})
    wf = _run(capsys, "schema")
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    out = result(project, wf)
    assert out["data"] == {"count": 3} and len(out["jobs"]) == 1
    first, second = mock_llm.model_requests[:2]
    assert first.json["tool_choice"] == "required" and "final_answer" in first.tool_names()
    assert "'three' is not of type 'integer'" in " ".join(second.tool_results())
    assert len(mock_llm.model_requests) == 2


def test_a_fork_without_a_conversation_to_copy_is_refused_before_launch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """context: fork is honest or refused: a workflow started from the CLI has no agent
    conversation to copy, so the child is refused with the advice, and no child job exists."""
    doc = "steps:\n  - run: {key: k, agent: nat, task: go on, context: fork}\n"
    project = workflow_project({"fork.yaml": doc})
    assert main(["workflow", "run", "fork"]) == 1
    err = capsys.readouterr().err
    assert "context: fork needs a workflow started by an agent job" in err
    assert [
        j for j in store(project).list_ids() if store(project).read_record(j).runner != "workflow"
    ] == []


ON_A_MISSION = """
async def main(runs, args):
    first = await runs.run("plan", agent="echo", task="plan it")
    runs.mission.set("nextReadyAction", "build after " + first.key)
    await runs.run("build", agent="wait", task="build it")
    return runs.mission.get("nextReadyAction")
"""


@pytest.mark.timeout(420)  # three CLI processes and two workflow runs: slow on a loaded machine
def test_a_mission_recovers_its_workflow_after_a_compaction_and_resumes_it_by_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12 item 6: a workflow runs on a mission and writes the mission's shared state;
    its process dies by SIGKILL mid-run. A new process that knows nothing but the files finds
    the mission (`mission list`), its workflow run and state (`mission show`), and resumes the
    workflow: the finished key is not run again, the running child is adopted, the resumed
    run joins the same mission and reads the state the first run wrote."""
    flag = tmp_path / "go"
    wait = f"cat >/dev/null; while [ ! -e {flag} ]; do sleep 0.05; done; echo built"
    project = workflow_project({"onm.py": ON_A_MISSION}, wait=wait)
    assert main(["mission", "new", "Ship the build", "--id", "ms-build01"]) == 0
    capsys.readouterr()
    wf = _run(capsys, "onm", "--mission", "ms-build01")
    wait_until(lambda: agent_started(project, wf, "build"), timeout=120, what="build runs")
    st = store(project).read_status(wf)
    assert st is not None and st.pid and st.supervisor_pid
    os.kill(st.supervisor_pid, signal.SIGKILL)
    os.kill(st.pid, signal.SIGKILL)
    assert wait_ended(project, wf).status == "error"

    def cli(*argv: str) -> Any:  # a new process: the orchestrator's context is gone
        out = subprocess.run(
            [sys.executable, "-m", "specialists", *argv, "--json"],
            cwd=project, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    [mission] = cli("mission", "list")["missions"]
    assert mission["id"] == "ms-build01"
    shown = cli("mission", "show", "ms-build01")
    assert [r["job_id"] for r in shown["runs"]] == [wf]
    assert shown["state"] == {"nextReadyAction": "build after plan"}
    resumed = cli("workflow", "resume", wf, "--detach")["id"]
    flag.write_text("")
    status = wait_ended(project, resumed)
    assert status.status == "done", status.error
    assert launched_keys(project, resumed) == []  # plan from the journal, build adopted
    assert result(project, resumed) == "build after plan"
    # The adopted child's agent is named (issue 21 item 11: it was printed as `None`).
    shown_wf = cli("workflow", "show", resumed)
    (build,) = [c for c in shown_wf["children"] if c["key"] == "build"]
    assert build["agent"] == "wait" and build["journal"] == "done"
    text = subprocess.run(
        [sys.executable, "-m", "specialists", "workflow", "show", resumed],
        cwd=project, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert "None" not in text and " wait [" in text
    runs = cli("mission", "show", "ms-build01")["runs"]
    assert [r["job_id"] for r in runs] == [wf, resumed]


def test_a_workflow_launch_gets_its_own_mission_and_its_script_the_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 22 item 2: one mission per workflow launch (the seed's default), linked to the
    workflow job and named in its record, so the script's runs.mission works; --no-mission
    makes none."""
    project = workflow_project({"onm.py": ON_A_MISSION}, wait="cat >/dev/null; echo built")
    wf = _run(capsys, "onm")
    status = wait_ended(project, wf)
    assert status.status == "done", status.error
    assert main(["mission", "list", "--json"]) == 0
    [mission] = json.loads(capsys.readouterr().out)["missions"]
    assert mission["title"] == "workflow onm" and mission["runs"] == 1
    assert main(["mission", "show", mission["id"], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["job_id"] for r in shown["runs"]] == [wf]
    assert shown["state"] == {"nextReadyAction": "build after plan"}
    bare = _run(capsys, "onm", "--no-mission")
    assert wait_ended(project, bare).status == "error"  # its script needs runs.mission
    assert main(["mission", "list", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["missions"]) == 1


def test_a_workflow_on_a_missing_mission_starts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    project = workflow_project({"onm.py": ON_A_MISSION})
    assert main(["workflow", "run", "onm", "--mission", "ms-nothere", "--detach"]) == 2
    assert "ms-nothere" in capsys.readouterr().err
    assert store(project).list_ids() == []


def test_feed_tree_is_the_workflows_transcript_with_its_childrens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11 item 5 (transcript view): `feed WF --tree --follow`, started while the
    first children run, takes in the children launched later (b0, b1 come after a2 is
    released) and ends by itself once the workflow and every child ended; each job's final
    event is there once."""
    flag = tmp_path / "go"
    wait = f"cat >/dev/null; while [ ! -e {flag} ]; do sleep 0.05; done; echo waited"
    project = workflow_project({"block.py": BLOCKING}, wait=wait)
    wf = _run(capsys, "block", "--concurrency", "3")
    wait_until(lambda: "a2" in launched_keys(project, wf), timeout=120, what="a2 launched")
    follow = subprocess.Popen(
        [sys.executable, "-m", "specialists", "feed", wf, "--tree", "--follow", "--json"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    flag.touch()
    out, err = follow.communicate(timeout=300)
    assert follow.returncode == 0, err
    assert wait_ended(project, wf).status == "done"
    events = [json.loads(line) for line in out.splitlines()]
    children = {state.job for state in keys(project, wf).values()}
    assert len(children) == 5
    ended = [e for e in events if e["event"] in ("done", "error", "cancelled")]
    finals = {e["job"]: e["ts"] for e in ended}
    assert sorted(finals) == sorted([wf, *children]) and len(ended) == 6  # once each
    assert max(finals, key=lambda job: finals[job]) == wf  # it ends after its last child
    capsys.readouterr()
    assert main(["feed", "--job", wf, "--tree", "--json"]) == 0
    again = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {e["job"] for e in again} == {wf, *children}
    assert main(["feed", "--tree"]) == 2
    assert "--tree needs a job" in capsys.readouterr().err


FOUR_WAITING = """
async def main(runs, args):
    runs.phase("fan out")
    await runs.all([{"key": f"w{n}", "agent": "wait", "task": f"part {n}"} for n in range(4)])
    runs.phase("sum up")
    return await runs.run("sum", agent="echo", task="sum")
"""


def test_by_default_children_overlap_on_a_small_machine_and_every_view_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 item 2: on 2 cores the old default (cores - 2, at least 1) ran children one
    at a time and said nothing. Now the default (8, fewer when memory is short) lets 4
    waiting children run at once; the start says the concurrency, the workflow's status
    carries done / running / queued of total, the phase and the concurrency, its children's
    spending rolls up, and the journal holds the stages the web draws."""
    from specialists.features.workflows.graph import fold_graph
    from specialists.features.workflows.options import default_concurrency

    flag = tmp_path / "go"
    wait = f"cat >/dev/null; while [ ! -e {flag} ]; do sleep 0.05; done; echo waited"
    project = workflow_project({"four.py": FOUR_WAITING}, wait=wait)
    assert main(["workflow", "run", "four", "--detach"]) == 0
    out, err = capsys.readouterr()
    wf = out.strip()
    expected = default_concurrency()
    assert expected >= 4, "this test needs 2 GiB of available memory"
    assert f"up to {expected} children at once (the default" in err
    s = store(project)

    def progress() -> dict[str, Any]:
        st = s.read_status(wf)
        return dict(st.progress) if st is not None else {}

    wait_until(lambda: progress().get("running") == 4, timeout=240, what="4 children at once")
    now = progress()
    assert (now["total"], now["done"], now["queued"]) == (4, 0, 0)
    assert now["phase"] == "fan out" and now["concurrency"] == expected
    assert main(["status", wf]) == 0
    shown = capsys.readouterr().out
    assert f"0/4 done · 4 running · phase fan out · up to {expected} at once" in shown
    flag.touch()
    assert wait_ended(project, wf).status == "done"
    final = progress()
    assert (final["total"], final["done"], final["running"]) == (5, 5, 0)
    assert final["children"]["jobs"] == 5
    nodes = fold_graph(journal(project, wf))
    assert [(n.label, n.kind, n.count, n.done) for n in nodes] == [
        ("w", "all", 4, 4),
        ("sum", "run", 1, 1),
    ]
    assert nodes[1].after == [nodes[0].id] and nodes[0].phase == "fan out"
    events = [json.loads(line) for line in (s.job_dir(wf) / "events.jsonl").open()]
    assert any(
        e.get("message") == f"workflow started: up to {expected} children at once" for e in events
    )
