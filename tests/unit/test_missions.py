"""Missions on the store: every bad input of issue 12 item 8 is one clear line and writes
nothing; a hostile store (bad JSON, a planted symlink, a FIFO, a full disk) costs at most
that one mission; `show` refreshes linked runs and warns rather than hiding; `state` merges
under the lock; terminal missions are pruned past their retention (issue 12 items 1, 8)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import ConfigError, NotFound, StoreError, UserError
from specialists.features.missions import index, model, ops
from specialists.features.missions.launch import (
    Launched,
    MissionChoice,
    check_before_launch,
    choose,
    link_after_launch,
)
from specialists.features.missions.state import MAX_STATE, state_get, state_set
from specialists.features.missions.store import MissionStore
from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import echo_project, new_job

DAY = 86_400_000


def project_state() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"


def store_at(tmp_path: Path) -> MissionStore:
    return MissionStore(tmp_path / ".specialists", index_dir=tmp_path / "index")


def job_with(store: JobStore, cwd: Path, **fields: object) -> str:
    record, lock = new_job(store, cwd)
    writer = JobWriter(store, record.id)
    writer.write_status(JobStatus(id=record.id, specialist="echo", **fields))  # type: ignore[arg-type]
    writer.close()
    lock.release()
    return record.id


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["mission", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def mission_action(state_root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """The agent tool `mission`, as a model calls it."""
    from specialists.base.ops import call_json, pick
    from specialists.features.missions.verbs import MISSION
    from specialists.native.agent_tools import Caller

    op, values = pick(MISSION, args)
    result: dict[str, Any] = call_json(op, Caller(state_root, "job-test", state_root), values)
    return result


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- bad input (item 8) ---------------------------------------------------------------------


def test_a_state_write_over_256_kib_is_refused_and_nothing_is_written(capsys):
    cli(capsys, "new", "big", "--id", "m1")
    assert cli(capsys, "state", "set", "m1", "small", '"ok"')[0] == 0
    before = (project_state() / "missions" / "m1" / "state.json").read_bytes()
    code, _, err = cli(capsys, "state", "set", "m1", "blob", json.dumps("x" * MAX_STATE))
    assert code == 2
    assert "over the 256 KiB" in one_error(err) and "nothing was written" in err
    assert (project_state() / "missions" / "m1" / "state.json").read_bytes() == before
    assert state_get(project_state(), "m1") == {"small": "ok"}


def test_a_state_value_piped_without_end_is_read_no_further_than_a_state_holds(capsys, monkeypatch):
    """`yes | specialists mission state set m1 k - --text`: refused in one line once past
    what the state may hold, never read to an end it does not have."""
    asked: list[int] = []

    class Endless:
        def read(self, size: int = -1) -> str:
            assert size > 0, "stdin read to its end: it has none"
            asked.append(size)
            return "y" * size

    cli(capsys, "new", "big", "--id", "m1")
    monkeypatch.setattr("sys.stdin", Endless())
    code, _, err = cli(capsys, "state", "set", "m1", "k", "-", "--text")
    assert code == 2 and "over the 256 KiB" in one_error(err)
    assert asked == [MAX_STATE + 1]


@pytest.mark.parametrize(
    "url",
    ["github.com/org/repo/pull/1", "/pull/1", "ftp://host/x", "https://", "https://a b/c", ""],
)
def test_a_receipt_without_an_absolute_url_is_refused(capsys, url):
    cli(capsys, "new", "ship", "--id", "m1")
    code, _, err = cli(capsys, "receipt", "m1", "pull_request", url, "--status", "open")
    assert code == 2
    line = one_error(err)
    assert "absolute URL" in line or "non-empty" in line
    shown = mission_action(project_state(), {"action": "show", "mission_id": "m1"})
    assert shown["receipts"] == []


def test_an_unknown_receipt_kind_is_refused(capsys):
    cli(capsys, "new", "ship", "--id", "m1")
    code, _, err = cli(capsys, "receipt", "m1", "merge", "https://x.org/1", "--status", "ok")
    assert code == 2 and "unknown receipt kind" in one_error(err)


def test_resolving_a_decision_twice_is_one_clear_error_and_keeps_the_first(capsys):
    cli(capsys, "new", "ship", "--id", "m1")
    assert "decision d1" in cli(capsys, "decide", "m1", "v1 or v2?")[1]
    assert cli(capsys, "resolve", "m1", "d1", "--summary", "v2")[0] == 0
    code, _, err = cli(capsys, "resolve", "m1", "d1", "--summary", "v3")
    assert code == 2
    assert "d1 of mission m1 is resolved already" in one_error(err) and "v2" in err
    code, _, err = cli(capsys, "resolve", "m1", "d9", "--summary", "x")
    assert code == 2 and "no decision 'd9'" in one_error(err)
    data = json.loads(cli(capsys, "show", "m1", "--json")[1])
    assert [(d["status"], d["summary"]) for d in data["decisions"]] == [("resolved", "v2")]


def test_attaching_a_run_to_a_missing_mission_fails_before_launch(capsys):
    echo_project()
    code = main(["run", "echo", "--prompt", "hi", "--mission", "nope", "--background"])
    err = capsys.readouterr().err
    assert code == 2 and "no mission 'nope'" in one_error(err)
    assert not (project_state() / "jobs").exists() or os.listdir(project_state() / "jobs") == []
    code, _, err = cli(capsys, "link", "nope", "0123abcd")
    assert code == 2 and "no mission 'nope'" in one_error(err)


def test_attaching_to_a_closed_mission_is_refused_too(tmp_path):
    store = store_at(tmp_path)
    ops.create(store, title="t", mission_id="m1")
    mission_action(
        store.root.parent,
        {"action": "close", "mission_id": "m1", "status": "completed", "summary": "done"},
    )
    with pytest.raises(UserError, match="m1 is completed; no run can join"):
        check_before_launch(store.root.parent, choose(mission_id="m1"))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["new", "g", "--goal"], "a goal needs a token budget"),
        (["new", "g", "--goal", "--budget-tokens", "0"], "a goal needs a token budget"),
        (["new", "x", "--id", "../evil"], "invalid mission id"),
        (["new", "x", "--label", "bad label"], "invalid label"),
        (["new", "  "], "a mission title must be non-empty"),
        (["show", "nope"], "no mission 'nope'"),
        (["state", "set", "nope", "k", "1"], "no mission 'nope'"),
        (["state", "get", "nope"], "no mission 'nope'"),
    ],
)
def test_other_bad_input_is_one_line_exit_2_and_nothing_written(capsys, argv, says):
    code, _, err = cli(capsys, *argv)
    assert code == 2 and says in one_error(err)
    missions = project_state() / "missions"
    assert not missions.exists() or [n for n in os.listdir(missions) if not n.startswith(".")] == []


def test_bad_state_keys_values_and_closed_missions(capsys, tmp_path):
    cli(capsys, "new", "t", "--id", "m1")
    code, _, err = cli(capsys, "state", "set", "m1", "k", "not json")
    assert code == 2 and "is not JSON" in one_error(err)
    code, _, err = cli(capsys, "state", "set", "m1", "../k", "1")
    assert code == 2 and "invalid state key" in one_error(err)
    with pytest.raises(UserError, match="not JSON"):
        state_set(project_state(), "m1", "k", float("nan"))
    cli(capsys, "close", "m1", "--status", "failed", "--summary", "gave up")
    code, _, err = cli(capsys, "state", "set", "m1", "k", "1")
    assert code == 2 and "its state is final" in one_error(err)
    code, _, err = cli(capsys, "close", "m1", "--status", "completed", "--summary", "again")
    assert code == 2 and "cannot close it again" in one_error(err)


# --- state under a lock ---------------------------------------------------------------------


def test_concurrent_state_sets_from_threads_all_land(tmp_path):
    """Sixteen writers of different keys at once: every key is there (merged, not lost)."""
    store = store_at(tmp_path)
    ops.create(store, title="t", mission_id="m1")
    barrier = threading.Barrier(16)

    def setter(n: int) -> None:
        barrier.wait()
        for i in range(5):
            state_set(store.root.parent, "m1", f"k{n}", i, store=store)

    threads = [threading.Thread(target=setter, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state_get(store.root.parent, "m1", store=store) == {f"k{n}": 4 for n in range(16)}


# --- show: live statuses and warnings -------------------------------------------------------


def test_show_refreshes_linked_runs_and_warns_for_a_gone_or_unreadable_one(tmp_path):
    jobs = JobStore(tmp_path / ".specialists", news=None)
    store = store_at(tmp_path)
    done = job_with(jobs, tmp_path, status="done", tokens={"input": 10, "output": 5})
    broken = job_with(jobs, tmp_path, status="running")
    (jobs.job_dir(broken) / "status.json").unlink()
    os.mkfifo(jobs.job_dir(broken) / "status.json")
    ops.create(store, title="t", mission_id="m1")
    for job_id in (done, broken, "deadbeef"):
        os.makedirs(jobs.job_dir("deadbeef"), exist_ok=True)
        store.update("m1", lambda m, j=job_id: (model.link_run(m, j, "echo", 1), None))
    os.rmdir(jobs.job_dir("deadbeef"))
    shown = ops.show(store, jobs, "m1")  # never blocks on the FIFO
    views = {v.job_id: v for v in shown.runs}
    assert views[done].status == "done" and views[done].tokens == 15 and views[done].live
    assert not views[broken].live and not views["deadbeef"].live
    assert any(broken in w and "FIFO" in w for w in shown.warnings), shown.warnings
    assert any("deadbeef is gone" in w for w in shown.warnings), shown.warnings
    assert {r.job_id: r.status for r in store.load("m1").runs}[done] == "done"  # saved back


def test_show_adds_up_what_the_linked_jobs_spent_each_job_once(tmp_path):
    """A workflow reports its children's spending; a child linked too is not counted twice;
    a finished run's spending is kept in mission.json, so it is not read again."""
    jobs = JobStore(tmp_path / ".specialists", news=None)
    store = store_at(tmp_path)
    children = {
        "tokens": {"input": 100, "output": 20, "cache_read": 0, "cache_write": 0},
        "cost_usd": 0.5,
        "jobs": 2,
    }
    wf = job_with(jobs, tmp_path, status="done", progress={"total": 2, "children": children})
    child = job_with(jobs, tmp_path, status="done", parent_id=wf, tokens={"input": 60, "output": 9})
    plain = job_with(jobs, tmp_path, status="done", tokens={"input": 7, "output": 3}, cost_usd=0.25)
    ops.create(store, title="t", mission_id="m1")
    for job_id in (wf, child, plain):
        store.update("m1", lambda m, j=job_id: (model.link_run(m, j, "echo", 1), None))
    spent = ops.show(store, jobs, "m1").spent()
    assert spent["jobs"] == 4 and spent["cost_usd"] == 0.75  # workflow + 2 children + plain
    assert spent["tokens"]["input"] == 107 and spent["tokens"]["output"] == 23
    saved = {r.job_id: r for r in store.load("m1").runs}
    assert saved[wf].spent is not None and saved[child].parent == wf
    (jobs.job_dir(plain) / "status.json").write_text("{damaged")  # never read again
    again = ops.show(store, jobs, "m1")
    assert again.spent() == spent and not again.warnings
    data = mission_action(tmp_path / ".specialists", {"action": "show", "mission_id": "m1"})
    assert data["spent"] == spent


