"""`specialists top` headless, through Textual's pilot: the tree, live patches, the feed pane,
result, refusals, a damaged job, 1,000 jobs, a tiny terminal, a missing TTY or Textual."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual", reason="the tui extra is not installed: pip install -e '.[tui]'")

from textual.widgets import DataTable, RichLog

from specialists.events import notices as owner_news
from specialists.fronts.fleet.model import job_fleet
from specialists.fronts.tui.app import TopApp
from specialists.fronts.tui.screens import ResultView
from specialists.store.jobs import JobStore
from tests.support.fleet import (
    BASE_MS,
    WORKFLOW,
    append_events,
    fill_fleet,
    workflow_fleet,
    write_status,
)
from tests.support.screen import assert_snapshot, run, screen_text, settled_text, until

NOW_MS = BASE_MS + 90_000


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=owner_news)


def make_app(store: JobStore, **kwargs: Any) -> TopApp:
    # A frozen clock: the health pass (re-reading active jobs) runs on the first refresh only.
    fleet = job_fleet(store, clock=lambda: 0.0)
    app = TopApp(store, fleet, root_label="~/proj", refresh_s=3600, feed_s=3600, **kwargs)
    app.now_ms = lambda: NOW_MS
    return app


def small_fleet(store: JobStore) -> None:
    jobs = store.jobs_dir
    write_status(
        jobs,
        "0000000a",
        status="done",
        specialist="planner",
        elapsed_s=42.0,
        tokens={"input": 12_000, "output": 900},
        cost_usd=0.0123,
    )
    write_status(
        jobs,
        "0000000b",
        status="running",
        specialist="executor",
        parent_id="0000000a",
        started_at_ms=BASE_MS + 10_000,
        current_tool="bash(pytest -q)",
        tokens={"input": 3_400, "output": 120},
        cost_usd=0.004,
    )
    write_status(
        jobs,
        "0000000c",
        status="running",
        specialist="reviewer",
        started_at_ms=BASE_MS + 20_000,
        current_event="thinking",
        needs_attention="no output for 5m",
        stalled=True,
    )
    write_status(
        jobs,
        "0000000d",
        status="waiting",
        specialist="overthinker",
        keep_alive=True,
        started_at_ms=BASE_MS + 5_000,
    )
    write_status(
        jobs,
        "0000000e",
        status="error",
        specialist="test-runner",
        started_at_ms=BASE_MS - 50_000,
        elapsed_s=3.0,
        error="exit code 1",
    )
    (jobs / "0000000f").mkdir()
    (jobs / "0000000f" / "status.json").write_text('{"id": "0000000f", "specialist": ')
    append_events(
        jobs / "0000000b",
        {"event": "starting", "runner": "pi", "model": "m"},
        {"event": "toolcall", "tool": "bash", "args": "pytest -q"},
    )


def notices(app: TopApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_snapshot_of_a_small_fleet(store):
    """The whole screen: tree guides, statuses, tokens, cost, flags, the damaged job, the feed
    of the selected (first) job and the key bar."""
    small_fleet(store)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(132, 24)) as pilot:
            # The key bar is composed after the table: wait for both, then for a still screen.
            await until(
                pilot,
                lambda: "0000000e" in (text := screen_text(app)) and "q quit" in text,
                20,
                "the last row and the key bar",
            )
            assert_snapshot("top_small_fleet", await settled_text(pilot, app))

    run(scenario())


def test_snapshot_of_a_workflow_under_way(store):
    """Children by key, the writer's words (escapes shown), the workflow's progress in words
    and its children's tokens and cost (Σ), the failed child's reason; the selected child's
    feed shows what it said and why its tool failed."""
    workflow_fleet(store.jobs_dir)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(150, 26)) as pilot:
            await until(
                pilot,
                lambda: "000000b0" in (text := screen_text(app)) and "q quit" in text,
                20,
                "the rows and the key bar",
            )
            app._selected = "job:000000a3"  # the writer: its feed in the pane
            app.tick()
            app.poll_feed()
            text = await settled_text(pilot, app)
            assert_snapshot("top_workflow", text)
            assert f"{WORKFLOW}" in text and "Σ" in text and "\\e[31m" in text

    run(scenario())


def test_live_patch_keeps_selection_and_new_jobs_appear(store):
    small_fleet(store)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(132, 30)) as pilot:
            table = app.query_one("#jobs", DataTable)
            await pilot.press("down")
            await pilot.pause()
            selected = app._selected
            write_status(
                store.jobs_dir,
                "0000000b",
                status="running",
                specialist="executor",
                parent_id="0000000a",
                started_at_ms=BASE_MS + 10_000,
                current_tool="edit(src/app.py)",
            )
            app.tick()
            await pilot.pause()
            assert "edit(src/app.py)" in screen_text(app)
            write_status(
                store.jobs_dir,
                "000000aa",
                status="starting",
                specialist="explorer",
                started_at_ms=BASE_MS + 80_000,
            )
            app.tick()
            await pilot.pause()
            assert table.row_count == 7
            assert app._selected == selected  # the reshape kept the cursor on the same job
            assert app._keys[table.cursor_row] == selected
            assert [r.key.value for r in table.ordered_rows] == app._keys
            assert app._keys == [line.row.key for line in app.fleet.tree()]
            for name in ("status.json", ""):  # gc removes a job
                path = store.jobs_dir / "0000000e" / name
                path.unlink() if name else path.rmdir()
            app.tick()
            await pilot.pause()
            assert table.row_count == 6 and "0000000e" not in screen_text(app)
            assert [r.key.value for r in table.ordered_rows] == app._keys

    run(scenario())


def test_feed_pane_follows_the_selected_job_by_offset(store):
    small_fleet(store)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(132, 30)) as pilot:
            log = app.query_one("#feed", RichLog)
            while app._selected != "job:0000000b":
                await pilot.press("down")
            await pilot.pause()
            assert len(log.lines) == 2
            append_events(
                store.jobs_dir / "0000000b",
                {"event": "tool_execution_end", "tool": "bash", "duration_ms": 1500},
            )
            app.poll_feed()
            await pilot.pause()
            assert len(log.lines) == 3 and "bash  1.5s" in screen_text(app)
            await pilot.press("up")
            await pilot.pause()
            assert len(log.lines) == 0  # another job: its own (empty) feed

    run(scenario())


def test_result_opens_sanitised_and_closes(store):
    write_status(store.jobs_dir, "0000000a", status="done")
    (store.jobs_dir / "0000000a" / "result.txt").write_text("line one\n\x1b[2Jline two\x07\n")

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("o")
            await pilot.pause()
            assert isinstance(app.screen, ResultView)
            text = screen_text(app)
            assert "line one" in text and "[2Jline two" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, ResultView)
            await pilot.press("enter")  # Enter on a row opens the result too
            await pilot.pause()
            assert isinstance(app.screen, ResultView)

    run(scenario())


def test_actions_on_a_finished_job_are_refused_with_a_reason(store):
    write_status(store.jobs_dir, "0000000a", status="done", keep_alive=False)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("s")
            await pilot.pause()
            await pilot.press("y")
            await until(pilot, lambda: any("already done" in m for m in notices(app)), 10, "stop")
            await pilot.press("t")
            await pilot.pause()
            await pilot.press(*"go left", "enter")
            await until(
                pilot, lambda: any("steer refused" in m for m in notices(app)), 10, "steer refusal"
            )
            await pilot.press("i")
            await until(
                pilot,
                lambda: any("nothing to interrupt" in m for m in notices(app)),
                10,
                "interrupt refusal",
            )
            await pilot.press("f")
            await pilot.pause()
            await pilot.press("escape")  # cancelled: nothing is sent
            await pilot.pause()
            assert not any("follow-up" in m for m in notices(app))

    run(scenario())


def test_interrupt_is_refused_for_a_job_that_is_not_keep_alive(store):
    """An abort ends a one-shot job: `i` refuses and points at stop instead of sending one."""
    job_dir = write_status(store.jobs_dir, "0000000a", status="running", keep_alive=False)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("i")
            await until(
                pilot, lambda: any("not keep-alive" in m for m in notices(app)), 10, "refusal"
            )
            assert not (job_dir / "control").exists()

    run(scenario())


def test_an_empty_store_and_a_damaged_job(store):
    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(132, 20)) as pilot:
            await pilot.pause()
            assert "0 active · 0 finished" in screen_text(app)
            await pilot.press("s")
            await pilot.pause()
            assert "no job selected" in notices(app)
            (store.jobs_dir / "0000dead").mkdir(parents=True)
            (store.jobs_dir / "0000dead" / "status.json").write_bytes(b"\xff\xfe")
            app.tick()
            await pilot.pause()
            text = screen_text(app)
            assert "DAMAGED" in text and "1 damaged" in text

    run(scenario())


def test_a_thousand_jobs(store):
    """All rows are in the table, the end key reaches the oldest, a refresh with nothing
    changed reads no status file."""
    fill_fleet(store.jobs_dir, 1000, active=5)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(132, 40)) as pilot:
            table = app.query_one("#jobs", DataTable)
            assert table.row_count == 1000
            source = app.fleet.sources[0]
            reads = source.reads  # type: ignore[attr-defined]
            app.tick()
            assert source.reads == reads  # type: ignore[attr-defined]
            await pilot.press("end")
            await pilot.pause()
            assert app._selected == f"job:{app._keys[-1].split(':')[1]}"

    run(scenario())


def test_a_terminal_too_small_says_so_and_recovers(store):
    small_fleet(store)

    async def scenario() -> None:
        app = make_app(store)
        async with app.run_test(size=(40, 8)) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert "terminal too small for top" in text and "40×8, needs 60×12" in text
            assert "0000000a" not in text
            await pilot.resize_terminal(120, 30)
            await pilot.pause()
            assert "0000000a" in screen_text(app)

    run(scenario())


def _sp(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = (
        [sys.executable, "-m", "specialists", *args]
        if code is None
        else [sys.executable, "-c", code]
    )
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, stdin=subprocess.PIPE, env=os.environ
    )


def test_a_refresh_that_fires_while_the_app_closes_does_nothing(store):
    """A timer can fire while Textual tears the screens down (CI caught one under load): the
    tick and the feed poll then skip their turn instead of crashing the exit on a widget
    that is gone."""
    small_fleet(store)

    async def scenario() -> TopApp:
        app = make_app(store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("down")  # a job selected: the feed pane follows it
            await pilot.pause()
        return app

    app = run(scenario())
    assert not app.is_running
    app.tick()
    app.poll_feed()
