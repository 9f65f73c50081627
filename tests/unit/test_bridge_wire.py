"""The shared Ray connection's frames (bridge_wire.py): plain data only, and bounded."""

from __future__ import annotations

import struct

import pytest

from specialists.executors.bridge_wire import (
    HEADER,
    MAX_DEPTH,
    MAX_FRAME,
    WireError,
    body_length,
    decode,
    frame,
)


def roundtrip(value: object) -> object:
    data = frame(value)
    assert body_length(data[: HEADER.size]) == len(data) - HEADER.size
    return decode(data[HEADER.size :])


def test_every_kind_of_value_the_node_calls_use_comes_back_the_same():
    """What node.py takes and returns (dicts of lists of (seq, kind, payload) tuples, bytes,
    text with odd characters, big and negative numbers) survives the trip unchanged, with
    tuples still tuples and bools still bools."""
    value = {
        "items": [(1, "out", b"line\n"), (2, "err", b"\x00\xff")],
        "n": -(2**63),
        "big": 2**80,
        "x": 1.5,
        "flags": [True, False, None],
        "text": "é \udcff ✓",
        "nested": {"a": {"b": [[], {}, ()]}},
        3: "an int key",
    }
    back = roundtrip(value)
    assert back == value
    assert isinstance(back["items"][0], tuple)
    assert back["flags"][0] is True


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"", "past the end"),
        (b"Q", "unknown tag"),
        (b"NN", "left after"),
        (b"s" + struct.pack(">I", 10) + b"abc", "past the end"),
        (b"l" + struct.pack(">I", 2**31), "past the end"),
        (b"i\x00\x00", "past the end"),
        (b"m" + struct.pack(">I", 1) + b"l" + struct.pack(">I", 0) + b"N", "unhashable"),
        (b"I" + struct.pack(">I", 3) + b"1x2", "bad number"),
    ],
)
def test_a_malformed_frame_is_one_wire_error(body, what):
    """Truncated values, unknown tags, trailing bytes, a count far past the frame's end
    (refused before anything is allocated), unhashable keys: each is a WireError saying what."""
    with pytest.raises(WireError, match=what):
        decode(body)


def test_nesting_past_the_cap_is_refused_both_ways():
    deep: list[object] = []
    for _ in range(MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(WireError, match="nested"):
        frame(deep)
    body = (b"l" + struct.pack(">I", 1)) * (MAX_DEPTH + 2) + b"N"
    with pytest.raises(WireError, match="nested"):
        decode(body)


def test_an_oversized_header_is_refused_before_its_body_is_read():
    with pytest.raises(WireError, match="over"):
        body_length(HEADER.pack(MAX_FRAME + 1))
    assert body_length(HEADER.pack(MAX_FRAME)) == MAX_FRAME


def test_only_plain_data_is_sent():
    """No pickle, so an object cannot travel (nor arrive) by accident."""
    with pytest.raises(WireError, match="cannot send a object"):
        frame({"x": object()})
