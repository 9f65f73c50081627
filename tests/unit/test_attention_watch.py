"""The pure attention core (attention/watch.py) and its settings, on a fake clock."""

from __future__ import annotations

import pytest

from specialists.base.clock import FakeClock
from specialists.base.errors import UserError
from specialists.features.attention.settings import (
    OFF,
    QUIET_AFTER_MS,
    TOOL_OPEN_AFTER_MS,
    AttentionSettings,
    WatchdogSettings,
    parse_after,
    resolve_attention,
    resolve_watchdog,
)
from specialists.features.attention.watch import (
    MAX_OPEN,
    MAX_RAISED,
    AttentionWatch,
    Failures,
    Quiet,
    ToolOpen,
    mutating_tools,
)
from specialists.features.attention.watchdog import (
    Busy,
    Review,
    ReviewBudgetSpent,
    Unchanged,
    Watchdog,
)

SETTINGS = AttentionSettings(quiet_ms=60_000, tool_ms=120_000, failures=3)


def watch(clock: FakeClock, settings: AttentionSettings = SETTINGS, runner: str = "pi"):
    return AttentionWatch(settings, mutating_tools(runner), clock())


def test_quiet_is_raised_once_per_quiet_spell():
    """Raised once when quiet passes the threshold, not again while quiet lasts; activity
    ends the state (saw says so) and a new quiet spell raises again."""
    clock = FakeClock()
    w = watch(clock)
    w.saw(clock(), "thinking")
    clock.advance(59)
    assert w.due(clock(), running=True) is None
    clock.advance(1)
    item = w.due(clock(), running=True)
    assert isinstance(item, Quiet) and item.quiet_ms == 60_000 and item.last_event == "thinking"
    clock.advance(600)
    assert w.due(clock(), running=True) is None  # still the same state
    assert w.saw(clock(), "text") is True  # the raised state ended
    assert w.saw(clock(), "text") is False
    clock.advance(60)
    assert isinstance(w.due(clock(), running=True), Quiet)


def test_quiet_does_not_count_between_runs():
    """A job waiting for a follow-up or for events is not quiet: its clock restarts."""
    clock = FakeClock()
    w = watch(clock)
    clock.advance(3600)
    assert w.due(clock(), running=False) is None
    clock.advance(59)
    assert w.due(clock(), running=True) is None


def test_the_agents_start_up_is_not_quiet_time():
    """Issue 21 item 17: an agent slow to start (pi loading on a busy machine) is not quiet;
    the clock runs from the run's first agent event, and again from the next run's."""
    clock = FakeClock()
    w = watch(clock)
    clock.advance(3600)  # an hour of start-up, the run going, nothing heard yet
    assert w.due(clock(), running=True) is None
    w.saw(clock(), "thinking")  # the agent's first event
    clock.advance(59)
    assert w.due(clock(), running=True) is None
    clock.advance(1)
    assert isinstance(w.due(clock(), running=True), Quiet)
    w.saw(clock(), "text")
    w.run_ended()  # the run answered; a follow-up starts another (a new process, maybe)
    clock.advance(600)
    assert w.due(clock(), running=True) is None
    w.saw(clock(), "thinking")
    clock.advance(60)
    item = w.due(clock(), running=True)
    assert isinstance(item, Quiet) and item.quiet_ms == 60_000


def test_an_open_tool_call_is_raised_once_and_holds_quiet_back():
    """While a call is open the quiet trigger waits; the call itself is raised once at its
    threshold, and its end clears the state."""
    clock = FakeClock()
    w = watch(clock)
    w.saw(clock(), "toolcall", "bash")
    clock.advance(119)
    assert w.due(clock(), running=True) is None  # past the quiet threshold: no Quiet
    assert w.open_tool == ("bash", clock() - 119)
    clock.advance(1)
    item = w.due(clock(), running=True)
    assert isinstance(item, ToolOpen) and item.tool == "bash" and item.open_ms == 120_000
    clock.advance(1000)
    assert w.due(clock(), running=True) is None
    assert w.saw(clock(), "tool_execution_end", "bash") is True
    assert w.open_tool is None


