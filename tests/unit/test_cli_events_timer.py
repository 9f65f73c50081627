"""`specialists timer set|list|cancel` and `specialists events`: the people's front of the
timers and inboxes. Bad input is one line `error: ...`, exit 2, and nothing changed."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.fronts.cli.main import main

OWNER = "cli-tester"


@pytest.fixture
def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"


def timers(root: Path) -> list[str]:
    return [t.id for t in TimerStore(root, OWNER).fold().timers.values()]


def test_set_list_cancel_round_trip(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timer", "set", "90", "--note", "check CI", "--owner", OWNER, "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    made["timer_id"] = made["id"]
    assert made["id"].startswith("tm-")
    assert main(["timer", "list", "--owner", OWNER]) == 0
    out = capsys.readouterr().out
    assert made["timer_id"] in out and "check CI" in out and "in 1m" in out
    assert main(["timer", "cancel", made["timer_id"], "--owner", OWNER]) == 0
    assert "cancelled" in capsys.readouterr().out
    assert main(["timer", "cancel", made["timer_id"], "--owner", OWNER]) == 0  # a no-op
    assert "already cancelled; nothing changed" in capsys.readouterr().out
    assert main(["timer", "list", "--owner", OWNER]) == 0
    assert "no pending timers" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["set", "--date", "2026-02-30", "--time", "09:00", "--zone", "UTC"], "no such day"),
        (["set", "--date", "2026-02-01", "--time", "09:00", "--zone", "Mars/Base"], "time zone"),
        (["set", "--date", "2026-02-01", "--time", "09:00", "--zone", "/etc/passwd"], "zone"),
        (["set", "--date", "2026-02-01", "--time", "25:00", "--zone", "UTC"], "invalid time"),
        (["set", "--date", "2026-02-01"], "needs SECONDS, or all of"),
        (["set", "0"], "must be from 1 to 604800"),
        (["set", "nan"], "must be a number"),
        (["set", "1e9"], "must be from 1 to 604800"),
        (["set", "604800.5"], "got 604800.5"),  # as given, not rounded into range
        (["set", "abc"], "invalid seconds"),
        (["set", "9", "--zone", "UTC"], "not both"),
        (["cancel", "tm-000000000000"], "no timer"),
        (["cancel"], "a timer id or --all"),
        (["list", "--owner", "../../etc"], "invalid owner"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    root: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    owner = [] if "--owner" in argv else ["--owner", OWNER]
    assert main(["timer", *argv, *owner]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert "Traceback" not in err and timers(root) == []


def test_too_many_timers_is_refused_with_the_list(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root.parent / ".specialists").mkdir(exist_ok=True)
    (root / "config.toml").write_text("[timers]\nmax = 2\n")
    for n in range(2):
        assert main(["timer", "set", str(60 + n), "--owner", OWNER]) == 0
    capsys.readouterr()
    assert main(["timer", "set", "90", "--owner", OWNER]) == 2
    err = capsys.readouterr().err
    assert "too many pending timers (2 of 2)" in err and len(timers(root)) == 2


def test_events_fire_what_is_due_and_show_without_taking(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The owner's process is gone; looking fires the overdue timer (late), shows it in the
    stable format, and leaves it for the owner's front unless --ack."""
    now = time.time()
    store = TimerStore(root, OWNER)
    store.set(int((now - 30) * 1000), now_ms=int((now - 40) * 1000), note="n", source=SRC)
    assert main(["events", "--owner", OWNER]) == 0
    out = capsys.readouterr().out
    assert "[specialists event] timer from sleep (c1)\n" in out and "(late by 30 s)" in out
    assert Inbox(root, OWNER).has_pending()
    assert main(["events", "--owner", OWNER, "--ack", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["kind"] == "timer"
    assert not Inbox(root, OWNER).has_pending()
    assert main(["events", "--owner", OWNER]) == 0
    assert "no pending events" in capsys.readouterr().err
    assert main(["events", "--owner", OWNER, "--all"]) == 0
    assert "late by 30 s" in capsys.readouterr().out


def test_events_show_control_characters_instead_of_running_them(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Inbox(root, OWNER).append("notice", SRC, "red \x1b[31malert\x07", source_id="x", seq=1)
    assert main(["events", "--owner", OWNER]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\e[31malert\\x07" in out


SRC = EventSource("sleep", "c1", {"seconds": 5})


def read_until(proc: subprocess.Popen[str], text: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:  # blocks on the pipe; the test timeout bounds it
        if text in line:
            return
    raise AssertionError(
        f"{text!r} never printed; stderr: {proc.stderr.read() if proc.stderr else ''}"
    )