# --- a hostile store ------------------------------------------------------------------------


def test_a_damaged_symlinked_or_fifo_mission_costs_one_warning(capsys):
    for n in range(3):
        cli(capsys, "new", f"m{n}", "--id", f"m{n}")
    root = project_state() / "missions"
    (root / "m0" / "mission.json").write_text("{not json")
    (root / "m1" / "mission.json").unlink()
    os.mkfifo(root / "m1" / "mission.json")
    elsewhere = project_state().parent / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / "linked")
    code, out, err = cli(capsys, "list")
    assert code == 0 and "m2" in out
    warnings = err.strip().splitlines()
    assert len(warnings) == 3, err
    assert any("m0" in w and "not valid JSON" in w for w in warnings)
    assert any("m1" in w and "FIFO" in w for w in warnings)
    assert any("linked" in w and "symbolic link" in w for w in warnings)
    code, _, err = cli(capsys, "state", "set", "linked", "k", "1")
    assert code != 0 and "symbolic link" in one_error(err)
    assert os.listdir(elsewhere) == []  # nothing was written through the link


def test_a_fifo_state_file_is_a_warning_in_show_and_an_error_for_set(tmp_path):
    store = store_at(tmp_path)
    ops.create(store, title="t", mission_id="m1")
    os.mkfifo(store.dir("m1") / "state.json")
    shown = ops.show(store, JobStore(store.root.parent, news=None), "m1")
    assert shown.state is None and any("FIFO" in w for w in shown.warnings)
    with pytest.raises(StoreError, match="state is unreadable"):
        state_set(store.root.parent, "m1", "k", 1, store=store)