def test_the_next_open_call_is_raised_on_its_own():
    clock = FakeClock()
    w = watch(clock)
    w.saw(clock(), "toolcall", "bash")
    clock.advance(120)
    assert isinstance(w.due(clock(), running=True), ToolOpen)
    w.saw(clock(), "tool_execution_end", "bash")
    w.saw(clock(), "toolcall", "read")
    clock.advance(120)
    item = w.due(clock(), running=True)
    assert isinstance(item, ToolOpen) and item.tool == "read"


def test_turn_end_and_run_end_close_calls_left_open():
    """An aborted call never reports its end: the turn's or run's end closes it."""
    clock = FakeClock()
    w = watch(clock)
    w.saw(clock(), "toolcall", "bash")
    w.saw(clock(), "turn_end")
    assert w.open_tool is None
    w.saw(clock(), "toolcall", "bash")
    w.run_ended()
    assert w.open_tool is None


def test_three_failed_mutating_calls_in_a_row_raise_once_per_streak():
    """Failures of mutating tools count; a read failing does not break or extend the
    streak; a successful mutating call ends it; raised once per streak."""
    clock = FakeClock()
    w = watch(clock)
    for tool in ("edit", "bash"):
        w.saw(clock(), "tool_execution_end", tool, error=True)
    w.saw(clock(), "tool_execution_end", "read", error=True)  # not mutating
    w.saw(clock(), "tool_execution_end", "read")  # not mutating either
    assert w.due(clock(), running=True) is None
    w.saw(clock(), "tool_execution_end", "write", error=True)
    item = w.due(clock(), running=True)
    assert isinstance(item, Failures) and item.tools == ("edit", "bash", "write")
    w.saw(clock(), "tool_execution_end", "edit", error=True)
    assert w.due(clock(), running=True) is None  # the same streak
    assert w.saw(clock(), "tool_execution_end", "edit") is True  # success ends it
    for _ in range(3):
        w.saw(clock(), "tool_execution_end", "bash", error=True)
    assert isinstance(w.due(clock(), running=True), Failures)


def test_a_success_between_failures_breaks_the_streak():
    clock = FakeClock()
    w = watch(clock)
    for error in (True, True, False, True, True):
        w.saw(clock(), "tool_execution_end", "bash", error=error)
    assert w.due(clock(), running=True) is None


def test_mutating_tools_follow_the_runner():
    """Claude Code's names are capitalised; the command runner has no tools."""
    clock = FakeClock()
    w = watch(clock, runner="claude")
    for _ in range(3):
        w.saw(clock(), "tool_execution_end", "bash", error=True)  # not Claude's name
    assert w.due(clock(), running=True) is None
    for _ in range(3):
        w.saw(clock(), "tool_execution_end", "Edit", error=True)
    assert isinstance(w.due(clock(), running=True), Failures)
    assert mutating_tools("command") == frozenset()


def test_off_raises_nothing():
    clock = FakeClock()
    w = watch(clock, OFF)
    w.saw(clock(), "toolcall", "bash")
    for _ in range(5):
        w.saw(clock(), "tool_execution_end", "bash", error=True)
    clock.advance(10**6)
    assert w.due(clock(), running=True) is None


def test_a_flood_of_events_raises_at_most_max_raised():
    """Adversarial: an agent alternating quiet spells and bursts, failure streaks and
    successes, and more open calls than tracked, never gets more than MAX_RAISED notices."""
    clock = FakeClock()
    w = watch(clock)
    raised = 0
    for i in range(10_000):
        w.saw(clock(), "tool_execution_end", "bash", error=i % 4 != 3)
        w.saw(clock(), "toolcall", f"t{i}")
        clock.advance(200)
        if w.due(clock(), running=True) is not None:
            raised += 1
    assert raised == MAX_RAISED
    assert len(w._open) <= MAX_OPEN


# --- settings ---------------------------------------------------------------------------------


def test_default_quiet_threshold_scales_with_thinking():
    assert resolve_attention(None, None, None, None).quiet_ms == QUIET_AFTER_MS
    assert resolve_attention(None, None, None, "high").quiet_ms == 2 * QUIET_AFTER_MS
    assert resolve_attention(None, None, None, "xhigh").quiet_ms == 3 * QUIET_AFTER_MS
    # the tool threshold is not thinking
    assert resolve_attention(None, None, None, "xhigh").tool_ms == TOOL_OPEN_AFTER_MS


