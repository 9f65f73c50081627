"""The merge queue's pure parts: overlaps, the orders, ids and a damaged record (the git and
process side is tests/integration/test_merge_queue.py)."""

from __future__ import annotations

import pytest

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox.queue import (
    Member,
    Queue,
    Queues,
    new_queue_id,
    ordered,
    overlaps,
    queue_of_sandbox,
    resolver_sandbox_id,
)


def member(name: str, files: list[str], size: int, at: int) -> Member:
    return Member(name, name, None, files, size, "0" * 40, created_at_ms=at)


MEMBERS = [
    member("big", ["a.py", "b.py"], 300, 1),
    member("alone", ["c.py"], 900, 2),
    member("small", ["b.py"], 10, 3),
    member("older_alone", ["d.py"], 5, 0),
]


def names(members: list[Member]) -> list[str]:
    return [m.sandbox for m in members]


def test_overlaps_name_each_pair_and_their_shared_files() -> None:
    assert overlaps(MEMBERS) == [{"a": "big", "b": "small", "paths": ["b.py"]}]
    assert overlaps([member("x", ["a"], 1, 0), member("y", ["b"], 1, 0)]) == []


def test_orders() -> None:
    assert names(ordered(MEMBERS, "given")) == ["big", "alone", "small", "older_alone"]
    assert names(ordered(MEMBERS, "fifo")) == ["older_alone", "big", "alone", "small"]
    assert names(ordered(MEMBERS, "smallest")) == ["older_alone", "small", "big", "alone"]
    # auto: disjoint ones first (oldest first, whatever their size), then overlapping ones
    # smallest first
    assert names(ordered(MEMBERS, "auto")) == ["older_alone", "alone", "small", "big"]


def test_resolver_sandbox_ids_name_their_queue_and_nothing_else_does() -> None:
    qid = new_queue_id()
    assert queue_of_sandbox(resolver_sandbox_id(qid, 3, 2)) == qid
    for other in (qid, "t-" + "0" * 32, "s-abc", None, "", f"{qid}-x", f"{qid}x3r1"):
        assert queue_of_sandbox(other) is None, other


def test_a_damaged_record_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(StoreError, match="damaged"):
        Queue.from_dict({"id": "q-000000000000", "members": [{"nope": 1}]})
    queues = Queues(tmp_path)
    with pytest.raises(UserError, match="invalid merge queue id"):
        queues.record("../../etc")
    assert queues.ids() == [] and queues.all() == ([], [])


def test_a_childs_file_names_print_as_visible_escapes_not_terminal_control() -> None:
    """A child may commit a file named with an escape sequence (or a newline): `merge check`,
    `start`, `show` and `list` print it visibly, never as a raw ESC, BEL or line break."""
    from specialists.features.sandbox.merge_verbs import _listed, check_text, describe_queue

    evil = "a\x1b]0;owned\x07\x1b[2J\nb.txt"
    pair = [{"a": "e", "b": "f", "paths": [evil]}]
    rows = [
        {"sandbox": s, "ref": s, "state": "conflict", "problem": f"conflicts: {evil}"}
        for s in ("e", "f")
    ]
    summary = f"merge queue q-1: merged; not landed: {evil}"
    queue = {"summary": summary, "members": rows, "overlaps": pair}
    found = {
        "members": [{**r, "files": [evil], "lines": 1} for r in rows],
        "overlaps": pair,
        "order": ["e", "f"],
    }
    texts = [describe_queue(queue), check_text(found), _listed({"queues": [queue]})]
    for text in texts:
        assert "\x1b" not in text and "\x07" not in text, text
        assert "a\\e]0;owned\\x07\\e[2J\\nb.txt" in text
    assert len(describe_queue(queue).splitlines()) == 4  # summary, two members, overlaps
