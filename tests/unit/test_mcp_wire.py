"""mcp/wire.py: reading one line of MCP's JSON-RPC and shaping the answers, both eras."""

from __future__ import annotations

import json

import pytest

from specialists.fronts.mcp import wire
from specialists.fronts.mcp.wire import RpcError, read_message

MODERN_META = {
    wire.VERSION_KEY: "2026-07-28",
    wire.CAPABILITIES_KEY: {},
}
IDENTITY = wire.Identity("specialists", "9.9", "use run")


def line(obj: object) -> bytes:
    return json.dumps(obj).encode()


def refused(raw: bytes) -> RpcError:
    with pytest.raises(RpcError) as caught:
        read_message(raw)
    return caught.value


def test_a_request_and_a_notification():
    req = read_message(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert req is not None and req.is_request and req.id == 3 and req.params == {}
    note = read_message(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert note is not None and not note.is_request
    assert read_message(b"   \n") is None  # a blank line is nothing
    # a response to a request we never sent answers nothing
    assert read_message(line({"jsonrpc": "2.0", "id": 1, "result": {}})) is None


@pytest.mark.parametrize(
    ("raw", "code", "answered_id", "says"),
    [
        (b"not json", wire.PARSE_ERROR, None, "not JSON"),
        (b'{"jsonrpc":"2.0","id":7,"method":"x"', wire.PARSE_ERROR, 7, "not JSON"),
        (b'{"jsonrpc":"2.0","id":"a\xff","method":"x"}', wire.PARSE_ERROR, None, "not UTF-8"),
        (b"[1, 2]", wire.INVALID_REQUEST, None, "batches"),
        (b"5", wire.INVALID_REQUEST, None, "JSON object"),
        (line({"jsonrpc": "2.0", "id": 8, "method": 5}), wire.INVALID_REQUEST, 8, "no method"),
        (line({"id": 9, "method": "ping"}), wire.INVALID_REQUEST, 9, '"jsonrpc": "2.0"'),
        (line({"jsonrpc": "2.0", "id": True, "method": "x"}), wire.INVALID_REQUEST, None, "id"),
        (line({"jsonrpc": "2.0", "id": 1.5, "method": "x"}), wire.INVALID_REQUEST, None, "id"),
        (line({"jsonrpc": "2.0", "id": 2, "method": "x", "params": [1]}), -32602, 2, "object"),
        # an id too long to read whole is nobody's: not the first 296 digits of it
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}', -32700, None, "JSON"),
    ],
)
def test_what_cannot_be_read_is_refused_in_one_line(raw, code, answered_id, says):
    err = refused(raw)
    assert (err.code, err.request_id) == (code, answered_id)
    assert says in err.message and "\n" not in err.message


def test_deep_nesting_is_refused_before_anything_walks_it():
    deep: object = "x"
    for _ in range(wire.MAX_DEPTH + 1):
        deep = [deep]
    err = refused(line({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"a": deep}}))
    assert err.code == wire.INVALID_PARAMS and err.request_id == 4 and "nested" in err.message
    # deeper than the JSON parser goes: still one answer, not a crash
    bomb = b'{"jsonrpc":"2.0","id":5,"method":"x","params":{"a":' + b"[" * 200_000
    err = refused(bomb + b"]" * 200_000 + b"}}")
    assert err.code == wire.PARSE_ERROR and err.request_id == 5


def test_a_lone_surrogate_escape_is_refused_with_its_id():
    raw = b'{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"p":"a\\ud800b"}}'
    err = refused(raw)
    assert err.code == wire.INVALID_PARAMS and err.request_id == "s"
    assert "lone surrogate" in err.message
    # an escaped pair is text
    ok = read_message(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"\\ud83d\\ude00"}}')
    assert ok is not None and ok.params["p"] == "\U0001f600"


def test_an_oversized_line_is_answered_to_the_id_in_its_first_bytes():
    err = wire.oversized_error(b'{"jsonrpc": "2.0", "id" : "big-1", "method": "tools/call", ')
    assert err.request_id == "big-1" and "longer than 16 MiB" in err.message
    assert wire.oversized_error(b'{"jsonrpc":"2.0","method":"x","params":"').request_id is None
    assert wire.oversized_error(b'{"id":' + b"1" * 4090).request_id is None  # cut: unknown


def test_initialize_answers_the_clients_version_or_our_newest():
    for version in wire.HANDSHAKE_VERSIONS:
        assert (
            wire.initialize_result(IDENTITY, {"protocolVersion": version})["protocolVersion"]
            == version
        )
    for other in ("1999-01-01", "2026-07-28", None, 5):
        assert wire.handshake_version(other) == "2025-11-25"
    result = wire.initialize_result(IDENTITY, {"protocolVersion": "2025-06-18"})
    assert result["serverInfo"] == {"name": "specialists", "version": "9.9"}
    assert result["instructions"] == "use run" and "tools" in result["capabilities"]


def test_a_modern_request_names_a_version_we_speak_and_its_capabilities():
    ok = read_message(
        line({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}})
    )
    assert ok is not None and ok.modern_version == "2026-07-28"
    wire.check_modern(ok)

    old = wire.Message("tools/list", {"_meta": {**MODERN_META, wire.VERSION_KEY: "2025-11-25"}}, 2)
    with pytest.raises(RpcError) as caught:
        wire.check_modern(old)
    assert caught.value.code == -32022
    assert caught.value.data == {
        "supported": list(wire.SUPPORTED_VERSIONS),
        "requested": "2025-11-25",
    }

    bare = wire.Message("tools/list", {"_meta": {wire.VERSION_KEY: "2026-07-28"}}, 3)
    with pytest.raises(RpcError) as caught:
        wire.check_modern(bare)
    assert (
        caught.value.code == wire.INVALID_PARAMS and wire.CAPABILITIES_KEY in caught.value.message
    )


def test_modern_answers_say_their_type_who_we_are_and_how_long_to_cache():
    discovered = wire.reply(1, wire.discover_result(IDENTITY), modern=True, identity=IDENTITY)
    result = discovered["result"]
    assert result["resultType"] == "complete" and result["supportedVersions"][0] == "2026-07-28"
    assert result["_meta"][wire.SERVER_INFO_KEY] == {"name": "specialists", "version": "9.9"}
    assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
    listed = wire.tools_result([{"name": "run"}], modern=True)
    assert listed["ttlMs"] >= 0 and "cacheScope" in listed
    legacy = wire.reply(2, wire.tools_result([], modern=False), identity=IDENTITY)
    assert legacy == {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}
    # a result's own _meta is kept beside our serverInfo
    mixed = wire.reply(3, {"_meta": {"specialists/data": 1}}, modern=True, identity=IDENTITY)
    assert mixed["result"]["_meta"]["specialists/data"] == 1


def test_encode_is_one_utf8_line_even_for_text_that_is_not_text():
    out = wire.encode({"jsonrpc": "2.0", "id": 1, "result": {"t": "a\nb\u2028é"}})
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    assert json.loads(out)["result"]["t"] == "a\nb\u2028é"
    damaged = wire.encode({"jsonrpc": "2.0", "id": 1, "result": {"t": "x\udcff"}})
    assert json.loads(damaged.decode("utf-8"))["result"]["t"].startswith("x\ufffd")
