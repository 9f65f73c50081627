"""The agent's words and a failed tool's reason: bounded in events.jsonl, the same on every
runner, shown with escapes made visible (supervise/words.py, runners/base.py `tool_end`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.base.display import excerpt, for_terminal
from specialists.events.lines import event_detail, feed_name
from specialists.runners.base import (
    TOOL_ERROR_CHARS,
    Activity,
    AnswerDelta,
    RunFinished,
    tool_end,
    tool_error,
)
from specialists.runners.codex_events import CodexTranslator
from specialists.supervise.words import EXCERPT_CHARS, FIRST_WINDOW, WINDOW_CHARS, Words
from tests.support.supervising import Harness


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


# --- the cutting -----------------------------------------------------------------------


def test_a_short_block_is_one_event_with_all_its_words() -> None:
    w = Words()
    assert w.add("I'll read ") == [] and w.add("the diff.") == []
    assert w.end() == {"text": "I'll read the diff.", "chars": 19}
    assert w.end() is None  # nothing said since


def test_a_long_answer_keeps_the_opening_words_then_an_excerpt_per_window() -> None:
    w = Words()
    text = "".join(f"{i:05d} " for i in range(4000))  # 24,000 characters
    fields = [f for piece in _pieces(text, 7) for f in w.add(piece)]
    last = w.end()
    assert last is not None
    fields.append(last)
    assert fields[0] == {"text": text[:FIRST_WINDOW], "chars": FIRST_WINDOW}
    assert all(f["chars"] == WINDOW_CHARS for f in fields[1:-1])
    assert sum(f["chars"] for f in fields) == len(text)  # every character counted once
    # Each window keeps its head: about 15% of a long answer, never the whole of it.
    kept = sum(len(f["text"]) for f in fields)
    assert kept == FIRST_WINDOW + EXCERPT_CHARS * (len(fields) - 1) < len(text) // 10
    start = FIRST_WINDOW
    for f in fields[1:]:
        assert f["text"] == text[start : start + EXCERPT_CHARS]
        start += f["chars"]


def test_the_cuts_do_not_depend_on_how_the_text_arrives() -> None:
    """A successor replaying the same output writes the same events (checkpoint.py)."""
    text = "word " * 2000

    def cut(size: int) -> list[dict[str, object]]:
        w = Words()
        out = [f for piece in _pieces(text, size) for f in w.add(piece)]
        return [*out, w.end()]  # type: ignore[list-item]

    assert cut(1) == cut(13) == cut(len(text))


def test_a_new_block_starts_with_its_opening_words_again() -> None:
    w = Words()
    w.add("x" * (FIRST_WINDOW + 10))
    w.end()
    assert w.add("y" * FIRST_WINDOW) == [{"text": "y" * FIRST_WINDOW, "chars": FIRST_WINDOW}]


def test_a_successor_restored_from_the_state_writes_what_the_first_would_have() -> None:
    """The open window travels in a takeover checkpoint: words read before the checkpoint
    but not yet logged are not lost when the supervisor dies (reattach.py)."""
    text = "word " * 700
    whole = Words()
    expected = [*whole.add(text), whole.end()]
    for cut_at in (6, FIRST_WINDOW + 7, FIRST_WINDOW + WINDOW_CHARS + 1):
        first = Words()
        out = first.add(text[:cut_at])
        successor = Words()
        successor.restore(json.loads(json.dumps(first.state())))
        out += successor.add(text[cut_at:])
        assert [*out, successor.end()] == expected, cut_at


def test_a_damaged_window_in_a_checkpoint_is_refused() -> None:
    """A successor refuses (ValueError: the takeover ends the job naming its checkpoint as
    unreadable) a window these cuts never make, rather than logging nonsense."""
    good = {"head": "ab", "count": 2, "limit": FIRST_WINDOW, "opening": True}
    Words().restore(good)
    for bad in (
        {**good, "count": -1},
        {**good, "count": FIRST_WINDOW},
        {**good, "limit": 7},
        {**good, "head": "x" * 3},
    ):
        with pytest.raises(ValueError):
            Words().restore(bad)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- in the supervisor -------------------------------------------------------------------


def test_the_words_are_logged_before_what_the_agent_did_next(h: Harness) -> None:
    runner = h.runner(
        [
            Activity("text"),
            AnswerDelta("I'll look at "),
            AnswerDelta("the tests \x1b]0;pwned\x07first."),
            Activity("toolcall", {"tool": "bash", "args": "ls"}, current_tool="bash(ls)"),
            tool_end("bash", 12, failed=True, error="Blocked: `sleep 99` would hold the turn"),
            Activity("text"),
            AnswerDelta("Done."),
            RunFinished(text="Done."),
        ]
    )
    h.run(runner)
    events = h.events()
    assert [e["event"] for e in events] == [
        "starting",
        "text",
        "toolcall",
        "tool_execution_end",
        "text",
        "run_end",
        "done",
    ]
    said = [e for e in events if e["event"] == "text"]
    assert said[0]["text"] == "I'll look at the tests \x1b]0;pwned\x07first."  # exact in the log
    assert said[1] == {**said[1], "text": "Done.", "chars": 5}
    failed = events[3]
    assert failed["is_error"] is True and failed["error"].startswith("Blocked: `sleep 99`")
    # Shown: escapes visible, never obeyed; the reason beside the failed tool.
    line = event_detail(said[0])
    assert "\x1b" not in line and "\\e]0;pwned\\x07" in line
    assert feed_name(failed) == "tool failed" and "Blocked: `sleep 99`" in event_detail(failed)
    st = h.store.read_status(h.job_id)
    assert st is not None and st.last_text == "Done."


def test_words_said_as_the_job_is_killed_are_still_logged_before_its_end(h: Harness) -> None:
    runner = h.runner([Activity("text"), AnswerDelta("half a sen"), 30.0], exits_on_close=False)
    status = h.run(runner, timeout_ms=1000)
    kinds = [e["event"] for e in h.events()]
    assert status.status == "error" and kinds[-2:] == ["text", "error"], kinds
    assert h.events()[-2]["text"] == "half a sen"


def test_a_huge_streamed_answer_leaves_a_small_log(h: Harness) -> None:
    """1 MB of answer in 4-character deltas: events.jsonl keeps excerpts, not the answer."""
    answer = "abc " * 250_000
    deltas = [AnswerDelta(answer[i : i + 4]) for i in range(0, len(answer), 4)]
    h.run(h.runner([Activity("text"), *deltas, RunFinished(text=answer)]))
    log = (h.store.job_dir(h.job_id) / "events.jsonl").read_bytes()
    said = [e for e in h.events() if e["event"] == "text"]
    assert sum(e["chars"] for e in said) == len(answer)
    assert len(log) < len(answer) // 5, len(log)
    assert h.result() == answer  # the answer itself is whole, in result.txt


# --- a failed tool's reason ----------------------------------------------------------------


def test_a_tool_error_is_bounded_head_and_tail() -> None:
    long = "E" * 200 + "x" * 5000 + "the last line says why"
    reason = tool_error(long)
    assert reason is not None and len(reason) <= TOOL_ERROR_CHARS + 3
    assert reason.startswith("E" * 100) and reason.endswith("the last line says why")
    assert tool_error([{"type": "text", "text": "no such file"}, {"type": "image"}]) == (
        "no such file"
    )
    assert tool_error("   ") is None and tool_error(None) is None and tool_error(42) is None
    assert tool_end("bash", 3).fields == {"tool": "bash", "duration_ms": 3}  # no error: no keys


def test_codex_says_why_a_command_failed() -> None:
    t = CodexTranslator()
    item = {"id": "i1", "type": "command_execution", "command": "bash -lc 'cat nope'"}
    t.feed({"type": "item.started", "item": {**item, "status": "in_progress"}}, 1.0)
    done = {
        **item,
        "aggregated_output": "cat: nope: No such file or directory\n",
        "exit_code": 1,
        "status": "failed",
    }
    (end,) = t.feed({"type": "item.completed", "item": done}, 1.2)
    assert isinstance(end, Activity) and end.fields["is_error"] is True
    assert end.fields["error"] == "exit 1: cat: nope: No such file or directory"
    mcp = {"id": "i2", "type": "mcp_tool_call", "server": "s", "tool": "t", "arguments": {}}
    t.feed({"type": "item.started", "item": mcp}, 2.0)
    failed = {**mcp, "status": "failed", "error": {"message": "tool t refused"}}
    (end,) = t.feed({"type": "item.completed", "item": failed}, 2.1)
    assert isinstance(end, Activity) and end.fields["error"] == "tool t refused"


def test_activity_is_said_in_words() -> None:
    from specialists.store.records import JobStatus
    from specialists.store.view import doing

    def now(**fields: object) -> str:
        return doing(JobStatus(id="00000001", specialist="r", status="running", **fields))

    assert now(current_event="tool_execution_end") == "waiting for the model"
    assert now(current_event="turn_end", last_text="Next, the tests.") == (
        "waiting for the model · said: Next, the tests."
    )
    assert now(current_event="text", last_text="I'll read") == "says: I'll read"
    assert now(current_event="toolcall", current_tool="bash(ls)") == "bash(ls)"
    assert now(current_event="thinking") == "thinking"
    assert now(current_event="some_new_event") == "some new event"
    assert now(current_event="waiting_for_events", current_tool="1 timer due 14:05") == (
        "waiting for events: 1 timer due 14:05"
    )
    assert now(progress={"total": "x", "done": 2, "running": True}) == "2/2 done"  # junk kept out


def test_excerpt_and_escapes() -> None:
    assert excerpt("short", 10) == "short"
    cut = excerpt("a" * 50 + "b" * 50, 30)
    assert len(cut) <= 33 and cut.startswith("a") and cut.endswith("b" * 10)
    assert for_terminal("\x1b[31mred") == "\\e[31mred"
    assert json.dumps(event_detail({"event": "text", "text": "x" * 500, "chars": 900}))
    assert event_detail({"event": "text", "text": "hi", "chars": 1002}) == "hi (+1,000 chars)"
    assert event_detail({"event": "text", "text": 7}) == ""  # a damaged line shows nothing
