"""events/: ids, the model-facing format, spill, and durable inboxes under hostile input."""

from __future__ import annotations

import json
import os
import stat
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.events.emitter import Emitter
from specialists.events.inbox import COMPACT_BYTES, Inbox
from specialists.events.model import Event, EventSource, event_from_dict, event_id
from specialists.events.owners import check_owner, job_owner, owner_job_id, session_owner
from specialists.events.render import render_event
from specialists.events.spill import SpillLimits, bound_body, bound_stream
from specialists.store.kinds import OWNER as OWNER_KIND

OWNER = "claude-sess1"
SRC = EventSource("bg_run", "call_7", {"command": "make test"})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".specialists"


def append(inbox: Inbox, seq: int, body: str = "hello", *, source_id: str = "bg.n1") -> Event:
    return inbox.append("job_exit", SRC, body, source_id=source_id, seq=seq)


# --- owners and ids -------------------------------------------------------------------------


def test_owner_keys_are_checked_before_they_touch_a_path() -> None:
    assert check_owner("job-0123abcd") == "job-0123abcd"
    assert owner_job_id(job_owner("0123abcd")) == "0123abcd"
    assert owner_job_id("claude-0123abcd") is None
    for bad in ["", "job-", "../x", "job-..", "Claude-1", "a" * 20 + "-x", "pi-a/b", "pi-a\0b"]:
        with pytest.raises(UserError):
            check_owner(bad)


def test_session_owner_reduces_any_id_to_a_safe_key() -> None:
    assert session_owner("claude", "a/b c..d") == "claude-a_b_c.d"
    assert session_owner("pi", "..") == "pi-unknown"
    assert session_owner("pi", "x" * 500) == "pi-" + "x" * 128


def test_ids_follow_source_kind_seq_and_each_incarnation_gets_a_new_nonce(root: Path) -> None:
    assert event_id("bg.ab12", "job_exit", 3) == "bg.ab12:job_exit:3"
    first, second = Emitter(root, "bg-1234abcd"), Emitter(root, "bg-1234abcd")
    assert first.source_id != second.source_id
    a = first.emit(OWNER, "job_match", SRC, "x")
    b = first.emit(OWNER, "job_match", SRC, "y")
    c = first.emit(OWNER, "job_exit", SRC, "z")
    assert a and b and c
    assert (a.id.split(":")[1:], b.id.split(":")[1:], c.id.split(":")[1:]) == (
        ["job_match", "1"],
        ["job_match", "2"],
        ["job_exit", "1"],
    )


# --- the text the model reads ---------------------------------------------------------------


def test_render_is_the_stable_format() -> None:
    event = Event("bg.n:job_exit:1", "job_exit", OWNER, 1, SRC, "exit 0\nall tests passed")
    assert render_event(event) == (
        "[specialists event] job_exit from bg_run (call_7)\n"
        'original_args: {"command":"make test"}\n'
        "---\n"
        "exit 0\nall tests passed"
    )


def test_render_clips_args_to_one_line_of_300_chars_and_falls_back_to_the_event_id() -> None:
    source = EventSource("sleep", "", {"note": "line one\nline two " + "x" * 500})
    text = render_event(Event("tm-1:timer:1", "timer", OWNER, 1, source, "woke"))
    header, args_line = text.splitlines()[:2]
    assert header == "[specialists event] timer from sleep (tm-1:timer:1)"
    assert "\n" not in args_line and len(args_line) <= len("original_args: ") + 300
    assert args_line.endswith("…")


# --- spill (R-E2) ---------------------------------------------------------------------------


def test_long_bodies_become_head_marker_tail_and_the_file_holds_all(tmp_path: Path) -> None:
    limits = SpillLimits(max_chars=100, head_chars=10, tail_chars=5)
    body = "H" * 10 + "m" * 200 + "T" * 5
    out = bound_body(body, tmp_path, "t", limits)
    assert out.startswith("H" * 10) and out.endswith("T" * 5)
    path = Path(out.split("the full text is in ")[1].split(". Use")[0])
    assert path.read_text() == body
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_zero_tail_keeps_no_tail_and_a_marker_in_the_body_does_not_exempt_it(
    tmp_path: Path,
) -> None:
    limits = SpillLimits(max_chars=50, head_chars=5, tail_chars=0)
    body = "[... 1 of 2 characters omitted; the full text is in x ...]" + "z" * 100
    out = bound_body(body, tmp_path, "t", limits)
    assert out.startswith("[... \n") and "zz" not in out  # head only, no tail
    assert "158 characters omitted" in out


