"""A timer a person sets at the terminal reaches them (issue 22 item 2): their next
`specialists` command fires it and says so on stderr, once; `timer set --wait` stays until it
fires and prints it; `timer set` prints the id alone. Never for a session's timers (its own
front delivers them), never into a pipe (a script's stderr), never twice."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from specialists.cli import tell
from specialists.cli.cmd_events import owner_key
from specialists.cli.main import main
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.project import Project
from specialists.timers.store import TimerStore


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch) -> str:
    """A person at a terminal: no session, no agent above (SPECIALISTS_OWNER=none)."""
    monkeypatch.setenv("SPECIALISTS_OWNER", "none")
    return owner_key(None, Project())


def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"


def due_timer(owner: str, note: str) -> str:
    now = int(time.time() * 1000)
    source = EventSource("sleep", "cli", {})
    return TimerStore(root(), owner).set(now - 1, now_ms=now - 1000, note=note, source=source).id


def test_timer_set_prints_the_id_alone(person, capsys):
    assert main(["timer", "set", "600", "--note", "check CI"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("tm-") and out.strip() == out.strip().split()[0]
    assert out.endswith("\n") and f"timer {out.strip()} due" in err and "check CI" in err
    [timer] = TimerStore(root(), person).fold().pending()
    assert timer.id == out.strip()


def test_the_next_command_fires_and_tells_a_due_timer_once(person, monkeypatch, capsys):
    timer_id = due_timer(person, "check CI")
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    assert main(["status"]) == 0
    assert f"[specialists] Timer {timer_id} fired: check CI" in screen.getvalue()
    assert not Inbox(root(), person).has_pending()  # taken: told here
    screen.truncate(0)
    assert main(["status"]) == 0
    assert "[specialists]" not in screen.getvalue()  # never twice
    capsys.readouterr()


def test_a_long_backlog_is_five_lines_and_a_count(person):
    for n in range(8):
        due_timer(person, f"note {n}")
    screen = Terminal()
    tell.tell_person(Project(), screen)
    lines = screen.getvalue().splitlines()
    assert len(lines) == 6 and lines[-1] == "[specialists] … and 3 more (specialists events --all)"


def test_not_told_into_a_pipe_nor_for_a_session_nor_after_events(person, monkeypatch, capsys):
    due_timer(person, "tea")
    piped = io.StringIO()  # a script's stderr: left for `specialists events`
    tell.tell_person(Project(), piped)
    assert piped.getvalue() == "" and Inbox(root(), person).pending().events == ()  # not fired
    monkeypatch.setenv("SPECIALISTS_OWNER", "claude-s1")  # a Claude Code session: its hooks
    screen = Terminal()
    tell.tell_person(Project(), screen)
    assert screen.getvalue() == ""
    monkeypatch.setenv("SPECIALISTS_OWNER", "none")
    monkeypatch.setattr("sys.stderr", screen)
    assert main(["events"]) == 0  # shows the inbox itself: nothing told after it
    assert "[specialists]" not in screen.getvalue()
    capsys.readouterr()


def test_control_characters_in_a_note_are_shown_not_obeyed(person):
    due_timer(person, "\x1b]0;pwned\x07\x1b[2Jred")
    screen = Terminal()
    tell.tell_person(Project(), screen)
    assert "\x1b" not in screen.getvalue() and "\\e]0;pwned" in screen.getvalue()


def test_a_damaged_inbox_is_one_warning_and_the_command_still_succeeds(person, monkeypatch):
    folder = root() / "owners" / person
    folder.mkdir(parents=True)
    os.mkfifo(folder / "events.jsonl")  # a planted FIFO must not hang the command
    os.mkfifo(folder / "timers.jsonl")
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    assert main(["status"]) == 0
    assert screen.getvalue().count("warning: could not read your events") == 1


def test_timer_set_wait_stays_until_it_fires_then_prints_it_and_takes_it(person, capsys):
    started = time.monotonic()
    assert main(["timer", "set", "1", "--note", "stretch", "--wait"]) == 0
    assert time.monotonic() - started >= 0.9
    out, err = capsys.readouterr()
    assert "waiting (Ctrl-C leaves it set)" in err
    assert out.startswith("timer tm-") and "fired at" in out and out.rstrip().endswith("stretch")
    assert Inbox(root(), person).pending().events == ()  # no other front repeats it


def test_timer_set_wait_on_a_timer_cancelled_meanwhile_is_exit_1(person, monkeypatch, capsys):
    from specialists.cli import cmd_timer

    real_sleep = time.sleep

    def cancel_then_sleep(seconds: float) -> None:
        assert main(["timer", "cancel", "--all"]) == 0
        real_sleep(0)

    monkeypatch.setattr(cmd_timer.time, "sleep", cancel_then_sleep)
    assert main(["timer", "set", "600", "--wait"]) == 1
    assert "was cancelled before it fired" in capsys.readouterr().err
