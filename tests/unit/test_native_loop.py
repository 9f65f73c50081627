"""The agent loop driven by ScriptedModel: no network, no SDK."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.native.calling import ModelSlot, RetryPolicy
from specialists.native.events import LoopEvent, LoopFinished, Progress, Spent, TextOut
from specialists.native.loop import AgentLoop, LoopSettings
from specialists.native.messages import AssistantText, ToolCall, ToolResult, UserMessage
from specialists.native.model import (
    Done,
    ModelError,
    ModelInfo,
    ModelRequest,
    Prices,
    StreamEvent,
    TextDelta,
)
from specialists.native.session import INTERRUPTED_TEXT, Session
from specialists.native.testing import ScriptedModel, call, reply
from specialists.native.tools import ToolContext, tools_for_permission

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_s=0.0, jitter=0.0)


class Harness:
    def __init__(
        self,
        tmp_path: Path,
        *models: ScriptedModel,
        permission: str = "MEDIUM",
        session: Session | None = None,
        **settings: object,
    ) -> None:
        self.work = tmp_path / "work"
        self.work.mkdir(exist_ok=True)
        self.job = tmp_path / "job"
        self.events: list[LoopEvent] = []
        self.session = session or Session.create(self.job / "session.jsonl")
        slots = [
            ModelSlot(
                ModelInfo(f"test/m{i}", "test", f"m{i}", prices=Prices(1.0, 2.0)),
                (lambda m=m: m),
            )
            for i, m in enumerate(models)
        ]
        settings.setdefault("retry", FAST_RETRY)
        self.loop = AgentLoop(
            session=self.session,
            models=slots,
            tools=tools_for_permission(permission),
            tool_context=ToolContext(cwd=self.work, spill_dir=self.job / "spill"),
            settings=LoopSettings(system_prompt="be brief", **settings),  # type: ignore[arg-type]
            emit=self.events.append,
        )

    def kinds(self) -> list[str]:
        return [e.event for e in self.events if isinstance(e, Progress)]

    def results(self) -> list[ToolResult]:
        return [i for i in self.session.items if isinstance(i, ToolResult)]


def test_text_reply_streams_and_finishes(tmp_path: Path) -> None:
    model = ScriptedModel([reply("Hello there, this is a longer answer.")])
    h = Harness(tmp_path, model)
    finished = h.loop.run("hi")
    assert finished == LoopFinished("Hello there, this is a longer answer.", None, 1)
    assert "".join(e.text for e in h.events if isinstance(e, TextOut)) == finished.text
    assert model.requests[0].system == "be brief"
    assert model.requests[0].items == (UserMessage("hi"),)
    spent = [e for e in h.events if isinstance(e, Spent)]
    assert spent[0].usage.input_tokens == 10
    assert spent[0].cost_usd == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    assert h.events[-1] == finished


def test_tool_call_round_trip(tmp_path: Path) -> None:
    model = ScriptedModel(
        [reply("writing", calls=[call("write", path="a.txt", content="x")]), reply("done")]
    )
    h = Harness(tmp_path, model)
    assert h.loop.run("make a file").text == "done"
    assert (h.work / "a.txt").read_text() == "x"
    second = model.requests[1]
    assert [i.kind for i in second.items] == ["user", "assistant", "tool_call", "tool_result"]
    assert h.kinds().count("tool_execution") == 1
    assert "toolcall" in h.kinds() and "turn_end" in h.kinds()


def test_unknown_tool_gets_error_result_and_loop_continues(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("teleport", to="mars")]), reply("ok, no teleport")])
    h = Harness(tmp_path, model)
    finished = h.loop.run("go")
    assert finished.error is None and finished.text == "ok, no teleport"
    (result,) = h.results()
    assert result.is_error and "unknown tool 'teleport'" in result.text


def test_bad_tool_arguments_become_error_result(tmp_path: Path) -> None:
    bad = ToolCall("c1", "read", {}, arguments_error="not valid JSON")
    model = ScriptedModel([reply(calls=[bad, call("read")]), reply("fine")])
    h = Harness(tmp_path, model)
    assert h.loop.run("x").text == "fine"
    first, second = h.results()
    assert first.is_error and "invalid arguments" in first.text
    assert second.is_error and "path" in second.text


def test_tool_outside_permission_tier_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("write", path="a", content="x")]), reply("ok")])
    h = Harness(tmp_path, model, permission="READ_ONLY")
    h.loop.run("x")
    assert not (h.work / "a").exists()
    assert "unknown tool 'write'" in h.results()[0].text
    assert [t.name for t in model.requests[0].tools] == ["read", "bash", "grep", "find", "ls"]


def test_max_turns_ends_with_error(tmp_path: Path) -> None:
    model = ScriptedModel([reply(f"turn {n}", calls=[call("ls")]) for n in range(5)])
    h = Harness(tmp_path, model, max_turns=2)
    finished = h.loop.run("loop forever")
    assert finished.error is not None and "max_turns=2" in finished.error
    assert finished.text == "turn 1"
    assert len(model.requests) == 2


def test_oversized_prompt_is_spilled_not_sent_whole(tmp_path: Path) -> None:
    model = ScriptedModel([reply("read it")])
    h = Harness(tmp_path, model, user_max_chars=1000)
    h.loop.run("x" * 50_000)
    sent = model.requests[0].items[0]
    assert isinstance(sent, UserMessage) and len(sent.text) < 10_000
    assert "spill" in sent.text


def test_transient_errors_retry_then_succeed(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ModelError("boom", category="transient"), ModelError("slow", category="throttled"), "ok"]
    )
    h = Harness(tmp_path, model)
    assert h.loop.run("x") == LoopFinished("ok", None, 1)
    retries = [e for e in h.events if isinstance(e, Progress) and e.event == "retry"]
    assert [r.fields["attempt"] for r in retries] == [1, 2]


def test_retries_exhausted_fall_back_to_second_model(tmp_path: Path) -> None:
    primary = ScriptedModel([ModelError("down", category="transient")] * 3)
    fallback = ScriptedModel(["from fallback"])
    h = Harness(tmp_path, primary, fallback)
    assert h.loop.run("x").text == "from fallback"
    assert len(primary.requests) == 3  # 1 + max_retries
    assert fallback.requests[0].model == "m1"
    notices = [
        e.fields["message"] for e in h.events if isinstance(e, Progress) and e.event == "notice"
    ]
    assert any("falling back to test/m1" in n for n in notices)
    line = (h.job / "session.jsonl").read_text().splitlines()[-1]
    assert json.loads(line)["model"] == "test/m1"


@pytest.mark.parametrize("category", ["config", "overflow", "fatal"])
def test_non_retryable_errors_stop_at_once_without_fallback(tmp_path: Path, category: str) -> None:
    primary = ScriptedModel([ModelError(f"{category} problem", category=category)])  # type: ignore[arg-type]
    fallback = ScriptedModel(["never"])
    h = Harness(tmp_path, primary, fallback)
    finished = h.loop.run("x")
    assert finished.error == f"{category} problem"
    assert len(primary.requests) == 1 and not fallback.requests
    assert "retry" not in h.kinds()


def test_all_models_failing_gives_one_clear_error(tmp_path: Path) -> None:
    a = ScriptedModel([ModelError("a down", category="transient")] * 3)
    b = ScriptedModel([ModelError("b down", category="throttled")] * 3)
    h = Harness(tmp_path, a, b)
    finished = h.loop.run("x")
    assert finished.error is not None
    assert "b down" in finished.error and "tried test/m0, test/m1" in finished.error
    assert "\n" not in finished.error


def test_stream_without_done_is_an_error(tmp_path: Path) -> None:
    def cut(_req: ModelRequest) -> Iterator[StreamEvent]:
        yield TextDelta("partial")

    model = ScriptedModel([cut, cut, cut])
    h = Harness(tmp_path, model)
    finished = h.loop.run("x")
    assert finished.error is not None and "ended before" in finished.error


def _blocking(gate: threading.Event, started: threading.Event):  # type: ignore[no-untyped-def]
    def stream(_req: ModelRequest) -> Iterator[StreamEvent]:
        started.set()
        gate.wait(10)
        yield TextDelta("late")
        yield Done("end")

    return stream


def test_abort_during_stream_returns_promptly(tmp_path: Path) -> None:
    gate, started = threading.Event(), threading.Event()
    model = ScriptedModel([_blocking(gate, started)])
    h = Harness(tmp_path, model)
    out: list[LoopFinished] = []
    t = threading.Thread(target=lambda: out.append(h.loop.run("x")))
    t.start()
    assert started.wait(5)
    h.loop.abort()
    t.join(2)
    gate.set()
    assert not t.is_alive(), "abort must not wait for the model"
    assert out[0].error == "aborted"


def test_steer_during_final_answer_triggers_another_turn(tmp_path: Path) -> None:
    h_ref: list[Harness] = []

    def answer_and_get_steered(_req: ModelRequest) -> Iterator[StreamEvent]:
        h_ref[0].loop.steer("also do this")
        yield TextDelta("first answer")
        yield Done("end")

    model = ScriptedModel([answer_and_get_steered, "second answer"])
    h = Harness(tmp_path, model)
    h_ref.append(h)
    assert h.loop.run("x").text == "second answer"
    assert model.requests[1].items[-1] == UserMessage("also do this", source="steer")


def test_resume_after_crash_closes_interrupted_call(tmp_path: Path) -> None:
    job = tmp_path / "job"
    first = Session.create(job / "session.jsonl")
    first.append([UserMessage("do it")])
    first.append([AssistantText("running"), ToolCall("c1", "bash", {"command": "touch x"})])
    first.close()  # the process died here: the call is recorded, its result is not
    model = ScriptedModel(["I see it was interrupted"])
    h = Harness(tmp_path, model, session=Session.load(job / "session.jsonl"))
    finished = h.loop.run(None)
    assert finished.text == "I see it was interrupted"
    assert not (h.work / "x").exists(), "an interrupted call is not re-run"
    items = model.requests[0].items
    assert items[-1] == ToolResult("c1", "bash", INTERRUPTED_TEXT, is_error=True)
    assert "notice" in h.kinds()


def test_continue_session_with_new_prompt(tmp_path: Path) -> None:
    model = ScriptedModel(["first", "second"])
    h = Harness(tmp_path, model)
    h.loop.run("one")
    h.session.close()
    again = Harness(tmp_path, model, session=Session.load(h.job / "session.jsonl"))
    assert again.loop.run("two").text == "second"
    assert [i.kind for i in model.requests[1].items] == ["user", "assistant", "user"]


def test_run_on_a_finished_session_without_prompt_does_nothing(tmp_path: Path) -> None:
    model = ScriptedModel(["only"])
    h = Harness(tmp_path, model)
    h.loop.run("one")
    assert h.loop.run(None) == LoopFinished("only", None, 0)
    assert len(model.requests) == 1


def test_breaker_open_skips_to_fallback(tmp_path: Path) -> None:
    from specialists.native.breaker import BreakerConfig, CircuitBreaker

    primary = ScriptedModel([ModelError("down", category="transient")] * 10)
    fallback = ScriptedModel(["fb1", "fb2"])
    h = Harness(tmp_path, primary, fallback, retry=RetryPolicy(max_retries=0))
    cfg = BreakerConfig(failure_threshold=1, cooldown_s=3600)
    breakers = {
        k: CircuitBreaker(k, directory=tmp_path / "breakers", config=cfg)
        for k in ("test/m0", "test/m1")
    }
    h.loop.caller.breaker_for = breakers.get
    assert h.loop.run("a").text == "fb1"
    assert h.loop.run("b").text == "fb2"
    assert len(primary.requests) == 1, "an open breaker stops calls to the sick model"
