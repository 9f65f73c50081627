"""procs/ cores: watch patterns and batching on a fake clock, UTF-8-safe log reads, isolate."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.procs.isolate import find_bwrap
from specialists.features.procs.output import read_since, read_tail
from specialists.features.procs.watch import LINE_INSPECT_CHARS, WatchBatcher, compile_watch

# --- watch patterns -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        ("ERROR", "must be a list"),
        ([1], "must be a list"),
        ([""], "pattern 1 is empty"),
        (["ok", "x" * 201], "pattern 2 is 201 characters"),
        (["(unclosed"], "does not compile"),
        (["[z-a]"], "does not compile"),
        (["a"] * 17, "at most 16"),
        # `regex` unrolls counted repeats when compiling: (?:a{99999}){99999} took all memory
        (["(?:a{1000}){1000}"], "repeats too much"),
        (["a{10001}"], "unrolls to 10,001 items"),
        (["(?:(?:a{30}){30}){30}"], "repeats too much"),  # nested thrice: 27,000 and more
        (["(?x)(?:a{1 000}){1 000}"], "repeats too much"),  # verbose: spaces in the count
        (["(?x)(?:a{1#}\n000}){1000}"], "spans lines"),  # a comment hiding part of a count
    ],
)
def test_bad_patterns_fail_before_anything_starts(patterns: object, message: str) -> None:
    with pytest.raises(UserError) as info:
        compile_watch(patterns)
    assert message in info.value.one_line()


def test_ordinary_counted_repeats_compile() -> None:
    uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # 36 items, not 6,144
    ok = [r"\d{4}-\d{2}-\d{2}", "[0-9a-f]{40}", r"(\d{1,3}\.){3}\d{1,3}", "(?:a{10}){100}"]
    ok += [uuid, ".{100}x.{200}", "a{10000}"]  # repeats one after another add, not multiply
    assert len(compile_watch(ok)) == 7


def batcher(**kw: object) -> WatchBatcher:
    return WatchBatcher(compile_watch(["ERROR", r"FAIL\b"]), **kw)  # type: ignore[arg-type]


def test_matches_are_batched_until_quiet_then_flushed() -> None:
    b = batcher(debounce_ms=1000, batch_lines=20, per_min=6)
    assert b.feed("ok", 0) == []
    assert b.feed("ERROR one", 100) == []
    assert b.feed("fine", 200) == []
    assert b.feed("FAIL two", 300) == []
    assert b.next_due_ms() == 1300
    assert b.due(1299) == []
    (batch,) = b.due(1300)
    assert batch.lines == ("ERROR one", "FAIL two") and (batch.first_line, batch.last_line) == (
        2,
        4,
    )
    assert b.next_due_ms() is None and b.lines_seen == 4 and b.matched == 2


def test_a_full_batch_goes_at_once() -> None:
    b = batcher(batch_lines=3)
    assert b.feed("ERROR 1", 0) == [] and b.feed("ERROR 2", 1) == []
    (batch,) = b.feed("ERROR 3", 2)
    assert len(batch.lines) == 3


def test_the_rate_limit_counts_what_it_holds_back_and_associative_lifts_it() -> None:
    b = batcher(batch_lines=1, per_min=2)
    sent = [b.feed(f"ERROR {n}", n * 1000) for n in range(5)]
    assert [len(s) for s in sent] == [1, 1, 0, 0, 0]
    assert b.suppressed == 3
    assert b.feed("ERROR later", 60_000) != []  # the window moved on
    free = batcher(batch_lines=1, per_min=2, associative=True)
    assert all(free.feed(f"ERROR {n}", n) for n in range(10))
    assert free.suppressed == 0


def test_close_flushes_the_open_batch() -> None:
    b = batcher()
    b.feed("ERROR at the end", 5)
    assert [x.lines for x in b.close(6)] == [("ERROR at the end",)]


def test_only_the_head_of_a_long_line_is_inspected_and_shown() -> None:
    b = batcher(batch_lines=1)
    assert b.feed("x" * LINE_INSPECT_CHARS + "ERROR", 0) == []
    (batch,) = b.feed("ERROR " + "y" * 5000, 1)
    assert len(batch.lines[0]) <= 1001


def test_a_pathological_pattern_cannot_freeze_the_matcher() -> None:
    b = WatchBatcher(compile_watch([r"(a+)+$"]), batch_lines=1)
    started = time.monotonic()
    for n in range(1000):
        b.feed("a" * 5000 + "!", n)
    assert time.monotonic() - started < 5.0  # 3 timeouts of 50 ms, then no matching at all
    assert b.timeouts == 3 and b.lines_seen == 1000
    assert b.patterns == [] and b.stopped is not None and "watching stopped" in b.stopped


# --- reading the log ------------------------------------------------------------------------


def test_reads_never_split_a_character(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes("aé€😀z\n".encode())  # 1 + 2 + 3 + 4 + 1 + 1 bytes
    whole = read_since(log, 0)
    assert whole.text == "aé€😀z\n" and whole.next_offset == 12
    inside = read_since(log, 2)  # inside 'é': its rest is skipped
    assert inside.text == "€😀z\n"
    cut = read_since(log, 0, max_bytes=5)  # 'a' 'é' then the first 2 bytes of '€'
    assert cut.text == "aé" and cut.next_offset == 3
    assert read_since(log, cut.next_offset).text == "€😀z\n"
    assert read_since(log, 99).text == "" and read_since(log, 99).next_offset == 99


def test_a_character_being_written_is_deferred(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"ok \xf0\x9f")  # half of an emoji so far
    first = read_since(log, 0)
    assert first.text == "ok " and first.next_offset == 3
    with open(log, "ab") as f:
        f.write(b"\x98\x80!")
    assert read_since(log, first.next_offset).text == "😀!"


def test_tail_returns_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text("".join(f"line {n}\n" for n in range(1, 10001)))
    assert read_tail(log, 3).text == "line 9998\nline 9999\nline 10000"
    assert read_tail(log, 1, max_bytes=4).text == "0000"
    assert read_tail(tmp_path / "missing", 5).text == ""


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_offsets_and_tails_are_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(UserError):
        read_since(tmp_path / "x", bad)  # type: ignore[arg-type]
    with pytest.raises(UserError):
        read_tail(tmp_path / "x", bad if bad != 1.5 else 0)  # type: ignore[arg-type]


def test_a_planted_fifo_or_symlink_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="not a regular file"):
        read_since(fifo, 0)
    link = tmp_path / "link.log"
    link.symlink_to("/etc/passwd")
    with pytest.raises(UserError, match="is a symbolic link; not followed"):
        read_tail(link, 5)


# --- isolate (real bubblewrap) --------------------------------------------------------------

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (scripts/setup installs it)"
)


def test_isolate_without_bwrap_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not installed; nothing was started"):
        find_bwrap(path_var=str(tmp_path))
