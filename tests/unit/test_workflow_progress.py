"""A workflow's progress (done, running, queued of total, phase, concurrency, its children's
spending) and its shape (stages and edges from the journal), on a fake `Children`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from specialists.jobs.view import progress_words
from specialists.workflows.graph import Planner, fold_graph
from specialists.workflows.journal import JOURNAL_FILE, Journal, fold, read_entries
from specialists.workflows.results import Outcome
from specialists.workflows.runtime import Runs
from specialists.workflows.testing import FakeChildren


def runs_for(tmp_path: Path, children: FakeChildren, **kw: Any) -> tuple[Runs, list[dict]]:
    reports: list[dict[str, Any]] = []
    return Runs(children, Journal(tmp_path), report=reports.append, **kw), reports


def graph(tmp_path: Path) -> list[dict[str, Any]]:
    return [n.to_json() for n in fold_graph(read_entries(tmp_path / JOURNAL_FILE))]


def test_children_wait_their_turn_and_every_view_is_told(tmp_path: Path) -> None:
    """Concurrency 1 and three children: one runs, two wait; then all are done."""
    children = FakeChildren(polls=3)
    runs, reports = runs_for(tmp_path, children, concurrency=1)

    async def script() -> None:
        runs.phase("review")
        await runs.all([{"key": f"r-{n}", "task": n, "agent": "echo"} for n in "abc"])

    asyncio.run(script())
    counts = [(r["done"], r["running"], r["queued"], r["total"]) for r in reports]
    assert (0, 1, 2, 3) in counts  # the first runs, two queued behind it
    assert counts[-1] == (3, 0, 0, 3)
    last = reports[-1]
    assert last["phase"] == "review" and last["concurrency"] == 1 and last["failed"] == 0
    assert last["children"]["jobs"] == 3
    assert max(r["running"] for r in reports) == 1  # never more than the concurrency
    assert "3/3 done" in progress_words(last) and "up to 1 at once" in progress_words(last)


def test_a_pipeline_counts_the_stages_its_items_have_not_reached(tmp_path: Path) -> None:
    children = FakeChildren(polls=2)
    runs, reports = runs_for(tmp_path, children, concurrency=8)

    def review(item: str, _prev: Any) -> dict[str, Any]:
        return {"key": f"review-{item}", "task": item, "agent": "echo"}

    def verify(item: str, _prev: Any) -> dict[str, Any]:
        return {"key": f"verify-{item}", "task": item, "agent": "echo"}

    asyncio.run(runs.pipeline(["a", "b", "c", "d"], review, verify))
    assert reports[0]["total"] == 8  # 4 items x 2 stages, before any second stage began
    assert all(r["total"] == 8 for r in reports)
    assert reports[-1]["done"] == 8
    nodes = graph(tmp_path)
    assert [(n["label"], n["kind"], n["count"], n["after"]) for n in nodes] == [
        ("review", "stage", 4, []),
        ("verify", "stage", 4, ["n1"]),
    ]
    assert nodes[1]["done"] == 4 and nodes[1]["queued"] == 0


def test_failed_children_are_counted_and_drawn(tmp_path: Path) -> None:
    def answer(launch: Any) -> Outcome | str:
        return Outcome("error", "", "boom") if launch.options.key == "b" else "ok"

    runs, reports = runs_for(tmp_path, FakeChildren(answer), concurrency=4)
    asyncio.run(runs.all([{"key": k, "task": k, "agent": "echo"} for k in "abc"], check=False))
    assert (reports[-1]["done"], reports[-1]["failed"]) == (2, 1)
    (node,) = graph(tmp_path)
    assert (node["done"], node["failed"], node["label"]) == (2, 1, "3 children")
    assert "1 failed" in progress_words(reports[-1])


def test_edges_follow_what_the_script_awaited(tmp_path: Path) -> None:
    """plan; then two side by side (gather); then a fix after both: a diamond."""
    runs, _ = runs_for(tmp_path, FakeChildren(polls=1), concurrency=4)

    async def script() -> None:
        await runs.run("plan", task="p", agent="echo")
        await asyncio.gather(
            runs.run("lint", task="l", agent="echo"), runs.run("test", task="t", agent="echo")
        )
        await runs.all(
            [
                {"key": "fix-a", "task": "a", "agent": "e"},
                {"key": "fix-b", "task": "b", "agent": "e"},
            ]
        )

    asyncio.run(script())
    shape = {n["label"]: n["after"] for n in graph(tmp_path)}
    ids = {n["label"]: n["id"] for n in graph(tmp_path)}
    assert shape["plan"] == []
    assert shape["lint"] == shape["test"] == [ids["plan"]]
    assert sorted(shape["fix"]) == sorted([ids["lint"], ids["test"]])


def test_a_resumed_run_draws_its_cached_keys_as_done(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    runs, _ = runs_for(first, FakeChildren(), concurrency=2)
    asyncio.run(runs.all([{"key": k, "task": k, "agent": "echo"} for k in "ab"]))
    prior = fold(read_entries(first / JOURNAL_FILE))
    second = tmp_path / "second"
    second.mkdir()
    children = FakeChildren()
    runs, reports = runs_for(second, children, concurrency=2, prior=prior)
    asyncio.run(runs.all([{"key": k, "task": k, "agent": "echo"} for k in "abc"]))
    assert [k for k in children.keys] == ["c"]  # a and b came from the journal
    assert reports[-1]["done"] == 3
    (node,) = graph(second)
    assert (node["done"], node["count"]) == (3, 3)


def test_a_journal_with_damaged_node_lines_still_folds() -> None:
    entries: list[dict[str, Any]] = [
        {"e": "node", "id": "n1", "label": "ok", "count": 1, "after": []},
        {"e": "node", "id": "n2", "label": 5, "count": 1, "after": []},  # label not text
        {"e": "node", "id": "n3", "label": "x", "count": -4, "after": []},
        {"e": "node", "id": "n4", "label": "y", "count": 2, "after": ["n1", "nowhere", 3]},
        {"e": "node", "id": "n5", "label": "z" * 500, "count": 10**12, "after": ["n1"]},
        {"e": "launch", "key": "k", "node": "n1"},
        {"e": "end", "key": "k", "status": "done"},
        {"e": "launch", "key": "orphan", "node": "n99"},
    ]
    nodes = fold_graph(entries)
    assert [n.id for n in nodes] == ["n1", "n5"]
    assert nodes[0].done == 1 and len(nodes[1].label) == 80 and nodes[1].count == 100_000


def test_the_planner_alone() -> None:
    p = Planner()
    (a,) = p.begin("run", ["a"], 1, None)
    p.end(a["id"])
    b, c = p.begin("stage", ["b", "c"], 3, "build")
    assert (a["after"], b["after"], c["after"]) == ([], ["n1"], ["n2"])
    assert b["phase"] == "build" and c["count"] == 3
