"""The agent tool table: descriptions, settings, and the timer tools end to end on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.events.inbox import Inbox
from specialists.events.timers import TimerStore
from specialists.native.agent_table import TOOLS, prompt_guidance, tool_named
from specialists.native.agent_tools import (
    MAX_DESCRIPTION,
    AgentTool,
    Caller,
    Reply,
    ToolCall,
    call_tool,
)
from specialists.native.tool_settings import Settings, settings_from_config

T0 = 1_800_000_000.0


def caller(tmp_path: Path, **kw: object) -> Caller:
    return Caller(
        state_root=tmp_path / ".specialists",
        owner="job-0123abcd",
        cwd=tmp_path,
        clock=lambda: T0,
        **kw,  # type: ignore[arg-type]
    )


def run(tool: str, args: dict[str, object], who: Caller) -> Reply:
    found = tool_named(tool)
    assert isinstance(found, AgentTool)
    return call_tool(found, ToolCall(args, who, call_id="c1"))


def test_every_description_is_short_and_tools_are_unique() -> None:
    names = [t.name for t in TOOLS]
    assert len(names) == len(set(names))
    for tool in TOOLS:
        assert len(tool.description) < MAX_DESCRIPTION, tool.name
        assert tool.schema["type"] == "object"


def test_the_guidance_says_never_block_never_poll_never_fabricate() -> None:
    text = prompt_guidance()
    for phrase in ["dispatch it and yield", "Never poll", "[specialists event]", "fabricate"]:
        assert phrase in text


def test_sleep_sets_a_durable_timer_and_yields(tmp_path: Path) -> None:
    who = caller(tmp_path)
    reply = run("sleep", {"seconds": 30, "note": "build"}, who)
    assert reply.yields and not reply.is_error
    store = TimerStore(who.state_root, who.owner)
    (timer,) = store.pending()
    assert timer.due_ms == int((T0 + 30) * 1000) and timer.note == "build"
    assert timer.source.tool == "sleep" and timer.source.call_id == "c1"
    store.fire_due(timer.due_ms)
    (event,) = Inbox(who.state_root, who.owner).take().events
    assert event.source.args == {"seconds": 30, "note": "build"}


def test_sleep_until_a_past_time_fires_at_once(tmp_path: Path) -> None:
    who = caller(tmp_path)
    reply = run("sleep_until", {"date": "2020-01-01", "time": "00:00", "timezone": "UTC"}, who)
    assert "fires at once" in reply.text
    assert TimerStore(who.state_root, who.owner).fire_due(int(T0 * 1000))


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("sleep", {}, "missing required argument 'seconds'"),
        ("sleep", {"seconds": 0}, "between 1 and 604,800"),
        ("sleep", {"seconds": 604801}, "between 1 and 604,800"),
        ("sleep", {"seconds": True}, "must be a number"),
        ("sleep", {"seconds": float("nan")}, "must be a number"),
        ("sleep", {"seconds": 5, "extra": 1}, "unknown argument"),
        ("sleep", {"seconds": 5, "note": "x\0y"}, "NUL"),
        ("sleep_until", {"date": "2026-02-30", "time": "10:00", "timezone": "UTC"}, "no such day"),
        (
            "sleep_until",
            {"date": "2026-01-01", "time": "10:00", "timezone": "Nowhere/X"},
            "unknown time zone",
        ),
        ("sleep_until", {"date": "9999-01-01", "time": "10:00", "timezone": "UTC"}, "ten years"),
        ("timer_cancel", {"id": "tm-000000000000"}, "no timer"),
        ("timer_cancel", {"id": "tm-1", "all": True}, "a timer id or --all"),
    ],
)
def test_bad_arguments_are_one_clear_error_and_change_nothing(
    tmp_path: Path, tool: str, args: dict[str, object], message: str
) -> None:
    who = caller(tmp_path)
    reply = run(tool, args, who)
    assert reply.is_error and message in reply.text, reply
    assert TimerStore(who.state_root, who.owner).pending() == []


def test_too_many_timers_are_refused(tmp_path: Path) -> None:
    settings = settings_from_config({"timers": {"max": 1}})
    who = caller(tmp_path, settings=settings)
    assert not run("sleep", {"seconds": 5}, who).is_error
    assert "too many pending timers" in run("sleep", {"seconds": 5}, who).text


def test_timer_cancel_twice_is_a_no_op_that_reports_the_state(tmp_path: Path) -> None:
    who = caller(tmp_path)
    timer_id = run("sleep", {"seconds": 5}, who).data["timer_id"]
    assert "cancelled" in run("timer_cancel", {"id": timer_id}, who).text
    again = run("timer_cancel", {"id": timer_id}, who)
    assert "already cancelled; nothing changed" in again.text
    run("sleep", {"seconds": 5}, who)
    run("sleep", {"seconds": 6}, who)
    assert run("timer_cancel", {"all": True}, who).data["cancelled"]


def test_settings_follow_the_seed_and_refuse_bad_values() -> None:
    assert Settings().jobs.max == 8 and Settings().bash.guard == "block"
    s = settings_from_config({"jobs": {"watchEventsPerMin": 12}, "bash": {"guard": "warn"}})
    assert s.jobs.watch_events_per_min == 12 and s.bash.guard == "warn"
    for bad in [
        {"jobs": {"max": -1}},
        {"jobs": {"max": True}},
        {"jobs": {"max": 10**12}},
        {"jobs": {"nope": 1}},
        {"jobs": 3},
        {"bash": {"guard": "maybe"}},
        {"bash": {"guard": 1}},
    ]:
        with pytest.raises(ConfigError):
            settings_from_config(bad)
