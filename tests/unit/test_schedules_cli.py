"""`specialists schedule` from the command line: every bad input is one line, exit 2, and
nothing on disk; and a hostile store (a planted symlink, a FIFO, a full disk, a huge history)
costs at most that one schedule (issue 12 items 2 and 8)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.schedules import ops
from specialists.features.schedules.fire import run_due
from specialists.features.schedules.model import SpecialistTarget
from specialists.features.schedules.store import MAX_HISTORY, ScheduleStore
from specialists.features.schedules.testing import RecordingLauncher
from specialists.features.schedules.triggers import EveryTrigger
from specialists.fronts.cli.main import main
from tests.support.jobs import echo_project

TARGET = ["--specialist", "echo", "--prompt", "hi"]
HOUR = 3_600_000


def schedules_dir() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "schedules"


def left_behind() -> list[str]:
    return sorted(os.listdir(schedules_dir())) if schedules_dir().is_dir() else []


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--cron", "61 * * * *", "--zone", "UTC", *TARGET], "cron minute 61 is out of range"),
        (["--cron", "* * *", "--zone", "UTC", *TARGET], "3 fields, expected 5"),
        (["--cron", "* * * * *", "--zone", "Europe/Nowhere", *TARGET], "unknown time zone"),
        (["--cron", "* * * * *", *TARGET], "needs a named time zone"),
        (["--at", "+5m", "--cron", "* * * * *", "--zone", "UTC", *TARGET], "two triggers"),
        ([*TARGET], "no trigger"),
        (["--every", "90s", *TARGET], "invalid every"),
        (["--at", "tomorrow", *TARGET], "invalid at"),
        (["--at", "2026-12-01T10:00", *TARGET], "has no time zone"),
        (["--every", "1h", "--specialist", "nobody", "--prompt", "x"], "unknown specialist"),
        (["--every", "1h", "--workflow", "nightly"], "unknown workflow 'nightly'"),
        (["--every", "1h", "--workflow", "w", *TARGET], "exactly one target"),
        (["--every", "1h"], "needs a target"),
        (["--every", "1h", "--specialist", "echo"], "no prompt"),
        (["../evil", "--every", "1h", *TARGET], "invalid schedule id"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(capsys, argv, says):
    echo_project()
    assert main(["schedule", "create", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert says in err
    assert "(" in err  # with a hint
    assert left_behind() == []


def test_create_list_show_pause_resume_delete(capsys):
    echo_project()
    assert main(["schedule", "create", "daily", "--cron", "0 9 * * 1-5", "--zone",
                 "Europe/Berlin", *TARGET, "--json"]) == 0  # fmt: skip
    created = json.loads(capsys.readouterr().out)
    assert created["id"] == "daily" and created["next_due_ms"]
    assert main(["schedule", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["schedules"]
    assert (row["status"], row["when"]) == ("active", "cron '0 9 * * 1-5' Europe/Berlin")
    assert main(["schedule", "pause", "daily"]) == 0
    assert main(["schedule", "pause", "daily"]) == 0
    assert "paused already" in capsys.readouterr().out
    assert main(["schedule", "show", "daily", "--json"]) == 0
    paused = json.loads(capsys.readouterr().out)
    assert (paused["status"], paused["upcoming_ms"]) == ("paused", [])
    assert main(["schedule", "resume", "daily"]) == 0
    capsys.readouterr()
    assert main(["schedule", "show", "daily", "--next", "4"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("Europe/Berlin)") == 4 and "09:00 +0100 Europe/Berlin" in shown
    assert main(["schedule", "delete", "daily"]) == 0
    capsys.readouterr()
    assert main(["schedule", "show", "daily"]) == 2
    assert "no schedule 'daily'" in capsys.readouterr().err
    assert left_behind() == []


def _due(store: ScheduleStore, sid: str, now: int) -> None:
    ops.create(
        store,
        trigger=EveryTrigger("every", HOUR, now - HOUR - 1, "1h"),
        target=SpecialistTarget("specialist", "echo", "hi"),
        now_ms=now - HOUR - 1,
        schedule_id=sid,
    )


def test_a_planted_symlink_or_fifo_costs_one_schedule(tmp_path):
    store = ScheduleStore(tmp_path / ".specialists")
    now = 10 * HOUR
    for sid in ("ok", "fifo"):
        _due(store, sid, now)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, store.root / "linked")
    state = store.dir("fifo") / "state.json"
    state.unlink()
    os.mkfifo(state)
    launcher = RecordingLauncher()
    report = run_due(store, launcher, now)  # never blocks on the FIFO
    assert [f.schedule_id for f in report.firings] == ["ok"]
    assert any("linked" in p and "symbolic link" in p for p in report.problems)
    assert any("fifo" in p and "FIFO" in p for p in report.problems)
    assert os.listdir(elsewhere) == []  # nothing was written through the link


def test_history_stays_bounded_and_a_torn_line_is_skipped(tmp_path):
    store = ScheduleStore(tmp_path / ".specialists")
    _due(store, "s1", 10 * HOUR)
    path = store.dir("s1") / "history.jsonl"
    path.write_bytes(b'{"outcome": "fired", "slot_ms": 1}\n{"outcome": "fi')  # a crash
    for n in range(3 * MAX_HISTORY):
        store.record("s1", {"outcome": "skipped", "slot_ms": n, "detail": "x" * 200})
    lines = store.history("s1")
    assert len(lines) <= MAX_HISTORY
    assert lines[-1]["slot_ms"] == 3 * MAX_HISTORY - 1
    assert path.stat().st_size < 2 * 256 * 1024


def test_two_creates_of_one_id_at_once_make_one_schedule(tmp_path):
    """Racing creates (threads, each its own staging directory): one wins, one is refused,
    and nothing half-made is left; a staging directory a crash left is swept later."""
    import threading

    store = ScheduleStore(tmp_path / ".specialists")
    store.root.mkdir(parents=True)
    stale = store.root / ".new-old-1-abc"
    stale.mkdir()
    os.utime(stale, (0, 0))
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def make() -> None:
        barrier.wait()
        try:
            _due(store, "same", 10 * HOUR)
            outcomes.append("made")
        except UserError as exc:
            outcomes.append(exc.message)

    threads = [threading.Thread(target=make) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["made", "schedule 'same' exists already"]
    assert os.listdir(store.root) == ["same"]
