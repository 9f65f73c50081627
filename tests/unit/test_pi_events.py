"""pi_events: recorded pi transcripts -> the shared vocabulary, and the run state machine
(final detection, queries, steer/follow-up/abort). Pure: no processes.

The transcripts are pi 1.6.0's (tests/fixtures/pi-1.6.0, recorded by
tests/support/record_pi.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.base.clock import FakeClock
from specialists.process.lines import OversizedLine
from specialists.runners.base import Activity, AnswerDelta, RunFinished, RunnerEvent, Usage
from specialists.runners.pi_events import MALFORMED_LOGGED, PiTranslator
from specialists.runners.pi_lines import extract_delta, update_kind
from specialists.runners.pi_protocol import PiProtocol
from tests.support.fake_pi import AssistantMessage, long_answer_lines, text_answer_lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRANSCRIPTS = FIXTURES / "pi-1.6.0"  # the target; copied to shared/reference/pi-1.6.0
# What the recording says (the mock's token counts, its session file, its retry error).
EXPECT = {
    "1.6.0": {"usage": [(12, 5), (12, 1)], "session": "basic.jsonl", "retry_error": "500: {"},
}
AGENT_END = b'{"type":"agent_end","messages":[],"willRetry":false}'
SETTLED = b'{"type":"agent_settled","aborted":false}'


@pytest.fixture(params=["1.6.0"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def transcripts(version: str) -> Path:
    return TRANSCRIPTS


def run_over(r: Replay) -> None:
    """pi ends a run: agent_end, then agent_settled."""
    r.feed(AGENT_END)
    r.feed(SETTLED)


# --- transcript replay ---------------------------------------------------------------------


class Replay:
    """Feeds a recorded stdout through PiProtocol, standing in for the client that made it.

    Recorded responses carry the recording's ids; each is re-addressed to our outstanding
    command of the same type, so the state machine sees answers to its own requests.
    Queries still unanswered at the end get the answer a live pi would give.
    """

    def __init__(
        self,
        protocol: PiProtocol | None = None,
        clock: FakeClock | None = None,
        directory: Path = TRANSCRIPTS,
    ) -> None:
        self.directory = directory
        self.clock = clock or FakeClock()
        self.protocol = protocol or PiProtocol(clock=self.clock)
        self.events: list[RunnerEvent] = []
        self.sent: list[dict[str, Any]] = []
        self.outstanding: list[dict[str, Any]] = []
        self.prompts = 0
        self.last_text: str | None = None  # what pi's get_last_assistant_text would say

    def prompt(self, message: str = "task") -> None:
        self.prompts += 1
        self.protocol.prompt(message)
        self._take()

    def _take(self) -> None:
        for cmd in self.protocol.take_outbox():
            self.sent.append(cmd)
            if "id" in cmd:
                self.outstanding.append(cmd)

    def feed(self, line: bytes | OversizedLine) -> list[RunnerEvent]:
        if isinstance(line, bytes) and line.startswith((b'{"id":', b'{"type":"response"')):
            line = self._readdress(line)
        if isinstance(line, bytes) and line.startswith(b'{"type":"message_end"'):
            msg = json.loads(line)["message"]
            if msg["role"] == "assistant" and (msg["content"] or msg["stopReason"] != "aborted"):
                blocks = [b["text"] for b in msg["content"] if b["type"] == "text"]
                self.last_text = "".join(blocks)
        out = self.protocol.feed(line)
        self.events.extend(out)
        self._take()
        return out

    def _readdress(self, line: bytes) -> bytes:
        obj = json.loads(line)
        if "id" not in obj:
            return line
        later_prompt = obj.get("command") == "prompt" and self.prompts
        if later_prompt and not any(c["type"] == "prompt" for c in self.outstanding):
            self.finish()  # a live pi answered our result queries long before this
            self.prompt("next")
        for cmd in self.outstanding:
            if cmd["type"] == obj.get("command"):
                self.outstanding.remove(cmd)
                obj["id"] = cmd["id"]
                return json.dumps(obj).encode()
        return line

    def finish(self) -> None:
        """Answer the queries still outstanding, as a live pi would."""
        while queries := [c for c in self.outstanding if c["type"].startswith("get_")]:
            cmd = queries[0]
            self.outstanding.remove(cmd)
            data: dict[str, Any] = {}
            if cmd["type"] == "get_state":
                data = {"sessionFile": "/synth/session.jsonl"}
            if cmd["type"] == "get_last_assistant_text" and self.last_text is not None:
                data = {"text": self.last_text}
            resp = {"id": cmd["id"], "type": "response", "command": cmd["type"], "success": True}
            self.feed(json.dumps({**resp, "data": data}).encode())

    def run_file(self, name: str, *, prompt: bool = True) -> Replay:
        if prompt:
            self.prompt()
        for raw in (self.directory / name).read_bytes().split(b"\n"):
            if raw:
                self.feed(raw)
        self.finish()
        return self

    def logged(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e.event, dict(e.fields)) for e in self.events if isinstance(e, Activity) and e.log]

    def finished(self) -> list[RunFinished]:
        return [e for e in self.events if isinstance(e, RunFinished)]


def kinds(logged: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [kind for kind, _ in logged]


# --- transcripts -----------------------------------------------------------------------------


def test_rpc_basic_gives_the_exact_logged_sequence_and_final_text(version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file("rpc-basic.ndjson")
    (first, second), session = EXPECT[version]["usage"], EXPECT[version]["session"]
    assert r.logged() == [
        ("toolcall", {"tool": "bash", "args": "echo hi"}),
        ("tool_execution_end", {"tool": "bash", "duration_ms": 0}),
        ("turn_end", {"turn": 1, "usage": _usage(*first)}),
        ("text", {}),
        ("turn_end", {"turn": 2, "usage": _usage(*second)}),
    ]
    assert r.finished() == [
        RunFinished(text="DONE", error=None, session_file=f"/home/user/pi-demo/sessions/{session}")
    ]
    usage = [e for e in r.events if isinstance(e, Usage)]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [first, second]
    assert "".join(e.text for e in r.events if isinstance(e, AnswerDelta)) == "DONE"
    assert r.protocol.state.kind == "idle"


def _usage(inp: int, out: int) -> dict[str, Any]:
    return {"input": inp, "output": out, "cache_read": 0, "cache_write": 0, "cost_usd": 0.0}


def test_retry_is_not_final_on_the_first_agent_end(version: str) -> None:
    r = Replay()
    r.prompt()
    lines = [x for x in (transcripts(version) / "retry.ndjson").read_bytes().split(b"\n") if x]
    first_end = next(i for i, x in enumerate(lines) if x.startswith(b'{"type":"agent_end"'))
    for line in lines[: first_end + 1]:
        r.feed(line)
    assert r.protocol.state.kind != "idle"
    assert not any(c["type"] == "get_last_assistant_text" for c in r.sent)
    for line in lines[first_end + 1 :]:
        r.feed(line)
    r.finish()
    assert [k for k in kinds(r.logged()) if k == "retry"] == ["retry"] * 3
    kind, fields = r.logged()[1]
    assert kind == "retry"
    assert (fields["attempt"], fields["max_attempts"], fields["delay_ms"]) == (1, 3, 2000)
    assert fields["error"].startswith(EXPECT[version]["retry_error"])
    [done] = r.finished()
    assert done.error is not None and done.error.startswith(EXPECT[version]["retry_error"])
    assert done.text == ""


def test_think_gives_one_thinking_event_per_message_not_one_per_delta(version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file("think.ndjson")
    assert kinds(r.logged()) == [
        "thinking",
        "toolcall",
        "tool_execution_end",
        "turn_end",
        "thinking",
        "text",
        "turn_end",
    ]
    assert r.finished()[0].text == "DONE"


def test_multiturn_gives_two_runs(version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file("multiturn.ndjson")
    assert [f.text for f in r.finished()] == ["DONE", "DONE"]
    assert kinds(r.logged()).count("toolcall") == 2


@pytest.mark.parametrize("name", ["abort_text.ndjson", "abort_tool.ndjson"])
def test_abort_finishes_the_run_as_aborted(name: str, version: str) -> None:
    r = Replay(directory=transcripts(version))
    r.prompt()
    r.protocol.abort()
    r._take()
    assert r.sent[-1]["type"] == "abort"
    r.run_file(name, prompt=False)
    first = r.finished()[0]
    assert first.error == "aborted"
    if name == "abort_text.ndjson":
        assert first.text == "tok0 tok1"  # abort keeps the partial text (pi trims it)
        assert [f.text for f in r.finished()] == ["tok0 tok1", "DONE"]
        assert r.finished()[1].error is None
    else:
        ends = [f for k, f in r.logged() if k == "tool_execution_end"]
        assert ends[0]["is_error"] is True
        assert ends[0]["error"] == "Command aborted"  # pi's reason, in the event


def test_a_tool_an_extension_blocked_carries_the_reason() -> None:
    """The guard's refusal reached only the model before; now the event says it too."""
    r = Replay().run_file("ext.ndjson")
    ends = [f for k, f in r.logged() if k == "tool_execution_end"]
    assert [f.get("error") for f in ends] == [None, "Blocked by supervisor"]
    assert ends[1]["is_error"] is True


