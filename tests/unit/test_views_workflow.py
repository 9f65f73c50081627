"""What a person sees of a workflow and its children in every view: what each row is (the
key, the task), its activity in words, the agent's words with escapes shown, a failed tool's
reason, the workflow's progress and its children's spending, its stages as a graph, and
`top` and `web` agreeing because both render the same fleet rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from specialists.events.lines import status_line
from specialists.features.workflows.graph import Node
from specialists.fronts.fleet.feed import FeedTail, feed_parts
from specialists.fronts.fleet.model import job_fleet
from specialists.fronts.web.app import build_app
from specialists.fronts.web.graph import graph_svg
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from tests.support.fleet import WORKFLOW, workflow_fleet
from tests.unit.test_web import TOKEN, get

PROGRESS = "1/8 done · 1 failed · 2 running · 4 queued · phase review and verify · up to 2 at once"


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / ".specialists", news=NEWS)
    workflow_fleet(s.jobs_dir)
    return s


def rows(store: JobStore) -> dict[str, Any]:
    fleet = job_fleet(store, clock=lambda: 0.0)
    fleet.refresh()
    return {r.job_id: r for r in fleet.rows.values() if r.job_id}


def test_rows_say_what_each_job_is_and_what_it_does(store: JobStore) -> None:
    r = rows(store)
    wf = r[WORKFLOW]
    assert (wf.name, wf.task, wf.activity) == ("workflow", "parallel_review", PROGRESS)
    assert wf.progress is not None and wf.progress["concurrency"] == 2
    assert wf.spent() == (10_000, 700, 0.0456)  # its children's, rolled up (its own is 0)
    assert [r[j].name for j in ("000000a1", "000000a2", "000000a3", "000000a4")] == [
        "review-correctness",
        "review-tests",
        "review-security",
        "verify-correctness",
    ]
    assert r["000000a3"].activity == "says: I'll read the diff first, \\e[31mthen\\e[0m the tests."
    assert r["000000a4"].activity == "bash(git diff HEAD)"
    assert r["000000a2"].activity == "the answer does not satisfy the schema"
    plain = r["000000b0"]
    assert (plain.name, plain.task) == ("reviewer", "Review the last commit for error handling")
    assert plain.rollup is None and plain.spent() == (12_600, 550, 0.0461)


def test_status_lines_name_the_key_or_the_task(store: JobStore) -> None:
    def line(job_id: str) -> str:
        st = store.read_status(job_id)
        assert st is not None
        return status_line(st)

    assert "workflow" in line(WORKFLOW) and PROGRESS[:40] in line(WORKFLOW)
    assert "review-security" in line("000000a3") and "says: I'll read" in line("000000a3")
    assert "\x1b" not in line("000000a3")
    assert "reviewer" in line("000000b0") and "Review the last commit" in line("000000b0")


def test_the_feed_shows_words_and_a_failed_tools_reason(store: JobStore) -> None:
    events = FeedTail(store.events_path("000000a3")).poll()
    shown = [feed_parts(ev, 0)[1:] for ev in events]
    assert shown[1] == ("says", "I'll read the diff first, \\e[31mthen\\e[0m the tests.")
    assert shown[3][0] == "tool failed" and "Blocked: `sleep 120` would hold" in shown[3][1]


def test_web_serves_the_same_rows_and_draws_the_stages(store: JobStore) -> None:
    app = build_app(store, TOKEN)
    status, _, body = get(app, "/api/fleet")
    assert status == 200
    import json

    web = {r["job_id"]: r for r in json.loads(body)["upsert"]}
    for job_id, row in rows(store).items():  # one read model: the same fields either way
        assert web[job_id] == row.to_json()
    assert web[WORKFLOW]["rollup"]["cost_usd"] == 0.0456
    status, _, page = get(app, f"/job/{WORKFLOW}")
    assert status == 200 and b"stages: what the workflow ran" in page
    assert b">review<" in page and b">verify<" in page and b"1/4 done" in page
    status, headers, svg = get(app, f"/api/job/{WORKFLOW}/graph.svg")
    assert status == 200 and headers["content-type"].startswith("image/svg+xml")
    assert b"phase review and verify" in svg and b"1 running" in svg and b"1 failed" in svg
    status, _, _ = get(app, "/api/job/000000b0/graph.svg")
    assert status == 404  # not a workflow
    assert b"stages:" not in get(app, "/job/000000b0")[2]


def test_the_cost_page_adds_up_each_missions_jobs_once(store: JobStore, tmp_path: Path) -> None:
    from specialists.features.missions import model, ops
    from specialists.features.missions.store import MissionStore

    missions = MissionStore(store.root, index_dir=tmp_path / "index")
    ops.create(missions, title="Ship <the> review", mission_id="ms-00000001")
    for job_id in (WORKFLOW, "000000a1", "000000b0"):  # a1 is in the workflow's figures
        missions.update("ms-00000001", lambda m, j=job_id: (model.link_run(m, j, "r", 1), None))
    status, _, page = get(build_app(store, TOKEN), "/costs")
    assert status == 200 and b"per mission" in page and b"Ship &lt;the&gt; review" in page
    # workflow 0.0456 with its children (5 jobs) + the plain job 0.0461 (1 job)
    assert b"<td class=num>6</td>" in page and b"$0.0917" in page


def test_a_planted_journal_is_one_line_not_a_hang(store: JobStore) -> None:
    journal = store.job_dir(WORKFLOW) / "workflow-journal.jsonl"
    journal.unlink()
    os.mkfifo(journal)
    status, _, svg = get(build_app(store, TOKEN), f"/api/job/{WORKFLOW}/graph.svg")
    assert status == 200 and b"cannot be read" in svg and b"not a regular file" in svg


def test_the_graph_escapes_every_label_and_caps_its_size() -> None:
    evil = Node("n1", "all", "<script>alert(1)</script>", 2, [], "<b>phase</b>", ["a&b"])
    svg = graph_svg([evil])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;phase" in svg
    many = [Node(f"n{i}", "run", f"k{i}", 1, [f"n{i - 1}"] if i else [], None) for i in range(300)]
    svg = graph_svg(many)
    assert svg.count("<g class=") == 200 and "100 more stages not drawn" in svg
    assert "no stage has begun yet" in graph_svg([])
