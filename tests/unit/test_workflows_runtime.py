"""The workflow runtime on a fake `Children`: keys, the journal, resume, schemas, caps, and
the pipeline's missing barrier. No processes; the real children are the integration tests'."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.journal import JOURNAL_FILE, Journal, fold, read_entries
from specialists.features.workflows.options import child_options
from specialists.features.workflows.results import ChildFailed, Outcome
from specialists.features.workflows.runtime import Runs
from specialists.features.workflows.testing import FakeChildren


def make(tmp_path: Path, children: FakeChildren, **kw: Any) -> Runs:
    return Runs(children, Journal(tmp_path), **kw)


def go(coro: Any) -> Any:
    return asyncio.run(coro)


def entries(tmp_path: Path) -> list[dict[str, Any]]:
    return read_entries(tmp_path / JOURNAL_FILE)


def test_a_child_is_journaled_at_launch_and_at_its_end(tmp_path: Path) -> None:
    """The launch line names the job before the child ends; the end line holds the output."""
    children = FakeChildren(polls=2)
    runs = make(tmp_path, children)
    r = go(runs.run("a", agent="echo", task="hi"))
    assert r.ok and r.output == "answer to hi" and r.job_id == "00000001"
    kinds = [(e["e"], e.get("key")) for e in entries(tmp_path)]
    assert kinds == [("node", None), ("launch", "a"), ("end", "a")]
    assert entries(tmp_path)[2]["output"] == "answer to hi"


def test_duplicate_keys_are_refused_before_a_second_launch(tmp_path: Path) -> None:
    children = FakeChildren()
    runs = make(tmp_path, children)

    async def script() -> None:
        await runs.run("a", agent="echo", task="one")
        await runs.run("a", agent="echo", task="two")

    with pytest.raises(UserError, match="duplicate workflow key 'a'"):
        go(script())
    assert children.keys == ["a"]
    (tmp_path / "x").mkdir()
    runs2 = make(tmp_path / "x", FakeChildren())
    items = [{"key": "b", "agent": "echo", "task": "1"}, {"key": "b", "agent": "echo", "task": "2"}]
    with pytest.raises(UserError, match="duplicate workflow key 'b'"):
        go(runs2.all(items))


def _prior(tmp_path: Path, script: Any) -> Any:
    first = tmp_path / "first"
    first.mkdir()
    runs = make(first, FakeChildren())
    go(script(runs))
    return fold(read_entries(first / JOURNAL_FILE))


def test_a_rerun_skips_keys_finished_with_the_same_inputs(tmp_path: Path) -> None:
    async def script(runs: Runs) -> None:
        await runs.all([{"key": f"k{i}", "agent": "echo", "task": f"t{i}"} for i in range(3)])

    prior = _prior(tmp_path, script)
    children = FakeChildren()
    runs = make(tmp_path, children, prior=prior)
    results = go(runs.all([{"key": f"k{i}", "agent": "echo", "task": f"t{i}"} for i in range(4)]))
    assert children.keys == ["k3"]  # only the new key ran
    assert [r.cached for r in results] == [True, True, True, False]
    assert results[1].output == "answer to t1"


def test_a_key_whose_inputs_changed_is_an_error_naming_it_unless_accepted(tmp_path: Path) -> None:
    """Determinism: the same key must come with the same inputs, or be accepted as changed."""
    prior = _prior(tmp_path, lambda runs: runs.run("k", agent="echo", task="old"))
    with pytest.raises(UserError, match="key 'k' finished before with different inputs") as info:
        go(make(tmp_path, FakeChildren(), prior=prior).run("k", agent="echo", task="new"))
    assert "--rerun-changed k" in (info.value.hint or "")
    children = FakeChildren()
    r = go(
        make(tmp_path, children, prior=prior, accept_changed=frozenset({"k"})).run(
            "k", agent="echo", task="new"
        )
    )
    assert children.keys == ["k"] and r.output == "answer to new"


def test_a_timeout_change_is_not_an_input_change(tmp_path: Path) -> None:
    prior = _prior(tmp_path, lambda runs: runs.run("k", agent="echo", task="t", timeout=10))
    children = FakeChildren()
    r = go(make(tmp_path, children, prior=prior).run("k", agent="echo", task="t", timeout=99))
    assert r.cached and children.keys == []


def test_a_key_launched_but_never_ended_is_adopted_not_relaunched(tmp_path: Path) -> None:
    """The engine died after the launch line: the child it was running is waited for."""
    opts = child_options({"key": "k", "agent": "echo", "task": "t"})
    (tmp_path / "old").mkdir()
    j = Journal(tmp_path / "old")
    j.append({"e": "launch", "key": "k", "hash": opts.input_hash(), "job": "0000000a"})
    prior = fold(read_entries(tmp_path / "old" / JOURNAL_FILE))
    children = FakeChildren()
    children._outcomes["0000000a"] = Outcome("done", "from before")
    r = go(make(tmp_path, children, prior=prior).run("k", agent="echo", task="t"))
    assert children.keys == [] and r.output == "from before"
    children2 = FakeChildren()
    children2._outcomes["0000000a"] = Outcome("error", "", "it crashed")
    r2 = go(make(tmp_path / "old", children2, prior=prior).run("k", agent="echo", task="t"))
    assert children2.keys == ["k"] and r2.ok  # a failed adoptee runs again


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.mark.parametrize("sessions", [True, False])
def test_a_bad_answer_is_asked_once_more_with_the_error(tmp_path: Path, sessions: bool) -> None:
    answers = iter(['{"n": "two"}', '{"n": 2}'])
    children = FakeChildren(answer=lambda launch: next(answers), sessions=sessions)
    r = go(make(tmp_path, children).run("k", agent="echo", task="count", schema=SCHEMA))
    assert r.ok and r.data == {"n": 2} and len(r.jobs) == 2
    retry = children.launches[1][1]
    assert "'two' is not of type 'integer'" in retry.prompt
    assert (retry.continue_from == "00000001") is sessions  # a continuation where possible
    assert sessions or retry.prompt.startswith("count")


def test_an_answer_bad_twice_fails_the_child(tmp_path: Path) -> None:
    children = FakeChildren(answer=lambda launch: "not json")
    with pytest.raises(ChildFailed, match="does not satisfy the schema"):
        go(make(tmp_path, children).run("k", agent="echo", task="t", schema=SCHEMA))
    assert len(children.launches) == 2


def test_the_children_cap_is_a_clear_error(tmp_path: Path) -> None:
    runs = make(tmp_path, FakeChildren(), max_children=3)
    items = [{"key": f"k{i}", "agent": "echo", "task": "t"} for i in range(4)]
    with pytest.raises(UserError, match="child cap reached: 3 children launched"):
        go(runs.all(items))


def test_too_many_items_are_refused_before_any_launch(tmp_path: Path) -> None:
    children = FakeChildren()
    items = ({"key": f"k{i}", "agent": "echo", "task": "t"} for i in range(4097))
    with pytest.raises(UserError, match="more than 4096"):
        go(make(tmp_path, children).all(items))
    assert children.launches == []


def test_concurrency_bounds_the_children_running_at_once(tmp_path: Path) -> None:
    children = FakeChildren(polls=3)
    runs = make(tmp_path, children, concurrency=2)
    peak = 0

    async def script() -> None:
        nonlocal peak
        task = asyncio.ensure_future(
            runs.all([{"key": f"k{i}", "agent": "echo", "task": "t"} for i in range(6)])
        )
        while not task.done():
            peak = max(peak, len(runs.status()["running"]))
            await asyncio.sleep(0.01)
        await task

    go(script())
    assert peak == 2 and len(children.launches) == 6


def test_the_pipeline_has_no_barrier_between_stages(tmp_path: Path) -> None:
    """Item b's stage 2 launches while item a's slow stage 1 still runs."""
    children = FakeChildren(answer=lambda launch: launch.options.key)
    order: list[str] = []

    async def stage1(item: str, prev: Any) -> Any:
        if item == "a":
            while "2-b" not in children.keys:
                await asyncio.sleep(0.01)
        order.append(f"1-{item}")
        return await runs.run(f"1-{item}", agent="echo", task=item)

    def stage2(item: str, prev: Any) -> dict[str, Any]:
        order.append(f"2-{item}")
        return {"key": f"2-{item}", "agent": "echo", "task": prev.output}

    runs = make(tmp_path, children, concurrency=4)
    out = go(runs.pipeline(["a", "b"], stage1, stage2))
    assert [r.output for r in out] == ["2-a", "2-b"]
    assert order.index("2-b") < order.index("1-a")


def test_a_failed_child_raises_unless_check_is_false(tmp_path: Path) -> None:
    children = FakeChildren(answer=lambda launch: Outcome("error", "", "boom"))
    runs = make(tmp_path, children)
    with pytest.raises(ChildFailed, match="child 'k' error: boom"):
        go(runs.run("k", agent="echo", task="t"))
    r = go(runs.run("k2", agent="echo", task="t", check=False))
    assert not r.ok and r.error == "boom"


def test_a_nested_workflow_cannot_nest_again(tmp_path: Path) -> None:
    runs = make(tmp_path, FakeChildren(), nested_ok=False)
    with pytest.raises(UserError, match="nest one level deep"):
        go(runs.workflow("w", "other", {}))


def test_keyed_resume_continues_the_receipts_job(tmp_path: Path) -> None:
    children = FakeChildren()
    children.receipts[("wf1", "oracle")] = ("000000aa", "oracle")
    r = go(
        make(tmp_path, children).run(
            "again", task="follow up", resume={"workflow": "wf1", "key": "oracle", "latest": True}
        )
    )
    assert r.ok and children.launches[0][1].continue_from == "000000aa"
    (launch_line,) = [e for e in entries(tmp_path) if e["e"] == "launch"]
    assert launch_line["keyed"] is True and launch_line["continues"] == "000000aa"


def test_a_journal_line_cut_short_is_ignored(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append({"e": "launch", "key": "k", "hash": "h", "job": "00000001"})
    with open(tmp_path / JOURNAL_FILE, "ab") as f:
        f.write(b'{"e": "end", "key": "k", "ha')  # a crash mid-write
    state = fold(read_entries(tmp_path / JOURNAL_FILE))["k"]
    assert state.status is None and state.job == "00000001"


def test_a_freed_slot_goes_to_the_deepest_stage_waiting(tmp_path: Path) -> None:
    """With one slot, item a's stage 2 runs before item b's stage 1: items flow to their end."""
    children = FakeChildren(polls=1)
    runs = make(tmp_path, children, concurrency=1)
    go(
        runs.pipeline(
            ["a", "b"],
            lambda item, prev: {"key": f"1-{item}", "agent": "echo", "task": item},
            lambda item, prev: {"key": f"2-{item}", "agent": "echo", "task": item},
        )
    )
    assert children.keys == ["1-a", "2-a", "1-b", "2-b"]


def test_a_declarative_pipeline_fills_item_index_and_prev(tmp_path: Path) -> None:
    """Placeholders: {item}, {index} and {prev.output} per item, {args.X}, {results.K.output};
    the same item twice keeps its own index."""
    from specialists.features.workflows.declarative import run_document

    children = FakeChildren(answer=lambda launch: launch.prompt.upper())
    doc = {
        "defaults": {"agent": "echo"},
        "steps": [
            {"run": {"key": "first", "task": "about {args.topic}"}},
            {
                "pipeline": {
                    "items": "{args.items}",
                    "stages": [
                        {"key": "a-{index}", "task": "{item}#{index} {results.first.output}"},
                        {"key": "b-{index}", "task": "then {prev.output}"},
                    ],
                }
            },
        ],
    }
    runs = make(tmp_path, children, concurrency=2)
    out = go(run_document(runs, doc, {"topic": "x", "items": ["p", "p"]}))
    assert out["b-1"]["output"] == "THEN P#1 ABOUT X"
    assert out["first"]["output"] == "ABOUT X" and set(out) == {"first", "a-0", "a-1", "b-0", "b-1"}


def test_no_child_launches_once_the_token_budget_is_spent(tmp_path: Path) -> None:
    """The budget counts the tokens of the run's ended children: under it a child launches,
    at or over it the next launch is refused with the figures, and nothing more starts."""
    children = FakeChildren(answer=lambda launch: Outcome("done", "ok", None, tokens=60))
    runs = make(tmp_path, children, budget_tokens=100)

    async def script() -> None:
        await runs.run("a", agent="echo", task="one")
        await runs.run("b", agent="echo", task="two")  # 60 spent: under the budget
        await runs.run("c", agent="echo", task="three")  # 120 spent: refused

    with pytest.raises(UserError, match="token budget spent: its children used 120 of 100"):
        go(script())
    assert children.keys == ["a", "b"]


def test_a_run_without_a_budget_launches_whatever_its_children_spend(tmp_path: Path) -> None:
    children = FakeChildren(answer=lambda launch: Outcome("done", "ok", None, tokens=10**9))
    runs = make(tmp_path, children)
    go(runs.all([{"key": f"k{n}", "agent": "echo", "task": "t"} for n in range(3)]))
    assert len(children.keys) == 3


def test_resume_by_run_id_continues_that_job_and_keys_it_into_the_hash(tmp_path: Path) -> None:
    """Seed 004: `runs.run(key, resume="<run id>", task=...)` revives a retained child; the
    result names the new run. The id is part of the key's inputs, agent is refused beside
    it, and an id that is not a job id (a path, a dot) is refused before anything runs."""
    from specialists.features.workflows.options import child_options

    children = FakeChildren()
    children.retained["000000aa"] = "oracle"
    r = go(make(tmp_path, children).run("again", task="follow up", resume="000000aa"))
    assert r.ok and r.run_id == r.job_id and r.run_id not in (None, "000000aa")
    assert children.launches[0][1].continue_from == "000000aa"
    (launch_line,) = [e for e in entries(tmp_path) if e["e"] == "launch"]
    assert launch_line["keyed"] is True and launch_line["continues"] == "000000aa"
    a = child_options({"key": "k", "task": "t", "resume": "000000aa"}).input_hash()
    b = child_options({"key": "k", "task": "t", "resume": "000000ab"}).input_hash()
    assert a != b
    for bad, said in (
        ("../000000aa", "invalid job id"),
        ("0000.0aa", "invalid job id"),
        ("", "invalid job id"),
        (7, "resume must be a run id"),
    ):
        with pytest.raises(UserError, match=said):
            child_options({"key": "k", "task": "t", "resume": bad})
    with pytest.raises(UserError, match="resume and agent cannot be combined"):
        child_options({"key": "k", "task": "t", "resume": "000000aa", "agent": "x"})
    (tmp_path / "2").mkdir()
    with pytest.raises(UserError, match="not resumable"):
        go(make(tmp_path / "2", FakeChildren()).run("k", task="t", resume="000000ff"))