# --- launching ------------------------------------------------------------------------------


def test_choose_refuses_both_and_reads_options():
    with pytest.raises(UserError, match="exclude each other"):
        choose(mission_id="m1", disabled=True)
    assert choose(disabled=True).kind == "none"
    # The seed's default: a plain run makes none, a workflow launch one, a continued job follows.
    assert choose().kind == "none"
    assert choose(default="auto").kind == "auto" and choose(options=True).kind == "auto"
    assert choose(default="follow").kind == "follow"


def test_a_launch_asking_for_a_mission_creates_one_a_continued_job_joins_it(tmp_path):
    root = tmp_path / ".specialists"
    index_dir = tmp_path / "index"
    warnings: list[str] = []
    first = Launched("0123abcd", "echo", "Fix the login bug\nmore detail", ("claude-x",))
    store = MissionStore(root, index_dir=index_dir)
    os.environ["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    assert link_after_launch(root, choose(), first, warnings) is None  # a plain run: none
    mid = link_after_launch(root, choose(options=True), first, warnings)
    assert mid and not warnings
    mission = store.load(mid)
    assert mission.title == "echo: Fix the login bug" and mission.owner == ["claude-x"]
    follow = Launched("4567abcd", "echo", "again", ("claude-x",), continue_from="0123abcd")
    assert link_after_launch(root, choose(default="follow"), follow, warnings) == mid
    assert [r.job_id for r in store.load(mid).runs] == ["0123abcd", "4567abcd"]
    assert link_after_launch(root, choose(disabled=True), first, warnings) is None
    resumed = Launched("89abcdef", "echo", "go on", (), continue_from="4567abcd")
    assert link_after_launch(root, MissionChoice("follow"), resumed, warnings) == mid
    alone = Launched("00000001", "echo", "go on", (), continue_from="0badf00d")
    assert link_after_launch(root, MissionChoice("follow"), alone, warnings) is None


# --- the index and retention ----------------------------------------------------------------


def test_the_user_index_lists_missions_across_projects(tmp_path):
    index_dir = tmp_path / "index"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = MissionStore(tmp_path / "a" / ".specialists", index_dir=index_dir)
    b = MissionStore(tmp_path / "b" / ".specialists", index_dir=index_dir)
    ops.create(a, title="in a", mission_id="m1")
    ops.create(b, title="in b", mission_id="m1")
    (index_dir / "junk.json").write_text("[1]")
    pointers, problems = index.pointers(index_dir)
    assert sorted((p.title, p.present) for p in pointers) == [("in a", True), ("in b", True)]
    assert len(problems) == 1 and "junk.json" in problems[0]
    ops.prune(a, days=0.0, at_ms=ops.now_ms())  # open: never pruned
    assert a.load("m1").status == "active"


def test_terminal_missions_are_pruned_past_retention_and_open_ones_never(tmp_path, monkeypatch):
    store = store_at(tmp_path)
    now = ops.now_ms()
    for mid in ("old", "recent", "open"):
        ops.create(store, title=mid, mission_id=mid, at_ms=now - 90 * DAY)
    for mid, closed in (("old", now - 40 * DAY), ("recent", now - 5 * DAY)):
        store.update(mid, lambda m, c=closed: (model.close(m, "completed", "done", c), None))
    (store.root / "broken").mkdir()
    report = ops.prune(store, at_ms=now)
    assert report.removed == ["old"]
    assert any("broken" in w for w in report.warnings)
    assert sorted(store.ids()) == ["broken", "open", "recent"]
    assert [p.id for p in index.pointers(tmp_path / "index")[0] if p.id == "old"] == []
    monkeypatch.setenv("SPECIALISTS_MISSION_TTL_DAYS", "soon")
    with pytest.raises(ConfigError, match="SPECIALISTS_MISSION_TTL_DAYS='soon' is not a number"):
        ops.prune(store, at_ms=now + 100 * DAY)
    with pytest.raises(NotFound):
        store.load("old")


# --- the pi front ---------------------------------------------------------------------------


def test_the_pi_sidecar_serves_the_mission_tool_for_its_session():
    """pi reaches missions through the tool table: a mission made there is owned by the pi
    session (its goal notices go to that session), and a refusal is an error result."""
    from specialists.fronts.pi.ops import Front
    from tests.support.sidecar import InProcess

    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    side = InProcess(Front(project / ".specialists", "pi-session-9", project))
    try:
        assert "mission" in [t["name"] for t in side.peer.result("tools")["tools"]]
        args = {"action": "new", "title": "From pi", "goal": True, "budget_tokens": 9}
        made = side.peer.result("call", tool="mission", args=args, call_id="c1")
        assert not made["is_error"], made
        mission = MissionStore(project / ".specialists").load(made["data"]["id"])
        assert mission.owner == ["pi-session-9"] and mission.goal is not None
        twice = {"action": "resolve", "mission_id": mission.id, "decision_id": "d1", "summary": "x"}
        bad = side.peer.result("call", tool="mission", args=twice, call_id="c2")
        assert bad["is_error"] and "no decision 'd1'" in bad["text"]
        many = tuple(model.Run(f"{n:08x}", 1, "w", "done") for n in range(60))
        store = MissionStore(project / ".specialists")
        store.update(mission.id, lambda m: (m.replace(runs=many), None))
        for n in range(60):
            (project / ".specialists" / "jobs" / f"{n:08x}").mkdir(parents=True)
        shown = side.peer.result(
            "call", tool="mission", args={"action": "show", "mission_id": mission.id}, call_id="c3"
        )
        text = json.loads(shown["text"])
        assert len(text["runs"]) == 50 and text["runs_not_shown"] == 10
        assert "seen" not in text["goal"] and len(shown["data"]["runs"]) == 60
    finally:
        side.close()


def test_a_goal_mission_without_an_owner_says_its_notices_reach_nobody(capsys, monkeypatch):
    monkeypatch.setenv("SPECIALISTS_OWNER", "none")
    code, _, err = cli(capsys, "new", "g", "--goal", "--budget-tokens", "10")
    assert code == 0 and "no owner" in err


def test_a_job_pointer_written_by_0_1_0_is_still_read_and_removed_with_its_mission(tmp_path):
    """0.1.0 kept `.by-job/<job>` holding the mission id as text; now `.by-job/<job>.json`."""
    store = store_at(tmp_path)
    ops.create(store, title="t", mission_id="m1")
    links = store.root / ".by-job"
    links.mkdir(exist_ok=True)
    (links / "0123abcd").write_text("m1\n")
    assert store.mission_of_job("0123abcd") == "m1"
    (links / "0123abcd").write_text("../etc\n")
    with pytest.raises(StoreError, match="does not name a mission"):
        store.mission_of_job("0123abcd")
    (links / "0123abcd").write_text("m1\n")
    store.update("m1", lambda m: (m, None))  # a change keeps the old pointer readable
    assert store.mission_of_job("0123abcd") == "m1"


def test_keys_a_newer_version_wrote_survive_every_change_and_come_last() -> None:
    """mission.json keeps what it does not know (a newer writer's fields), in every copy
    the verbs make, and writes schema, id and status first for the SessionStart hook."""
    raw = {
        "schema": 1,
        "id": "m1",
        "status": "active",
        "title": "t",
        "created_ms": 1,
        "updated_ms": 1,
        "project_root": "/p",
        "future": {"a": [1]},
    }
    mission = model.Mission.from_dict(raw)
    changed = model.link_run(mission, "0123abcd", "x", 5)
    changed, _ = model.add_decision(changed, "tabs?", 6)
    out = changed.to_dict()
    assert out["future"] == {"a": [1]} and list(out)[-1] == "future"
    assert list(out)[:3] == ["schema", "id", "status"]
    assert model.Mission.from_dict(out).to_dict() == out


@pytest.mark.parametrize("value", ['"\\ud800"', '{"\\udcff": 1}', '["a", "\\udfff"]'])
def test_a_state_value_that_is_not_valid_unicode_is_bad_input_not_a_bug(capsys, value):
    """A lone surrogate (a JSON escape, or argv bytes that are not UTF-8) was 'error: bug:
    text that is not valid Unicode' (exit 4); it is one line of bad input, nothing written."""
    cli(capsys, "new", "ship", "--id", "m1")
    code, _, err = cli(capsys, "state", "set", "m1", "k", value)
    assert code == 2 and "not valid Unicode" in one_error(err) and "bug" not in err
    code, _, err = cli(capsys, "state", "set", "m1", "k", "--text", "a\udcff")
    assert code == 2 and "not valid Unicode" in one_error(err)
    assert state_get(project_state(), "m1") == {}


def test_mission_show_list_and_state_print_no_escape_sequence_of_a_damaged_file(capsys):
    """mission.json and the user index are files: a label, a run, a decision's id, an
    artifact's kind or an index entry with ESC in it is shown escaped, never obeyed; state
    get writes DEL and the C1 controls (U+009B starts a sequence) as JSON escapes."""
    cli(capsys, "new", "ship", "--id", "m1")
    path = project_state() / "missions" / "m1" / "mission.json"
    data = json.loads(path.read_text())
    data["labels"] = ["\x1b[2J"]
    data["runs"] = [{"job_id": "\x1b]0;t\x07", "linked_ms": 1, "status": "\x1b[5m"}]
    data["decisions"] = [{"id": "\x1b[1m", "question": "q", "created_ms": 1}]
    data["artifacts"] = [{"kind": "\x1b[8m", "path": "p", "added_ms": 1}]
    path.write_text(json.dumps(data))
    code, out, err = cli(capsys, "show", "m1")
    assert code == 0 and "\\e[2J" in out and "\\e[1m" in out
    assert "\x1b" not in out + err and "\x07" not in out + err
    shelf = index.default_dir()
    [entry] = shelf.glob("*-m1.json")
    pointer = json.loads(entry.read_text())
    entry.write_text(json.dumps(pointer | {"id": "\x1b[31mid", "status": "\x1b[5mactive"}))
    code, out, err = cli(capsys, "list", "--global", "--all")
    assert code == 0 and "\\e[31mid" in out and "\x1b" not in out
    assert cli(capsys, "state", "set", "m1", "k", '"a\\u009b31mX\\u007f"')[0] == 0
    code, out, _ = cli(capsys, "state", "get", "m1", "k")
    assert code == 0 and "\x9b" not in out and "\x7f" not in out
    assert json.loads(out) == "a\x9b31mX\x7f"
