"""The JSONL session: round trip, versioning, torn lines, interrupted calls; messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specialists.base.errors import StoreError
from specialists.native.messages import (
    AssistantText,
    Item,
    Thinking,
    ToolCall,
    ToolResult,
    UserMessage,
    item_from_dict,
    item_to_dict,
)
from specialists.native.session import INTERRUPTED_TEXT, SCHEMA_VERSION, Session

text = st.text(max_size=40)
items = st.one_of(
    st.builds(UserMessage, text, source=st.sampled_from(["prompt", "steer", "follow_up"])),
    st.builds(AssistantText, text),
    st.builds(Thinking, text, signature=st.none() | text),
    st.builds(
        ToolCall,
        text,
        text,
        st.dictionaries(st.text(max_size=5), st.integers() | text, max_size=3),
        arguments_error=st.none() | text,
    ),
    st.builds(ToolResult, text, text, text, is_error=st.booleans()),
)


@given(items)
def test_item_dict_round_trip(item: Item) -> None:
    assert item_from_dict(json.loads(json.dumps(item_to_dict(item)))) == item


def test_bad_item_records_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown item kind"):
        item_from_dict({"kind": "telepathy"})
    with pytest.raises(ValueError, match="lacks key 'text'"):
        item_from_dict({"kind": "user"})


def test_session_round_trip_one_line_per_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.create(path, {"model": "x/y"})
    s.append([UserMessage("hi")])
    s.append([AssistantText("a"), ToolCall("c", "ls", {})], model="x/y", stop_reason="tool_use")
    s.append([ToolResult("c", "ls", "out")])
    s.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == SCHEMA_VERSION
    assert [len(line["items"]) for line in lines[1:]] == [1, 2, 1]
    assert lines[2]["model"] == "x/y"
    loaded = Session.load(path)
    assert loaded.items == s.items
    assert loaded.header["model"] == "x/y"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "session", "version": SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(StoreError, match="newer specialists") as exc:
        Session.load(path)
    assert exc.value.hint and "upgrade" in exc.value.hint


def test_torn_last_line_is_dropped_and_file_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.create(path)
    s.append([UserMessage("hi")])
    s.close()
    with path.open("ab") as fh:
        fh.write(b'{"type":"entry","seq":2,"items":[{"kind":"assis')
    loaded = Session.load(path)
    assert loaded.items == (UserMessage("hi"),)
    loaded.append([AssistantText("again")])
    loaded.close()
    assert Session.load(path).items == (UserMessage("hi"), AssistantText("again"))


def test_corrupt_middle_line_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 1}) + "\nnot json\n{}\n")
    with pytest.raises(StoreError, match="line 2 is not valid JSON"):
        Session.load(path)


def test_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        Session.load(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(StoreError, match="empty"):
        Session.load(tmp_path / "empty.jsonl")


def test_close_interrupted_answers_dangling_calls(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "s.jsonl")
    s.append([UserMessage("go")])
    s.append([ToolCall("a", "bash", {}), ToolCall("b", "ls", {})])
    s.append([ToolResult("a", "bash", "done")])
    assert [c.id for c in s.close_interrupted()] == ["b"]
    assert s.items[-1] == ToolResult("b", "ls", INTERRUPTED_TEXT, is_error=True)
    assert s.close_interrupted() == []
    s.close()
    assert Session.load(tmp_path / "s.jsonl").unanswered_calls() == []


def test_open_or_create(tmp_path: Path) -> None:
    path = tmp_path / "d" / "s.jsonl"
    s = Session.open_or_create(path)
    s.append([UserMessage("x")])
    s.close()
    assert Session.open_or_create(path).items == (UserMessage("x"),)
