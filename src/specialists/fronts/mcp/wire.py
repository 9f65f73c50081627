"""MCP's JSON-RPC 2.0 framing on stdio, without I/O: read one line, choose the protocol era and
version, shape the answers. Standard library only: the server answers `initialize` before it
imports anything else (docs/mcp.md, "Start-up time").

Two eras share one process (the 2026-07-28 spec, "Versioning"):
- legacy: `initialize` negotiates one of HANDSHAKE_VERSIONS for the whole connection;
- modern: every request names its version in `params._meta` (MODERN_VERSIONS), with no
  handshake; `server/discover` lists what we speak. Its results carry `resultType` and our
  `serverInfo` in `_meta`; list results carry caching hints.

A request we cannot read gets one JSON-RPC error naming what is wrong, answered to its id
when one can be found, never silence (a client would wait forever).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is ~5 ms of a start the client waits for
if TYPE_CHECKING:
    from typing import Any

MODERN_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *HANDSHAKE_VERSIONS)

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
LIST_TTL_MS = 300_000  # our tool list never changes while the process lives

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNSUPPORTED_VERSION = -32022  # 2026-07-28

MAX_LINE_BYTES = 16 * 1024 * 1024  # a prompt is at most 200,000 characters; this is plenty
MAX_DEPTH = 64  # nesting of a request: our arguments are at most three levels deep


class RpcError(Exception):
    """A message that gets a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, request_id: Any = None, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.data = data


class Message:
    """One client message: a request (has an id) or a notification (has none)."""

    __slots__ = ("id", "is_request", "method", "params")

    def __init__(
        self, method: str, params: dict[str, Any], id: Any = None, is_request: bool = False
    ) -> None:
        self.method = method
        self.params = params
        self.id = id
        self.is_request = is_request

    @property
    def modern_version(self) -> str | None:
        """The version a modern (2026-07-28) request names in `_meta`, else None."""
        meta = self.params.get("_meta")
        if isinstance(meta, dict) and VERSION_KEY in meta:
            version = meta[VERSION_KEY]
            return version if isinstance(version, str) else repr(version)[:40]
        return None


def read_message(line: bytes) -> Message | None:
    """The message on one line (without its newline), or None for a blank line or a
    response (we send no requests, so a response answers nothing). Raises RpcError."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RpcError(
            PARSE_ERROR, f"the message is not UTF-8 ({exc.reason})", _id_in(line)
        ) from exc
    try:
        raw = json.loads(text)
    except RecursionError as exc:
        raise RpcError(PARSE_ERROR, "the message is nested too deeply", _id_in(line)) from exc
    except ValueError as exc:
        raise RpcError(PARSE_ERROR, f"the message is not JSON ({exc})", _id_in(line)) from exc
    if isinstance(raw, list):
        raise RpcError(INVALID_REQUEST, "JSON-RPC batches are not part of MCP: send one message")
    if not isinstance(raw, dict):
        raise RpcError(INVALID_REQUEST, f"a message is a JSON object, not {type(raw).__name__}")
    has_id = "id" in raw
    request_id = raw.get("id")
    if has_id and (isinstance(request_id, bool) or not isinstance(request_id, int | str)):
        raise RpcError(INVALID_REQUEST, "a request id is a string or an integer")
    if raw.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'the message lacks "jsonrpc": "2.0"', request_id)
    method = raw.get("method")
    if method is None and ("result" in raw or "error" in raw):
        return None
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "the message has no method name", request_id)
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{method[:60]}: params must be an object", request_id)
    if _too_deep(params):
        raise RpcError(
            INVALID_PARAMS,
            f"{method[:60]}: the request is nested more than {MAX_DEPTH} levels deep",
            request_id,
        )
    if b"\\u" in line and not _is_text(params):  # only an escape can smuggle a surrogate in
        raise RpcError(
            INVALID_PARAMS,
            "the request holds a lone surrogate escape (e.g. \\ud800), which is not text "
            "(send valid UTF-8)",
            request_id,
        )
    return Message(method, params, request_id, is_request=has_id)


def oversized_error(head: bytes) -> RpcError:
    """The answer to a line longer than MAX_LINE_BYTES (its id read from its first bytes)."""
    return RpcError(
        INVALID_REQUEST,
        f"the message is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB; it was skipped",
        _id_in(head),
    )


def _id_in(head: bytes) -> Any:
    """A request id found in the first bytes of a line we could not parse, else None."""
    at = head.find(b'"id"', 0, 4096)
    if at < 0:
        return None
    rest = head[at + 4 : at + 300].lstrip()
    if not rest.startswith(b":"):
        return None
    rest = rest[1:].lstrip()
    text = rest.decode("utf-8", "replace")
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    if end == len(text) and isinstance(value, int):
        return None  # digits up to where we stopped looking: the id may go on beyond
    if isinstance(value, str) and "\ufffd" in value:
        return None  # bytes that were not text: not the id the client holds
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _is_text(value: Any) -> bool:
    """No lone surrogate anywhere in the keys and strings of `value`."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --------------------------------------------------------------------------- versions


def handshake_version(requested: Any) -> str:
    """`initialize`: the client's version when we speak it, else our newest handshake one."""
    return requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]


def check_modern(message: Message) -> None:
    """A modern request's version and required `_meta` fields, or a RpcError."""
    version = message.modern_version
    if version not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            message.id,
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
    meta = message.params["_meta"]
    if not isinstance(meta.get(CAPABILITIES_KEY), dict):
        raise RpcError(
            INVALID_PARAMS,
            f"{message.method}: _meta lacks {CAPABILITIES_KEY} (required since {version})",
            message.id,
        )


# --------------------------------------------------------------------------- answers


class Identity:
    """Who the server says it is."""

    __slots__ = ("instructions", "name", "version")

    def __init__(self, name: str, version: str, instructions: str) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions

    def info(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


def initialize_result(identity: Identity, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": handshake_version(params.get("protocolVersion")),
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": identity.info(),
        "instructions": identity.instructions,
    }


def discover_result(identity: Identity) -> dict[str, Any]:
    return {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": identity.instructions,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "private",
    }


def tools_result(tools: list[dict[str, Any]], modern: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": tools}
    if modern:
        result.update(ttlMs=LIST_TTL_MS, cacheScope="private")
    return result


def reply(
    request_id: Any, result: dict[str, Any], *, modern: bool = False, identity: Identity | None
) -> dict[str, Any]:
    """A result response; a modern one says `resultType` and who we are."""
    if modern:
        result = {**result, "resultType": "complete"}
        if identity is not None:
            result["_meta"] = {**result.get("_meta", {}), SERVER_INFO_KEY: identity.info()}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_reply(error: RpcError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": error.request_id, "error": body}


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON. A string we hold that is not text (a lone surrogate read from
    a damaged file) becomes U+FFFD rather than a line the client cannot read."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return data + b"\n"