def test_a_100_mb_body_in_pieces_is_spilled_without_being_held(tmp_path: Path) -> None:
    piece = "0123456789" * 10_000  # 100 kB

    def pieces() -> Iterator[str]:
        for _ in range(1000):
            yield piece

    tracemalloc.start()
    out = bound_stream(pieces(), tmp_path, "big", SpillLimits(4000, 2400, 1000))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5 * 1024 * 1024, peak
    assert "100000000 characters" in out or "99996600 of 100000000" in out
    path = Path(out.split("the full text is in ")[1].split(". Use")[0])
    assert path.stat().st_size == 100_000_000
    assert list(tmp_path.glob(".*.tmp")) == []


def test_a_small_stream_is_returned_whole(tmp_path: Path) -> None:
    assert bound_stream(["a", "b", ""], tmp_path) == "ab"
    assert list(tmp_path.iterdir()) == []


# --- inbox: delivery ------------------------------------------------------------------------


def test_pending_until_acknowledged_then_never_again(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1, "one")
    append(inbox, 2, "two")
    batch = inbox.pending()
    assert [e.body for e in batch.events] == ["one", "two"]
    assert Inbox(root, OWNER).pending().ids == batch.ids  # a restart replays (R-E6)
    inbox.ack(batch)
    assert not inbox.has_pending()
    assert Inbox(root, OWNER).pending().events == ()
    append(inbox, 3, "three")
    assert [e.body for e in inbox.take().events] == ["three"]
    assert not inbox.has_pending()


def test_a_second_copy_of_an_id_is_dropped_before_and_after_ack(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1)
    append(inbox, 1)  # a producer retried after a crash
    batch = inbox.pending()
    assert len(batch.events) == 1 and batch.duplicates == 1
    inbox.ack(batch)
    append(inbox, 1)
    later = inbox.pending()
    assert later.events == () and later.duplicates == 1


def test_the_seen_set_is_bounded(root: Path) -> None:
    inbox = Inbox(root, OWNER, seen_cap=3)
    for seq in range(1, 6):
        append(inbox, seq)
    inbox.ack(inbox.pending())
    cursor = json.loads(inbox.cursor_path.read_text())
    assert cursor["seen"] == [f"bg.n1:job_exit:{n}" for n in (3, 4, 5)]


