"""The typed reader: what each check refuses, and how its problems read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.reader import (
    Fields,
    Invalid,
    check_tree,
    describe,
    describe_json,
    integer_value,
    number_value,
    plain_data,
    text_value,
)
from specialists.reader.textfile import MAX_FILE_BYTES, read_text_file


def problem(call: object, *args: object, **kwargs: object) -> Invalid:
    with pytest.raises(Invalid) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    assert "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize(
    ("value", "form", "message"),
    [
        ("a\x00b", "prose", "contains a NUL character (at character 1)"),
        ("a\nb", "line", "contains a control character (U+000A at character 1); expected one"),
        ("a\tb", "line", "contains a control character (U+0009"),
        ("\x1b[31m", "arg", "contains a control character (U+001B at character 0); expected a"),
        ("a\x85b", "line", "contains a control character (U+0085"),
        ("\ud800", "prose", "is not valid Unicode text (a lone surrogate at character 0)"),
        ("x" * 131072, "arg", "is too long for a command line (131,072 bytes > 128 KiB)"),
    ],
)
def test_text_refuses_what_its_destination_cannot_carry(
    value: str, form: str, message: str
) -> None:
    assert problem(text_value, value, "f", form=form).problem.startswith(message)


@pytest.mark.parametrize(
    ("value", "form"),
    [("a\nb\tc\r", "arg"), ("\x1b[1mbold", "prose"), ("héllo wörld ✓", "line"), ("", "line")],
)
def test_text_accepts_what_its_destination_can_carry(value: str, form: str) -> None:
    assert text_value(value, "f", form=form) == value


def test_text_limits_and_emptiness() -> None:
    assert problem(text_value, "abcd", "f", max_chars=3).problem == "is too long (4 > 3 characters)"
    assert problem(text_value, "  ", "f", non_empty=True).problem == "must not be empty"
    wrong = problem(text_value, 5, "execution.model")
    assert str(wrong) == "execution.model: expected text, got a number (5)"
    assert (wrong.expected, wrong.found, wrong.kind) == ("text", "a number (5)", "value")


def test_numbers() -> None:
    assert integer_value(3.0, "n") == 3
    assert (
        problem(integer_value, True, "n").problem
        == "expected a whole number, got true/false (true)"
    )
    assert "got a number (inf)" in problem(integer_value, float("inf"), "n").problem
    assert problem(integer_value, 500, "n", low=1, high=200).problem == (
        "expected between 1 and 200, got 500"
    )
    # a range no person would write is shown by the end that was crossed
    assert problem(integer_value, 0, "n", low=1, high=2**31).problem == "expected at least 1, got 0"
    assert problem(integer_value, 10**40, "n", low=1, high=2**31).problem == (
        "expected at most 2,147,483,648, got a 133-bit integer"
    )
    assert "(finite)" in problem(number_value, float("nan"), "p").problem
    assert number_value(2, "p", low=0) == 2.0


def test_describe_never_floods_a_line() -> None:
    assert describe("x" * 500) == f"text ({'x' * 39 + '…'!r})"
    assert describe(10**5000) == "a number (a 16610-bit integer)"
    assert describe_json(None) == "null" and describe_json({}) == "an object"
    assert describe_json("\x1b[2J") == repr("\x1b[2J")  # escapes never reach a terminal raw


def test_fields_read_typed_values_and_warn_on_unknown_keys_with_a_close_name() -> None:
    warnings: list[str] = []
    fields = Fields({"modle": "m", "tags": "one", "max_turns": 3}, "execution", warnings)
    assert fields.text("model") is None
    assert fields.text_list("tags") == ["one"]
    assert fields.integer("max_turns", low=1) == 3
    fields.finish()
    assert warnings == ["execution.modle: unknown key, ignored (did you mean 'model'?)"]


def test_fields_strict_finish_and_required_keys() -> None:
    fields = Fields({"run": "x", "phse": "pre"}, "scripts[0]")
    fields.text("run")
    fields.choice("phase", ("pre", "post"))
    unknown = problem(fields.finish_strict)
    assert unknown.kind == "unknown" and unknown.field == "scripts[0].phse"
    assert "did you mean 'phase'?" in unknown.problem
    missing = problem(Fields({}, "").require, "name")
    assert (missing.kind, missing.field) == ("missing", "name")


def test_a_key_with_control_characters_is_quoted_in_messages() -> None:
    warnings: list[str] = []
    Fields({"\x1b[2Jx": 1}, "top", warnings).finish()
    assert warnings == ["top.'\\x1b[2Jx': unknown key, ignored"]


def test_check_tree_stops_alias_bombs_cycles_and_depth() -> None:
    leaf: list[object] = ["lol"] * 9
    for _ in range(8):
        leaf = [leaf] * 9  # 9**9 leaves, 10 objects: what YAML aliases build
    assert "more than 20,000 values" in problem(check_tree, leaf).problem
    cycle: list[object] = []
    cycle.append(cycle)
    assert "nested too deeply" in problem(check_tree, cycle).problem
    check_tree({"a": [1, 2, {"b": None}]})


def test_plain_data_is_bounded_and_refuses_what_cannot_be_an_option() -> None:
    assert plain_data({"a": [1, "x", None, 2.5]}, "opts") == {"a": [1, "x", None, 2.5]}
    assert "opts.a[1]: contains a NUL" in str(problem(plain_data, {"a": [1, "\x00"]}, "opts"))
    assert "finite number" in str(problem(plain_data, {"t": float("inf")}, "opts"))
    assert "finite number" in str(problem(plain_data, {"t": 10**20}, "opts"))
    assert "keys must be text" in str(problem(plain_data, {1: 2}, "opts"))


# --- files -----------------------------------------------------------------------------------


def test_read_text_file_accepts_a_small_utf8_file_and_a_symlink_to_one(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes("\ufeffhé\n".encode())
    (tmp_path / "link.txt").symlink_to(real)
    assert read_text_file(real) == read_text_file(tmp_path / "link.txt") == "hé\n"
    with pytest.raises(FileNotFoundError):
        read_text_file(tmp_path / "absent")


def test_read_text_file_refuses_special_and_oversized_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert problem(read_text_file, fifo).problem == "is a FIFO (named pipe), not a regular file"
    assert "character device" in problem(read_text_file, Path("/dev/null")).problem
    assert "is a directory" in problem(read_text_file, tmp_path).problem
    big = tmp_path / "big"
    with big.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    assert "is too large (1,048,577 bytes" in problem(read_text_file, big).problem
    assert "cannot read file" in problem(read_text_file, Path("a\x00b")).problem


def test_read_text_file_stops_at_the_limit_even_when_stat_lies() -> None:
    """/proc files report size 0 whatever they hold: reading stops at the limit anyway."""
    proc = Path("/proc/self/maps")
    if not proc.is_file() or proc.stat().st_size != 0:
        pytest.skip("no /proc file that reports size 0 here")
    assert problem(read_text_file, proc, limit=64).problem == "is too large (more than 64 bytes)"
