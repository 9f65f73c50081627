"""The shared Ray connection's wire format: length-prefixed frames of a small tagged encoding.

A frame is a 4-byte big-endian length, then that many bytes of one encoded value. Values are
what the node actor's calls take and return (node.py: plain data): None, bool, int, float,
str, bytes, list, tuple, dict. No pickle: a frame can only ever decode to plain data.

Decoding is bounded: a frame over MAX_FRAME is refused before it is read (a job's code bundle
is the largest thing sent), nesting is capped, and every length is checked against what is
left, so a malformed frame is a `WireError`, never a crash or a huge allocation.
"""

from __future__ import annotations

import struct
from typing import Any

PROTOCOL = 1  # the hello answer names it; a client refuses a bridge that speaks another
MAX_FRAME = 256 * 2**20
MAX_DEPTH = 32
HEADER = struct.Struct(">I")
_LEN = struct.Struct(">I")
_INT = struct.Struct(">q")
_FLOAT = struct.Struct(">d")


class WireError(Exception):
    """A frame that is not one this protocol writes (the message says what is wrong)."""


def frame(value: Any) -> bytes:
    """`value` encoded, with its length in front; WireError if too large or not plain data."""
    parts: list[bytes] = []
    _encode(value, parts, 0)
    body = b"".join(parts)
    if len(body) > MAX_FRAME:
        raise WireError(f"a frame of {len(body) / 2**20:.0f} MiB is over {MAX_FRAME // 2**20} MiB")
    return HEADER.pack(len(body)) + body


def body_length(header: bytes) -> int:
    """The length a frame header announces; WireError over MAX_FRAME."""
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes announced, over the {MAX_FRAME} cap")
    return size


def decode(body: bytes) -> Any:
    view = memoryview(body)
    value, end = _decode(view, 0, 0)
    if end != len(view):
        raise WireError(f"{len(view) - end} bytes left after the value")
    return value


def _encode(value: Any, out: list[bytes], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH}")
    if value is None:
        out.append(b"N")
    elif value is True:
        out.append(b"T")
    elif value is False:
        out.append(b"F")
    elif isinstance(value, int):
        if -(2**63) <= value < 2**63:
            out.append(b"i" + _INT.pack(value))
        else:
            raw = str(value).encode()
            out.append(b"I" + _LEN.pack(len(raw)) + raw)
    elif isinstance(value, float):
        out.append(b"d" + _FLOAT.pack(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogateescape")
        out.append(b"s" + _LEN.pack(len(raw)))
        out.append(raw)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        out.append(b"b" + _LEN.pack(len(raw)))
        out.append(raw)
    elif isinstance(value, (list, tuple)):
        out.append((b"l" if isinstance(value, list) else b"t") + _LEN.pack(len(value)))
        for item in value:
            _encode(item, out, depth + 1)
    elif isinstance(value, dict):
        out.append(b"m" + _LEN.pack(len(value)))
        for key, item in value.items():
            _encode(key, out, depth + 1)
            _encode(item, out, depth + 1)
    else:
        raise WireError(f"cannot send a {type(value).__name__}")


def _take(view: memoryview, at: int, size: int) -> int:
    if size < 0 or at + size > len(view):
        raise WireError(f"a value runs past the end of its frame (at byte {at})")
    return at + size


def _decode(view: memoryview, at: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH}")
    end = _take(view, at, 1)
    tag = view[at : at + 1].tobytes()
    if tag in (b"N", b"T", b"F"):
        return {b"N": None, b"T": True, b"F": False}[tag], end
    if tag == b"i":
        stop = _take(view, end, 8)
        return _INT.unpack_from(view, end)[0], stop
    if tag == b"d":
        stop = _take(view, end, 8)
        return _FLOAT.unpack_from(view, end)[0], stop
    if tag not in (b"I", b"s", b"b", b"l", b"t", b"m"):
        raise WireError(f"unknown tag {tag!r} at byte {at}")
    start = _take(view, end, 4)
    (count,) = _LEN.unpack_from(view, end)
    if tag in (b"I", b"s", b"b"):
        stop = _take(view, start, count)
        raw = view[start:stop].tobytes()
        if tag == b"b":
            return raw, stop
        try:
            text = raw.decode("utf-8", "surrogateescape")
            return (int(text) if tag == b"I" else text), stop
        except ValueError:
            raise WireError(f"a bad {'number' if tag == b'I' else 'text'} at byte {at}") from None
    _take(view, start, count)  # each item takes one byte at least: a cheap bound
    at = start
    if tag == b"m":
        mapping: dict[Any, Any] = {}
        for _ in range(count):
            key, at = _decode(view, at, depth + 1)
            item, at = _decode(view, at, depth + 1)
            try:
                mapping[key] = item
            except TypeError:
                raise WireError(f"an unhashable key before byte {at}") from None
        return mapping, at
    items = []
    for _ in range(count):
        item, at = _decode(view, at, depth + 1)
        items.append(item)
    return (items if tag == b"l" else tuple(items)), at