def test_max_events_leaves_the_rest_pending(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    for seq in range(1, 8):
        append(inbox, seq)
    first = inbox.take(max_events=5)
    assert len(first.events) == 5 and inbox.has_pending()
    assert len(inbox.take().events) == 2


def test_a_fully_read_large_inbox_is_compacted(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    seq = 0
    while inbox.events_path.exists() is False or inbox.events_path.stat().st_size < COMPACT_BYTES:
        seq += 1
        append(inbox, seq, "x" * 1000)
    while inbox.has_pending():
        inbox.take()
    assert inbox.events_path.stat().st_size == 0
    append(inbox, seq + 1, "after")
    assert [e.body for e in inbox.take().events] == ["after"]
    append(inbox, 1, "old id")  # still remembered by the seen-set
    assert inbox.take().events == ()


# --- inbox: hostile files -------------------------------------------------------------------


def test_damaged_lines_are_reported_and_later_events_still_arrive(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1, "before")
    good = json.loads(append(Inbox(root, "pi-other"), 9).to_line())
    with open(inbox.events_path, "ab") as f:
        f.write(b"not json\n")
        f.write(b"[" * 30_000 + b"\n")  # nested too deeply to parse
        f.write(json.dumps({**good, "ts": "soon"}).encode() + b"\n")  # wrong type
        f.write(b'{"id":"a:notice:1","ts":' + b"9" * 5000 + b"}\n")  # too large to parse
        f.write(b"x" * (OWNER_KIND.max_line + 10) + b"\n")  # over the line cap
        f.write(b"\xff\xfe\n")  # not UTF-8
        f.write(b"\n\n")
        f.write(json.dumps(good).encode() + b"\n")  # someone else's event
    append(inbox, 2, "after")
    batch = inbox.take()
    assert [e.body for e in batch.events] == ["before", "after"]
    problems = "\n".join(batch.problems)
    assert "not valid JSON" in problems and "nested too deeply" in problems
    assert "bad field(s) ts" in problems and f"over {OWNER_KIND.max_line} bytes" in problems
    assert "is for 'pi-other'" in problems


def test_a_line_cut_by_a_crash_does_not_swallow_the_next_event(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1, "one")
    with open(inbox.events_path, "ab") as f:
        f.write(b'{"id":"half')  # the producer died mid-append
    assert [e.body for e in inbox.pending().events] == ["one"]  # the half line waits
    append(inbox, 2, "two")
    batch = inbox.take()
    assert [e.body for e in batch.events] == ["one", "two"]
    assert len(batch.problems) == 1


def test_a_damaged_cursor_redelivers_rather_than_loses(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1)
    inbox.ack(inbox.pending())
    for damage in [b"{", b'{"offset": -1, "seen": []}', b'{"offset": "x"}', b"[" * 50_000]:
        inbox.cursor_path.write_bytes(damage)
        assert len(inbox.pending().events) == 1


def test_planted_symlinks_and_fifos_are_refused_without_hanging(root: Path, tmp_path: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    inbox.events_path.unlink()
    inbox.events_path.symlink_to(outside)
    with pytest.raises(OSError):
        append(inbox, 2)
    assert outside.read_text() == "keep me\n"
    assert Emitter(root, "bg").emit(OWNER, "job_exit", SRC, "x") is None  # logged, not raised
    inbox.events_path.unlink()
    os.mkfifo(inbox.events_path)
    with pytest.raises(OSError):
        append(inbox, 3)
    with pytest.raises(OSError):
        inbox.pending()


def test_a_symlinked_owner_dir_is_refused(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "owners").mkdir(parents=True)
    (root / "owners" / OWNER).symlink_to(elsewhere)
    with pytest.raises(Exception, match="symlink"):
        append(Inbox(root, OWNER), 1)
    assert list(elsewhere.iterdir()) == []


def test_files_are_private_whatever_the_umask(root: Path) -> None:
    old = os.umask(0)
    try:
        inbox = Inbox(root, OWNER)
        append(inbox, 1, "x" * 10_000)
        inbox.ack(inbox.pending())
    finally:
        os.umask(old)
    assert stat.S_IMODE(inbox.dir.stat().st_mode) == 0o700
    for path in inbox.dir.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


# --- inbox: concurrency ---------------------------------------------------------------------


def _produce(root: str, worker: int, count: int) -> None:
    inbox = Inbox(Path(root), OWNER)
    for seq in range(count):
        inbox.append("notice", SRC, f"w{worker} #{seq}", source_id=f"w{worker}", seq=seq)


def test_wait_returns_as_soon_as_an_event_lands(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    assert inbox.wait(0.0) is False
    timer = threading.Timer(0.1, lambda: append(Inbox(root, OWNER), 1))
    timer.start()
    try:
        assert inbox.wait(30.0) is True
    finally:
        timer.cancel()
    assert inbox.wait(0.0, until=lambda: True) is True  # pending wins over `until`


def test_event_from_dict_checks_every_field() -> None:
    good = Event("a:notice:1", "notice", OWNER, 5, SRC, "b", {"k": 1}).to_dict()
    assert event_from_dict(good)[0] is not None
    for key, bad in [
        ("id", 3),
        ("kind", "party"),
        ("ts", True),
        ("body", None),
        ("details", []),
        ("source", {"tool": 1}),
    ]:
        event, problem = event_from_dict({**good, key: bad})
        assert event is None and problem and key in problem
    assert event_from_dict([1])[1] == "not a JSON object"


def test_a_line_still_being_written_is_not_pending(root: Path) -> None:
    """A waiter must not wake (and spin) for a line whose newline has not arrived yet."""
    inbox = Inbox(root, OWNER)
    append(inbox, 1)
    inbox.ack(inbox.pending())
    with open(inbox.events_path, "ab") as f:
        f.write(b'{"id":"half')
    assert not inbox.has_pending()
    assert inbox.wait(0.1) is False
    append(inbox, 2, "two")  # closes the half line and adds a whole one
    assert inbox.has_pending()
    assert [e.body for e in inbox.take().events] == ["two"]


def test_only_duplicates_past_the_cursor_are_consumed_by_take(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    append(inbox, 1)
    inbox.take()
    append(inbox, 1)  # a retry of the same event
    assert inbox.has_pending()
    batch = inbox.take()
    assert batch.events == () and batch.duplicates == 1
    assert not inbox.has_pending()


def test_dropped_ids_are_never_delivered_and_the_rest_are(root: Path) -> None:
    inbox = Inbox(root, OWNER)
    one, two = append(inbox, 1, "one"), append(inbox, 2, "two")
    inbox.drop([one.id])
    assert [e.body for e in inbox.take().events] == ["two"]
    inbox.drop([two.id])  # already delivered: nothing changes
    assert not inbox.has_pending()


def test_the_kinds_at_run_time_are_the_kinds_type_checkers_see():
    """EVENT_KINDS (run time) and the EventKind Literal (type checkers only, so the hooks do
    not import typing) are written twice: they must not drift."""
    import ast
    from pathlib import Path

    from specialists.events import model

    tree = ast.parse(Path(model.__file__).read_text(encoding="utf-8"))
    literal = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "EventKind" for t in node.targets)
    )
    assert isinstance(literal, ast.Subscript) and isinstance(literal.slice, ast.Tuple)
    assert tuple(ast.literal_eval(e) for e in literal.slice.elts) == model.EVENT_KINDS
