"""The native front of the agent tool table: real tools, guards on every call, yielding.

ScriptedModel drives the real NativeRunner (its loop thread, its tools, its settings); timers
are set on a FakeClock, so nothing here waits for a timer to come due.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.base.clock import FakeClock
from specialists.catalog.config import Config
from specialists.events.inbox import Inbox
from specialists.events.timers import TimerStore
from specialists.native.agent_table import GUIDANCE_HEADER
from specialists.native.messages import UserMessage
from specialists.native.model import ModelRequest, StreamEvent
from specialists.native.testing import (
    ScriptedModel,
    call,
    last_tool_results,
    reply,
    reply_events,
)
from specialists.runners.base import FollowUp, RunFinished, Steer
from specialists.runners.native import NativeRunner
from tests.unit.test_native_runner import collect, make_spec

OWNER = "job-1a2b3c4d"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "home" / var.lower()))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def start(
    tmp_path: Path, model: ScriptedModel, raw: dict[str, object] | None = None, **spec: object
) -> tuple[NativeRunner, FakeClock]:
    clock = FakeClock(start=1_700_000_000.0)
    runner = NativeRunner(config=Config(raw=raw or {}), clients={"test/main": model}, wall=clock)
    spec.setdefault("job_id", "1a2b3c4d")
    spec.setdefault("job_dir", tmp_path / ".specialists" / "jobs" / "1a2b3c4d")
    runner.start(make_spec(tmp_path, **spec))
    return runner, clock


def test_sleep_sets_a_timer_in_the_jobs_own_inbox_and_ends_the_run_without_a_model_call(
    tmp_path: Path,
) -> None:
    """R-T1 on the native front: the yielding call gets its result, then no second request;
    the run is reported as yielded (not an answer) and the timer belongs to job-<id>."""
    model = ScriptedModel([reply("Sleeping.", calls=[call("sleep", seconds=60, note="poll CI")])])
    runner, clock = start(tmp_path, model)
    finished = [e for e in collect(runner, RunFinished) if isinstance(e, RunFinished)]
    assert finished[0].yielded and finished[0].error is None
    assert len(model.requests) == 1
    request = model.requests[0]
    assert GUIDANCE_HEADER in request.system and request.system.startswith("sys")
    assert {"sleep", "sleep_until", "sleep_until_event", "timer_cancel"} <= {
        t.name for t in request.tools
    }
    (timer,) = TimerStore(tmp_path / ".specialists", OWNER).fold().pending()
    assert timer.due_ms == int((clock() + 60) * 1000) and timer.note == "poll CI"
    assert timer.source is not None and timer.source.tool == "sleep"


def test_an_event_follow_up_is_recorded_as_a_synthetic_user_message(tmp_path: Path) -> None:
    """The wake-up (FollowUp(synthetic=True)) is a user message of source "event" in the
    session, and the model's next request carries it."""
    model = ScriptedModel([reply(calls=[call("sleep_until_event")]), reply("Woken; done.")])
    runner, _ = start(tmp_path, model)
    collect(runner, RunFinished)
    runner.send(FollowUp("[specialists event] timer from sleep (c1)\n---\nwake", synthetic=True))
    events = collect(runner, RunFinished)
    (done,) = [e for e in events if isinstance(e, RunFinished)]
    assert done.text == "Woken; done." and not done.yielded
    last = model.requests[-1].items[-1]
    assert isinstance(last, UserMessage) and last.source == "event"
    session = (tmp_path / ".specialists/jobs/1a2b3c4d/session.jsonl").read_text()
    assert '"source":"event"' in session.replace(" ", "")


def test_a_failed_yielding_call_does_not_end_the_run(tmp_path: Path) -> None:
    """A sleep the table refuses (out of range) is an error result the model reads, and the
    run goes on to its answer."""
    bad = call("sleep", seconds=0)
    model = ScriptedModel([reply(calls=[bad]), reply("Fine, no sleep.")])
    runner, _ = start(tmp_path, model)
    (done,) = [e for e in collect(runner, RunFinished) if isinstance(e, RunFinished)]
    assert done.text == "Fine, no sleep." and not done.yielded
    assert (
        "error: argument 'seconds' must be between 1"
        in last_tool_results(model.requests[1])[bad.id]
    )
    assert TimerStore(tmp_path / ".specialists", OWNER).fold().pending() == []


def test_a_steer_waiting_at_the_yield_is_answered_first(tmp_path: Path) -> None:
    """Yielding would leave the steer unread: the loop makes one more call for it."""
    runners: list[NativeRunner] = []
    started = threading.Event()  # the loop may call the model before start() returns

    def steered(request: ModelRequest) -> Iterator[StreamEvent]:
        assert started.wait(30)
        runners[0].send(Steer("also this"))  # arrives while the turn is under way
        return reply_events(reply(calls=[call("sleep_until_event")]))

    model = ScriptedModel([steered, reply("Read it.")])
    runner, _ = start(tmp_path, model)
    runners.append(runner)
    started.set()
    (done,) = [e for e in collect(runner, RunFinished) if isinstance(e, RunFinished)]
    assert done.text == "Read it." and not done.yielded
    assert UserMessage("also this", source="steer") in model.requests[1].items


def test_the_bash_guard_blocks_a_long_sleep_with_the_cheap_escape(tmp_path: Path) -> None:
    """R-B1, R-B5: the default mode blocks; the reason names bg_run and sleep and says how to
    switch to warn; nothing ran."""
    marker = tmp_path / "work" / "ran"
    blocked = call("bash", command=f"sleep 600; touch {marker}")
    model = ScriptedModel([reply(calls=[blocked]), "ok"])
    runner, _ = start(tmp_path, model)
    collect(runner, RunFinished)
    text = last_tool_results(model.requests[1])[blocked.id]
    assert "bg_run" in text and "sleep" in text and "warn" in text
    assert not marker.exists()


def test_table_tools_can_be_left_out(tmp_path: Path) -> None:
    model = ScriptedModel(["plain"])
    runner, _ = start(tmp_path, model, options={"table_tools": False})
    collect(runner, RunFinished)
    assert "sleep" not in {t.name for t in model.requests[0].tools}
    assert GUIDANCE_HEADER not in model.requests[0].system
    assert not Inbox(tmp_path / ".specialists", OWNER).has_pending()


@pytest.mark.parametrize("thread", [False, True])
def test_child_tools_are_offered_to_thread_jobs_only(tmp_path: Path, thread: bool) -> None:
    """A thread job's agent can report and close (R-H5, R-H6); any other job cannot see them."""
    model = ScriptedModel(["plain"])
    runner, _ = start(tmp_path, model, thread=thread)
    collect(runner, RunFinished)
    names = {t.name for t in model.requests[0].tools}
    assert ({"report_to_parent", "close_thread"} <= names) is thread
    assert "sleep" in names


def test_the_thread_tools_are_agent_tools_only() -> None:
    """The thread ops are offered to models through the agent table: no command, no MCP op
    of their own (the MCP server lists them from the agent table)."""
    from specialists.features.threads.verbs import THREADS

    tools = {o.tool: o for o in THREADS.ops if o.tool}
    assert set(tools) == {
        "spawn_thread", "report_to_parent", "close_thread", "send_message_to_child",
        "squash_sandbox", "assess_coverage",
    }  # fmt: skip
    assert all(not o.cli and o.power is not None for o in tools.values())
    assert tools["squash_sandbox"].power == "write" and tools["close_thread"].yields
    assert {n for n, o in tools.items() if o.scope == "child"} == {
        "report_to_parent",
        "close_thread",
    }
