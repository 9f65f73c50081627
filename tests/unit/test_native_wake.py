"""The native front end to end in one process: the real Supervisor and NativeRunner, a
ScriptedModel, timers on a FakeClock (the supervisor's and the timers' time; the loop thread
runs in real time). A five-minute sleep costs no real five minutes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.base.clock import FakeClock
from specialists.catalog.config import Config
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.native.messages import UserMessage
from specialists.native.model import ModelRequest, StreamEvent
from specialists.native.testing import ScriptedModel, call, reply, reply_events
from specialists.runners.native import NativeRunner
from specialists.store.jobs import JobStore
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job
from tests.support.supervising import Harness


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def supervise(tmp_path: Path, model: ScriptedModel, **record: object) -> tuple[Harness, str]:
    h = Harness(tmp_path)
    h.clock = FakeClock(start=1_800_000_000.0)  # wall-clock-like, for the timers
    rec, lock = new_job(h.store, tmp_path, runner="native", model="test/main", **record)
    h.job_id = rec.id
    runner = NativeRunner(config=Config(), clients={"test/main": model}, wall=h.clock)
    supervisor = Supervisor(
        h.store,
        rec,
        runner,
        clock=h.clock,
        sleep=h.clock.sleep,
        wall=h.clock,
        handle_signals=False,
    )
    try:
        status = supervisor.run()
    finally:
        lock.release()
    return h, status.status


def test_a_long_sleep_yields_and_the_timer_wakes_the_same_session(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply("Sleeping on it.", calls=[call("sleep", seconds=300, note="rerun flaky")]),
            reply("Woke up after five minutes: rerunning."),
        ]
    )
    h, final = supervise(tmp_path, model, idle_timeout_ms=120_000)
    assert final == "done" and h.result() == "Woke up after five minutes: rerunning."
    _, second = model.requests  # the yield cost no model call
    assert h.clock() >= 1_800_000_000.0 + 300
    woken = second.items[-1]
    assert isinstance(woken, UserMessage) and woken.source == "event"
    assert woken.text.startswith("[specialists event] timer from sleep (call_")
    assert woken.text.endswith("fired: rerun flaky")
    # The same session: the sleep call and its result come before the wake-up.
    assert [i.kind for i in second.items[-3:]] == ["tool_call", "tool_result", "user"]
    owner = f"job-{h.job_id}"
    assert not Inbox(h.store.root, owner).has_pending()
    assert TimerStore(h.store.root, owner).fold().pending() == []


def test_a_duplicated_event_reaches_the_model_once(tmp_path: Path) -> None:
    """A producer that retried after a crash wrote one event twice (same id); the wake-up
    carries it once, and an event addressed to another owner is not delivered here."""
    root = tmp_path / ".specialists"

    def plant(request: ModelRequest) -> Iterator[StreamEvent]:
        (job_id,) = JobStore(root, news=None).list_ids()
        inbox = Inbox(root, f"job-{job_id}")
        for _ in range(2):
            inbox.append("job_exit", SRC, "exit 0 after 1.2 s", source_id="bg-1.ab", seq=1)
        Inbox(root, "job-00000000").append("notice", SRC, "not yours", source_id="x", seq=1)
        return reply_events(reply(calls=[call("sleep_until_event")]))

    model = ScriptedModel([plant, reply("saw the exit once")])
    h, final = supervise(tmp_path, model)
    assert final == "done" and h.result() == "saw the exit once"
    woken = model.requests[1].items[-1]
    assert isinstance(woken, UserMessage)
    assert woken.text.count("[specialists event]") == 1 and "not yours" not in woken.text
    assert woken.text.startswith("[specialists event] job_exit from bg_run (c1)")


SRC = EventSource("bg_run", "c1")