def test_layers_override_key_by_key_and_the_run_wins():
    config = {"after": "10m", "failures": 5}
    definition = {"tool_after": "off"}
    got = resolve_attention(config, definition, None, "high")
    assert got == AttentionSettings(quiet_ms=600_000, tool_ms=None, failures=5)  # not scaled
    assert resolve_attention(config, definition, "90s", None).quiet_ms == 90_000
    assert resolve_attention(config, definition, "off", None) == OFF
    assert resolve_attention("off", None, None, None) == OFF
    assert resolve_attention({"enabled": False}, None, None, None) == OFF
    # a definition can turn back on what config turned off
    assert resolve_attention("off", {"after": "1m"}, None, None).quiet_ms == 60_000


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("5 minutes", "invalid duration"),
        ("200ms", "under a second"),
        ("30d", "longer than a week"),
        ([1], "expected a duration"),
        ("9" * 400, "longer than a week"),  # an infinite float, not an OverflowError
        ("9" * 400 + "d", "longer than a week"),
    ],
)
def test_bad_thresholds_are_one_clear_error(value, problem):
    with pytest.raises(UserError, match=problem):
        parse_after(value, "--attention-after")


def test_bad_tables_name_the_field():
    with pytest.raises(UserError, match=r"execution.attention: unknown key 'aftr'"):
        resolve_attention(None, {"aftr": "5m"}, None, None)
    with pytest.raises(UserError, match=r"failures: expected a whole number"):
        resolve_attention({"failures": "three"}, None, None, None)
    for enabled in ("false", 0, "no"):  # not silently on: the user meant it off
        with pytest.raises(UserError, match=r"attention.enabled: expected true or false"):
            resolve_attention(None, {"enabled": enabled}, None, None)
    with pytest.raises(UserError, match=r"reviewer: expected a specialist name"):
        resolve_watchdog(None, {"reviewer": "../x"}, None)
    with pytest.raises(UserError, match=r"max_reviews: expected 1 to"):
        resolve_watchdog({"max_reviews": 0}, None, None)


def test_watchdog_is_opt_in_and_layers():
    assert resolve_watchdog(None, None, None).enabled is False
    assert (
        resolve_watchdog({"enabled": True, "reviewer": "critic"}, None, None).reviewer == "critic"
    )
    assert resolve_watchdog({"enabled": True}, False, None).enabled is False
    assert resolve_watchdog(None, True, False).enabled is False
    assert resolve_watchdog(None, None, True).enabled is True


def test_a_review_job_is_never_watched():
    """Whatever its record says: no review of the reviewer's own job."""
    record = WatchdogSettings(enabled=True, reviews="1a2b3c4d").to_dict()
    assert WatchdogSettings.of_record(record).enabled is False


def test_settings_round_trip_through_the_record():
    s = AttentionSettings(quiet_ms=1000, tool_ms=None, failures=2)
    assert AttentionSettings.of_record(s.to_dict()) == s
    assert AttentionSettings.of_record({}) == AttentionSettings()


# --- the watchdog's decision ------------------------------------------------------------------


def test_watchdog_reviews_a_change_once_and_never_an_unchanged_or_reverted_tree():
    dog = Watchdog(WatchdogSettings(enabled=True, max_reviews=2))
    dog.began("A")
    assert dog.turn_ended("A", review_active=False) == Unchanged()
    decision = dog.turn_ended("B", review_active=False)
    assert decision == Review("A", "B", 1)
    dog.launched(decision, "r1")
    assert dog.turn_ended("B", review_active=True) == Unchanged()  # reverted back to B
    assert dog.turn_ended("C", review_active=True) == Busy("r1")
    decision = dog.turn_ended("D", review_active=False)  # C and D reviewed together
    assert decision == Review("B", "D", 2)
    dog.launched(decision, "r2")
    assert dog.turn_ended("E", review_active=False) == ReviewBudgetSpent(2, first=True)
    assert dog.turn_ended("F", review_active=False) == ReviewBudgetSpent(2, first=False)