@pytest.mark.parametrize("name", ["eof.ndjson", "sigterm.ndjson", "sigterm_tool.ndjson"])
def test_a_run_cut_short_by_the_process_ending_has_no_result(name: str, version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file(name)
    assert r.protocol.state.kind == "running"
    assert r.protocol.process_exited() == []
    assert r.finished() == []
    assert r.protocol.state.kind == "idle"


def test_errors_transcript_is_handled(version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file("errors.ndjson")
    rejected = [
        f for k, f in r.logged() if k == "notice" and f["message"] == "pi rejected a command"
    ]
    assert len(rejected) == 5  # the responses without an id
    assert any("Unknown command: frobnicate" in f["error"] for f in rejected)
    [done] = r.finished()
    assert done.text is None
    assert done.error is not None and done.error.startswith("pi rejected the prompt: Cannot read")


def test_extension_dialogs_are_cancelled_so_pi_never_waits(version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file("ext.ndjson")
    answers = [c for c in r.sent if c["type"] == "extension_ui_response"]
    lines = (transcripts(version) / "ext.ndjson").read_text().splitlines()
    asked = [json.loads(ln) for ln in lines if '"method":"confirm"' in ln]
    # only the dialogs (confirm) are answered; notify/setStatus need no answer
    assert answers == [
        {"type": "extension_ui_response", "id": a["id"], "cancelled": True} for a in asked
    ]
    assert len(answers) == 2
    notices = [f for k, f in r.logged() if k == "notice"]
    assert [n["method"] for n in notices] == ["confirm", "confirm"]
    assert [f.text for f in r.finished()] == ["DONE", "DONE"]


@pytest.mark.parametrize("name", ["resume.ndjson", "json_mode.ndjson", "misc.ndjson"])
def test_other_transcripts_finish_with_done(name: str, version: str) -> None:
    r = Replay(directory=transcripts(version)).run_file(name)
    assert [f.text for f in r.finished()] == ["DONE"]
    assert not [f for k, f in r.logged() if k == "notice"]
    if name == "misc.ndjson":  # a manual compaction after the run is logged, idle
        compaction = [f for k, f in r.logged() if k == "compaction"]
        assert compaction[0] == {"reason": "manual"}
        assert compaction[1]["phase"] == "end"


def test_every_transcript_line_parses_without_malformed_or_unknown_notices(version: str) -> None:
    for path in sorted(transcripts(version).glob("*.ndjson")):
        t = PiTranslator()
        for raw in path.read_bytes().split(b"\n"):
            for out in t.feed(raw):
                unknown = isinstance(out, Activity) and out.fields.get("message") in (
                    "unknown agent event",
                    "malformed agent output line skipped",
                )
                assert not unknown, (path.name, raw[:200])
        assert t.malformed == 0, path.name


# --- the fast path ---------------------------------------------------------------------------


def test_long_answer_stream_is_cheap_and_logs_little() -> None:
    lines = [line.encode() for line in long_answer_lines(10_000, 2_000)]
    assert len(lines) > 2_000  # one line per delta
    p = PiProtocol()
    p.prompt("x")
    events: list[RunnerEvent] = []
    start = time.process_time()
    for line in lines:
        events.extend(p.feed(line))
    cpu = time.process_time() - start
    text = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert len(text) == 10_000
    logged = [e.event for e in events if isinstance(e, Activity) and e.log]
    assert logged == ["text", "turn_end"]
    assert cpu < 1.0, f"translating 2,000 deltas took {cpu:.2f} s CPU"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(min_size=1, max_size=3000),
    chunks=st.integers(min_value=1, max_value=40),
)
def test_fast_delta_extraction_reproduces_any_text(text: str, chunks: int) -> None:
    lines = text_answer_lines(text, chunks)
    t = PiTranslator()
    out: list[Any] = []
    for line in lines:
        data = line.encode()
        assert b"\n" not in data  # JSON escapes newlines; U+2028 stays raw and is fine
        out.extend(t.feed(data))
    assert "".join(e.text for e in out if isinstance(e, AnswerDelta)) == text


def test_delta_longer_than_the_first_window_is_decoded() -> None:
    big = "é" * 5000 + '"\\' + "x" * 3000
    msg = AssistantMessage()
    line = msg.update("text_delta", 0, delta=big).encode()
    kind = update_kind(line)
    assert kind is not None and kind[0] == "text_delta"
    assert extract_delta(line, kind[1]) == big


def test_update_with_other_key_order_falls_back_to_a_full_parse() -> None:
    line = json.dumps(
        {
            "message": {},
            "type": "message_update",
            "assistantMessageEvent": {"delta": "hi", "type": "text_delta"},
        }
    ).encode()
    out = PiTranslator().feed(line)
    assert [e for e in out if isinstance(e, AnswerDelta)] == [AnswerDelta("hi")]
    assert isinstance(out[0], Activity) and out[0].event == "text"


def test_malformed_lines_are_skipped_and_logging_stops_after_a_few() -> None:
    t = PiTranslator()
    out = [e for i in range(MALFORMED_LOGGED + 3) for e in t.feed(f"garbage {i}".encode())]
    assert all(isinstance(e, Activity) and e.event == "notice" for e in out)
    assert [e.log for e in out if isinstance(e, Activity)] == [True] * MALFORMED_LOGGED + [
        False
    ] * 3
    assert t.malformed == MALFORMED_LOGGED + 3
    assert t.feed(b"[1, 2]")[0].fields["message"] == "malformed agent output line skipped"  # type: ignore[union-attr]
    assert t.feed(b"") == [] and t.feed(b"  ") == []


def test_oversized_agent_end_ends_the_run_and_other_oversized_lines_are_skipped() -> None:
    clock = FakeClock()
    r = Replay(clock=clock)
    r.prompt()
    for line in text_answer_lines("DONE", 2):
        r.feed(line.encode())
    skipped = r.feed(OversizedLine(b'{"type":"message_update","assistantMessageEvent"', 10**8))
    assert isinstance(skipped[0], Activity) and skipped[0].fields["bytes"] == 10**8
    r.feed(OversizedLine(b'{"type":"agent_end","messages":[{"role":"user"', 50_000_000))
    assert r.protocol.state.kind == "settling"
    r.feed(SETTLED)
    assert r.protocol.state.kind == "finalizing"
    r.finish()
    assert [f.text for f in r.finished()] == ["DONE"]


def test_tool_duration_comes_from_the_clock() -> None:
    clock = FakeClock()
    t = PiTranslator(clock)
    t.feed(b'{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{}}')
    clock.advance(1.5)
    [end] = t.feed(
        b'{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{},"isError":true}'
    )
    assert isinstance(end, Activity)
    assert end.fields == {"tool": "bash", "duration_ms": 1500, "is_error": True}  # no reason


def test_heartbeats_are_throttled_and_status_only() -> None:
    clock = FakeClock()
    t = PiTranslator(clock)
    msg = AssistantMessage()
    lines = [msg.start(), *msg.thinking("a" * 100, 50)]
    out = [e for line in lines for e in t.feed(line.encode())]
    assert [(e.event, e.log) for e in out if isinstance(e, Activity)] == [("thinking", True)]
    clock.advance(1.1)
    beat = t.feed(msg.update("thinking_delta", 0, delta="b").encode())
    assert [(e.event, e.log) for e in beat if isinstance(e, Activity)] == [("thinking", False)]


def test_unknown_events_are_status_only_notices() -> None:
    [n] = PiTranslator().feed(b'{"type":"agent_dreamt"}')
    assert isinstance(n, Activity) and n.event == "notice" and n.log is False
    assert PiTranslator().feed(b'{"type":"queue_update","steering":[],"followUp":[]}') == []


# --- the state machine -----------------------------------------------------------------------


def _error_run(r: Replay, error: str = "401 invalid api key") -> None:
    msg = AssistantMessage()
    msg.stop_reason, msg.error = "error", error
    for line in ('{"type":"agent_start"}', msg.start(), msg.end(), msg.turn_end()):
        r.feed(line.encode())
    r.feed(AGENT_END)


def test_an_error_without_retry_is_final_at_agent_settled() -> None:
    r = Replay()
    r.prompt()
    _error_run(r)
    assert r.protocol.tick() == []
    assert r.protocol.state.kind == "settling"
    r.feed(SETTLED)
    r._take()
    assert [c["type"] for c in r.sent[-2:]] == ["get_last_assistant_text", "get_state"]
    r.finish()
    assert r.finished() == [
        RunFinished(text="", error="401 invalid api key", session_file="/synth/session.jsonl")
    ]


def test_overflow_compaction_with_retry_keeps_the_run_open() -> None:
    r = Replay()
    r.prompt()
    _error_run(r, "context_length_exceeded")
    r.feed(b'{"type":"compaction_start","reason":"overflow"}')
    r.clock.advance(5)
    r.protocol.tick()
    assert r.protocol.state.kind == "compacting"
    r.feed(
        b'{"type":"compaction_end","reason":"overflow","result":{},"aborted":false,"willRetry":true}'
    )
    r.feed(b'{"type":"agent_start"}')
    for line in text_answer_lines("OK", 1):
        r.feed(line.encode())
    run_over(r)
    r.finish()
    assert [(f.text, f.error) for f in r.finished()] == [("OK", None)]


def test_query_timeout_falls_back_to_the_text_seen_in_message_end() -> None:
    r = Replay()
    r.prompt()
    for line in text_answer_lines("the answer", 3):
        r.feed(line.encode())
    run_over(r)
    r.clock.advance(11)
    out = r.protocol.tick()
    assert isinstance(out[0], Activity) and out[0].event == "notice"
    assert out[1] == RunFinished(text="the answer", error=None, session_file=None)


def test_process_exit_while_collecting_the_result_still_reports_it() -> None:
    r = Replay()
    r.prompt()
    for line in text_answer_lines("partial?", 3):
        r.feed(line.encode())
    run_over(r)
    assert r.protocol.process_exited() == [RunFinished(text="partial?", error=None)]


@pytest.mark.parametrize("data", [{}, {"text": None}, None])
def test_no_text_is_an_empty_answer(data: Any) -> None:
    r = Replay()
    r.prompt()
    run_over(r)
    text_id = next(c["id"] for c in r.sent if c["type"] == "get_last_assistant_text")
    state_id = next(c["id"] for c in r.sent if c["type"] == "get_state")
    resp = {"type": "response", "success": True, "data": data}
    r.feed(json.dumps({**resp, "id": text_id, "command": "get_last_assistant_text"}).encode())
    r.feed(json.dumps({**resp, "id": state_id, "command": "get_state"}).encode())
    assert [f.text for f in r.finished()] == [""]


def test_steer_while_running_is_acked() -> None:
    r = Replay()
    r.prompt()
    r.protocol.steer("focus on tests")
    r._take()
    steer = r.sent[-1]
    assert steer["type"] == "steer" and steer["message"] == "focus on tests"
    r.feed(
        json.dumps(
            {"id": steer["id"], "type": "response", "command": "steer", "success": True}
        ).encode()
    )
    assert ("steer_ack", {"message": "focus on tests", "as_prompt": False}) in r.logged()


def test_steer_when_idle_starts_a_new_run() -> None:
    p = PiProtocol()
    p.steer("hello")
    [cmd] = p.take_outbox()
    assert cmd["type"] == "prompt" and cmd["message"] == "hello"
    assert p.state.kind == "running"


def test_follow_up_while_running_uses_prompt_with_streaming_behavior() -> None:
    p = PiProtocol()
    p.prompt("a")
    p.take_outbox()
    assert p.follow_up("b") == []
    [cmd] = p.take_outbox()
    assert cmd == {
        "id": cmd["id"],
        "type": "prompt",
        "message": "b",
        "streamingBehavior": "followUp",
    }


def test_follow_up_while_collecting_the_result_is_sent_after_it() -> None:
    r = Replay()
    r.prompt()
    for line in text_answer_lines("one", 1):
        r.feed(line.encode())
    run_over(r)
    queued = r.protocol.follow_up("two")
    assert isinstance(queued[0], Activity) and queued[0].fields["queued"] is True
    r._take()
    assert not [c for c in r.sent if c.get("message") == "two"]
    r.finish()
    assert [f.text for f in r.finished()] == ["one"]
    assert r.protocol.state.kind == "running"
    assert r.sent[-1]["type"] == "prompt" and r.sent[-1]["message"] == "two"


def test_a_rejected_prompt_finishes_the_run_with_the_error() -> None:
    r = Replay()
    r.prompt()
    pid = r.sent[0]["id"]
    r.feed(
        json.dumps(
            {
                "id": pid,
                "type": "response",
                "command": "prompt",
                "success": False,
                "error": "No API key",
            }
        ).encode()
    )
    assert r.finished() == [RunFinished(text=None, error="pi rejected the prompt: No API key")]
    assert r.protocol.state.kind == "idle"


def test_max_turns_aborts_a_run_that_wants_to_continue() -> None:
    clock = FakeClock()
    r = Replay(PiProtocol(clock=clock, max_turns=1), clock)
    r.prompt()
    msg = AssistantMessage()
    lines = [msg.start(), *msg.toolcall("c1", "bash", {"command": "ls"}), msg.end(), msg.turn_end()]
    for line in lines:
        r.feed(line.encode())
    assert r.sent[-1]["type"] == "abort"
    aborted = AssistantMessage()
    aborted.stop_reason = "aborted"
    r.feed(aborted.end().encode())
    run_over(r)
    r.finish()
    assert [f.error for f in r.finished()] == ["max turns reached (1)"]


def test_a_run_that_restarts_while_collecting_stays_running() -> None:
    r = Replay()
    r.prompt()
    run_over(r)
    r.feed(b'{"type":"agent_start"}')  # e.g. a follow-up that reached an idle pi
    r.finish()
    assert len(r.finished()) == 1
    assert r.protocol.state.kind == "running"


# --- the fallback model ------------------------------------------------------------------------


def fallback_replay(fallback: str, model: str = "mock/mock-model") -> Replay:
    clock = FakeClock()
    r = Replay(PiProtocol(clock=clock, model=model, fallback_model=fallback), clock)
    r.prompt("the task")
    _error_run(r)
    r.feed(SETTLED)
    r._take()
    return r


def test_a_failed_run_switches_model_and_sends_the_message_again() -> None:
    r = fallback_replay("mock/mock-text")
    switch = r.sent[-1]
    assert (switch["type"], switch["provider"], switch["modelId"]) == (
        "set_model",
        "mock",
        "mock-text",
    )
    assert r.protocol.state.kind == "switching_model"
    assert r.protocol.busy and r.finished() == []
    ok = {"type": "response", "command": "set_model", "success": True, "id": switch["id"]}
    r.feed(json.dumps(ok).encode())
    assert r.sent[-1]["type"] == "prompt" and r.sent[-1]["message"] == "the task"
    assert r.protocol.state.kind == "running"


def test_set_model_unanswered_in_time_ends_the_run_with_its_error() -> None:
    r = fallback_replay("mock/mock-text")
    r.clock.advance(11)
    r.events.extend(r.protocol.tick())
    r._take()
    assert [c["type"] for c in r.sent[-2:]] == ["get_last_assistant_text", "get_state"]
    r.finish()
    assert [f.error for f in r.finished()] == ["401 invalid api key"]
    assert any(
        "did not answer set_model" in e.fields.get("message", "")
        for e in r.events
        if isinstance(e, Activity)
    )


def test_a_fallback_without_a_provider_is_not_tried() -> None:
    r = fallback_replay("mock-text", model="mock-model")  # neither names a provider
    assert "set_model" not in [c["type"] for c in r.sent]
    r.finish()
    assert [f.error for f in r.finished()] == ["401 invalid api key"]


def test_the_same_model_as_fallback_is_no_fallback() -> None:
    r = fallback_replay("mock/mock-model")
    assert "set_model" not in [c["type"] for c in r.sent]


# --- pi 1.x: willRetry, agent_settled, dispositions ------------------------------------------


def test_a_run_is_final_at_agent_settled_not_at_agent_end() -> None:
    r = Replay()
    r.prompt()
    for line in text_answer_lines("DONE", 2):
        r.feed(line.encode())
    r.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    assert r.protocol.state.kind == "settling"
    assert not any(c["type"] == "get_last_assistant_text" for c in r.sent)
    r.feed(b'{"type":"agent_settled","aborted":false}')
    r.finish()
    assert [f.text for f in r.finished()] == ["DONE"]


def test_will_retry_keeps_the_run_open_whatever_the_clock_says() -> None:
    r = Replay()
    r.prompt()
    _error_run(r)
    r.feed(b'{"type":"agent_end","messages":[],"willRetry":true}')
    r.clock.advance(60)
    assert r.protocol.tick() == []
    assert r.protocol.state.kind == "retrying"


def test_steering_after_agent_end_continues_the_same_run() -> None:
    """pi 1.x goes on after agent_end with a queued steer; only agent_settled ends it."""
    r = Replay()
    r.prompt()
    for line in text_answer_lines("first", 1):
        r.feed(line.encode())
    r.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    r.feed(b'{"type":"agent_start"}')
    for line in text_answer_lines("second", 1):
        r.feed(line.encode())
    r.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    r.feed(b'{"type":"agent_settled","aborted":false}')
    r.finish()
    assert [f.text for f in r.finished()] == ["second"]


def test_a_missing_agent_settled_ends_the_run_after_the_settle_timeout() -> None:
    r = Replay()
    r.prompt()
    for line in text_answer_lines("DONE", 1):
        r.feed(line.encode())
    r.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    r.clock.advance(9.9)
    r.protocol.tick()
    assert r.protocol.state.kind == "settling"
    r.clock.advance(0.2)
    r.protocol.tick()
    r._take()
    r.finish()
    assert [f.text for f in r.finished()] == ["DONE"]


def test_a_prompt_an_extension_command_handled_ends_without_a_run() -> None:
    r = Replay()
    r.prompt("/specialists jobs")
    [prompt] = [c for c in r.sent if c["type"] == "prompt"]
    handled = {"id": prompt["id"], "type": "response", "command": "prompt", "success": True}
    r.feed(json.dumps({**handled, "data": {"disposition": "handled"}}).encode())
    r.finish()
    assert [(f.text, f.error) for f in r.finished()] == [("", None)]
    assert r.protocol.state.kind == "idle"


def test_the_fast_path_reads_both_update_shapes() -> None:
    event = b'"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hi"'
    new = b'{"type":"message_update","usage":{"input":1},' + event + b"}}"
    old = b'{"type":"message_update",' + event + b',"partial":{}}}'
    for line in (new, old):
        kind = update_kind(line)
        assert kind is not None and kind[0] == "text_delta"
        assert extract_delta(line, kind[1]) == "hi"


def test_agent_end_says_whether_pi_retries_from_its_tail_alone() -> None:
    from specialists.runners.pi_events import AgentEnded

    huge = b'{"type":"agent_end","messages":[' + b'{"x":1},' * 1000 + b'{}],"willRetry":true}'
    assert PiTranslator().feed(huge) == [AgentEnded(will_retry=True)]
    assert PiTranslator().feed(b'{"type":"agent_end","messages":[]}') == [AgentEnded()]


def test_the_fake_pi_writes_the_recorded_1_6_0_shapes() -> None:
    """tests/support/fake_pi.py stands in for pi 1.6.0 in the unit tests: its lines have the
    keys, in the order, of the recorded ones (the fast path depends on the order)."""
    from tests.support import fake_pi

    recorded = [json.loads(x) for x in (TRANSCRIPTS / "rpc-basic.ndjson").read_text().splitlines()]

    def first(kind: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
        return next(ln for ln in lines if ln["type"] == kind)

    msg = AssistantMessage()
    faked = [json.loads(x) for x in [*msg.toolcall("c1", "bash", {"command": "echo hi"})]]
    faked += [json.loads(fake_pi.agent_end()), json.loads(fake_pi.agent_settled())]
    faked += [json.loads(x) for x in fake_pi.user_message_lines("hi")]
    for kind in ("message_update", "agent_end", "agent_settled"):
        assert list(first(kind, faked)) == list(first(kind, recorded)), kind
    real_start = first("message_update", recorded)["assistantMessageEvent"]
    fake_start = first("message_update", faked)["assistantMessageEvent"]
    assert list(fake_start) == list(real_start)  # type, contentIndex, id, toolName
    roles = [ln["message"]["role"] for ln in faked if ln["type"] == "message_start"]
    assert roles == ["system", "user"]  # a run opens with pi's system message


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ('{"input":Infinity,"output":7}', Usage(output_tokens=7)),  # int(inf): OverflowError
        ('{"input":NaN,"output":7}', Usage(output_tokens=7)),  # int(nan): ValueError
        ('{"input":-500,"cost":{"total":-3.5}}', Usage()),  # spend would go down
        ('{"output":2,"cost":{"total":NaN}}', Usage(output_tokens=2)),  # ceilings never trip
        ('{"cost":{"total":1' + "0" * 400 + "}}", Usage()),  # float(int): OverflowError
        ('{"input":1e300,"cacheRead":' + "9" * 4000 + "}", Usage()),  # absurd counts
        ('{"input":12.0,"cost":{"total":0.25}}', Usage(input_tokens=12, cost_usd=0.25)),
    ],
)
def test_a_hostile_usage_report_never_crashes_nor_corrupts_spend(
    usage: str, expected: Usage
) -> None:
    line = '{"type":"message_end","message":{"role":"assistant","usage":' + usage + "}}"
    assert PiTranslator().feed(line.encode())[0] == expected


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":{"a":1}}',
        b'{"type":["agent_start"]}',
        # pi's update prefix, then a second "type" key that json.loads keeps
        b'{"type":"message_update","assistantMessageEvent":{"type":"toolcall_start"},"type":[]}',
    ],
)
def test_an_event_whose_type_is_not_a_string_is_a_malformed_line(line: bytes) -> None:
    """It crashed the reader with `TypeError: unhashable type` (`kind in _IGNORED_EVENTS`)."""
    out = PiTranslator().feed(line)
    assert [(a.event, a.fields["message"]) for a in out if isinstance(a, Activity)] == [
        ("notice", "malformed agent output line skipped")
    ]
