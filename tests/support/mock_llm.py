"""A scriptable mock LLM server speaking OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, streaming and not, on 127.0.0.1 (stdlib only, one thread per request).

Tests queue `Reply` items; each model request pops one (FIFO, shared by every endpoint). When
the queue is empty the default rule answers: a `Reply`, or a callable `(Request) -> Reply`
that may look at the conversation (e.g. answer a tool result). Every request is recorded.

    with MockLLM() as m:
        m.enqueue(Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"})]), Reply("DONE"))
        ...  # point a client at m.openai_base_url (…/v1) or m.base_url (Anthropic)
        assert m.requests[-1].tool_results() == ["hi\\n"]

Streams use chunked transfer encoding like real servers, so a truncated stream is a transport
error on the client side, not a silent short answer.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

Api = Literal["chat", "responses", "anthropic", "other"]
Fault = Literal["malformed_json", "garbage", "truncate", "error_event"]

DEFAULT_MODELS = ("mock-model",)
# What Claude Code 2.1.332 appends to every tool result it sends (tests/fixtures/claude-code-*).
_REMINDER = re.compile(
    r"\n\n<system-reminder>\n<total_tokens>\d+ tokens left</total_tokens>\n</system-reminder>\Z"
)
DEFAULT_TEXT = "Hello from the mock. Done."


# --------------------------------------------------------------------------- script items


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # generated per provider style when None
    # Responses API only: the tool group the call belongs to (Codex groups each MCP server's
    # tools into one `namespace` tool, e.g. "mcp__specialists", and calls them by short name).
    namespace: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_tokens: int = 0


@dataclass(frozen=True)
class MockError:
    """An HTTP error, rendered in the shape of the provider that was called."""

    status: int
    kind: Literal["rate_limit", "server", "overloaded", "bad_request", "context_overflow", "auth"]
    message: str
    retry_after: float | None = None
    body: bytes | None = None  # raw body override (sent as-is, application/json)
    # A usage limit: its reset this many seconds after the request, in the reset headers of
    # the provider called (Anthropic's RFC 3339 `anthropic-ratelimit-*-reset`, OpenAI's
    # `x-ratelimit-reset-*` durations), with the exhausted limit's remaining at 0.
    resets_in: float | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted model answer (or failure).

    Behaviours: `chunk_delay` sleeps between stream events; `hang_after=n` sends n stream
    events and then blocks until `MockLLM.release()` (0: right after the headers; non-stream
    requests block before answering); `fault` breaks the stream after `fault_after` events:
    "malformed_json" (an SSE data line that is not JSON), "garbage" (binary junk),
    "truncate" (connection closed without ending the body), "error_event" (the provider's
    in-stream error event, e.g. Anthropic `overloaded_error`).
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    thinking: str = ""
    usage: Usage | None = None
    error: MockError | None = None
    stop_reason: str | None = None  # provider-native override, e.g. "max_tokens" / "length"
    chunk_size: int = 8  # characters per text / argument delta
    chunk_delay: float = 0.0
    hang_after: int | None = None
    fault: Fault | None = None
    fault_after: int = 2

    # -- error constructors (each provider renders its own real error body) --
    @staticmethod
    def rate_limited(retry_after: float = 1, message: str = "Rate limit reached") -> Reply:
        return Reply(error=MockError(429, "rate_limit", message, retry_after=retry_after))

    @staticmethod
    def usage_limited(resets_in: float, message: str = "Usage limit reached") -> Reply:
        """A 429 whose reset headers say when the limit lifts (`resets_in` s after it)."""
        return Reply(error=MockError(429, "rate_limit", message, resets_in=resets_in))

    @staticmethod
    def server_error(message: str = "Internal server error", status: int = 500) -> Reply:
        return Reply(error=MockError(status, "server", message))

    @staticmethod
    def overloaded(message: str = "Overloaded") -> Reply:
        return Reply(error=MockError(529, "overloaded", message))

    @staticmethod
    def bad_request(message: str = "Invalid request") -> Reply:
        return Reply(error=MockError(400, "bad_request", message))

    @staticmethod
    def context_overflow(tokens: int = 210_000, limit: int = 200_000) -> Reply:
        return Reply(error=MockError(400, "context_overflow", f"{tokens}>{limit}"))

    @staticmethod
    def auth_error(message: str = "invalid x-api-key") -> Reply:
        return Reply(error=MockError(401, "auth", message))


Rule = Callable[["Request"], Reply]


# --------------------------------------------------------------------------- request record


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # keys lower-cased
    json: Any  # parsed body, or None
    api: Api
    ts: float

    @property
    def model(self) -> str:
        return str((self.json or {}).get("model", ""))

    @property
    def api_key(self) -> str:
        """The key the client sent: x-api-key, or the Bearer token (newer Anthropic SDKs)."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        return self.headers.get("authorization", "").removeprefix("Bearer ")

    @property
    def stream(self) -> bool:
        return bool((self.json or {}).get("stream"))

    def messages(self) -> list[dict[str, Any]]:
        body = self.json or {}
        if self.api == "responses":
            items = body.get("input", [])
            if isinstance(items, str):
                return [{"role": "user", "content": items}]
            return list(items)
        return list(body.get("messages", []))

    def last_user_text(self) -> str:
        """Text of the last user-authored message (tool results excluded)."""
        for msg in reversed(self.messages()):
            if msg.get("role") != "user":
                continue
            text = _text_of(msg.get("content"), skip_tool_results=True)
            if text:
                return text
        return ""

    def tool_results(self) -> list[str]:
        """Every tool result in the conversation, oldest first, as text (all providers),
        without the `<system-reminder>` (tokens left) Claude Code 2.1.332 appends to each."""
        out: list[str] = []
        for msg in self.messages():
            if msg.get("role") == "tool":  # chat completions
                out.append(_text_of(msg.get("content")))
            elif msg.get("type") == "function_call_output":  # responses
                out.append(_text_of(msg.get("output")))
            elif msg.get("role") == "user" and isinstance(msg.get("content"), list):
                out.extend(  # anthropic
                    _REMINDER.sub("", _text_of(block.get("content")))
                    for block in msg["content"]
                    if isinstance(block, dict) and block.get("type") == "tool_result"
                )
        return out

    def system_text(self) -> str:
        body = self.json or {}
        if self.api == "anthropic":
            return _text_of(body.get("system"))
        if self.api == "responses":
            return str(body.get("instructions") or "")
        return "\n".join(
            _text_of(m.get("content"))
            for m in self.messages()
            if m.get("role") in ("system", "developer")
        )

    def tool_names(self) -> list[str]:
        names = []
        for tool in (self.json or {}).get("tools", []) or []:
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if fn.get("name"):
                names.append(str(fn["name"]))
        return names


class _Server(ThreadingHTTPServer):
    """The mock's HTTP server. A client that drops its kept-alive connection (an agent CLI
    exiting) resets it: that is the client's normal end, not the mock's error, so it prints
    no traceback; any other error of a request is printed as the standard server does."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


def _text_of(content: Any, *, skip_tool_results: bool = False) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if skip_tool_results and block.get("type") == "tool_result":
                    continue
                if "text" in block:
                    parts.append(str(block["text"]))
                elif block.get("type") == "tool_result":
                    parts.append(_text_of(block.get("content")))
        return "".join(parts)
    return str(content)


# --------------------------------------------------------------------------- SSE renderers

_ids = itertools.count(1)
Event = tuple[str | None, dict[str, Any]]  # (SSE event name, data)


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(reply: Reply) -> Usage:
    if reply.usage is not None:
        return reply.usage
    produced = len(reply.text) + len(reply.thinking)
    produced += sum(len(t.arguments_json()) for t in reply.tool_calls)
    return Usage(output_tokens=max(1, produced // 4))


def chat_events(reply: Reply, model: str, include_usage: bool) -> Iterator[Event]:
    n = next(_ids)
    base = {
        "id": f"chatcmpl-mock-{n}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, {**base, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _chunks(reply.thinking, reply.chunk_size):
        yield chunk({"reasoning_content": piece})
    for piece in _chunks(reply.text, reply.chunk_size):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id or f"call_mock_{n}_{index}"
        head = {"index": index, "id": call_id, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        for piece in _chunks(call.arguments_json(), reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    finish = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
    yield chunk({}, finish)
    if include_usage:
        u = _usage(reply)
        usage = {
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        }
        yield None, {**base, "choices": [], "usage": usage}


def chat_completion(reply: Reply, model: str) -> dict[str, Any]:
    n = next(_ids)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_mock_{n}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    u = _usage(reply)
    return {
        "id": f"chatcmpl-mock-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.stop_reason
                or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
        },
    }


def _responses_items(reply: Reply, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.thinking:
        items.append(
            {
                "id": f"rs_mock_{n}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
            }
        )
    if reply.text:
        items.append(
            {
                "id": f"msg_mock_{n}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for i, call in enumerate(reply.tool_calls):
        item = {
            "id": f"fc_mock_{n}_{i}",
            "type": "function_call",
            "status": "completed",
            "call_id": call.id or f"call_mock_{n}_{i}",
            "name": call.name,
            "arguments": call.arguments_json(),
        }
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def _response_object(
    reply: Reply, model: str, n: int, status: str, output: list[dict[str, Any]]
) -> dict[str, Any]:
    u = _usage(reply)
    done = status == "completed"
    incomplete = {"reason": "max_output_tokens"} if reply.stop_reason == "max_tokens" else None
    return {
        "id": f"resp_mock_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if (done and incomplete) else status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": incomplete if done else None,
        "usage": (
            {
                "input_tokens": u.input_tokens,
                "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
                "output_tokens": u.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u.input_tokens + u.output_tokens,
            }
            if done
            else None
        ),
    }


def responses_events(reply: Reply, model: str) -> Iterator[Event]:
    n = next(_ids)
    seq = itertools.count()

    def ev(kind: str, **data: Any) -> Event:
        return kind, {"type": kind, "sequence_number": next(seq), **data}

    yield ev("response.created", response=_response_object(reply, model, n, "in_progress", []))
    yield ev("response.in_progress", response=_response_object(reply, model, n, "in_progress", []))
    items = _responses_items(reply, n)
    for idx, item in enumerate(items):
        if item["type"] == "reasoning":
            yield ev("response.output_item.added", output_index=idx, item={**item, "summary": []})
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item["id"], "output_index": idx, "summary_index": 0}
            yield ev("response.reasoning_summary_part.added", **common, part=part)
            for piece in _chunks(reply.thinking, reply.chunk_size):
                yield ev("response.reasoning_summary_text.delta", **common, delta=piece)
            yield ev("response.reasoning_summary_text.done", **common, text=reply.thinking)
            yield ev(
                "response.reasoning_summary_part.done",
                **common,
                part={"type": "summary_text", "text": reply.thinking},
            )
        elif item["type"] == "message":
            yield ev(
                "response.output_item.added",
                output_index=idx,
                item={**item, "status": "in_progress", "content": []},
            )
            common = {"item_id": item["id"], "output_index": idx, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            yield ev("response.content_part.added", **common, part=empty)
            for piece in _chunks(reply.text, reply.chunk_size):
                yield ev("response.output_text.delta", **common, delta=piece, logprobs=[])
            yield ev("response.output_text.done", **common, text=reply.text, logprobs=[])
            yield ev("response.content_part.done", **common, part=item["content"][0])
        else:
            yield ev(
                "response.output_item.added",
                output_index=idx,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            common = {"item_id": item["id"], "output_index": idx}
            for piece in _chunks(item["arguments"], reply.chunk_size):
                yield ev("response.function_call_arguments.delta", **common, delta=piece)
            yield ev("response.function_call_arguments.done", **common, arguments=item["arguments"])
        yield ev("response.output_item.done", output_index=idx, item=item)
    final = _response_object(reply, model, n, "completed", items)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield ev(kind, response=final)


def response_object(reply: Reply, model: str) -> dict[str, Any]:
    n = next(_ids)
    return _response_object(reply, model, n, "completed", _responses_items(reply, n))


def _anthropic_blocks(reply: Reply, n: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking:
        blocks.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": f"sig-mock-{n}"}
        )
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        args = (
            call.arguments if isinstance(call.arguments, dict) else _loads_or_empty(call.arguments)
        )
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_mock_{n}_{i}",
                "name": call.name,
                "input": args,
            }
        )
    return blocks


def _loads_or_empty(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:  # deliberately broken arguments: streamed raw, final input empty
        return {}


def _anthropic_stop(reply: Reply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def anthropic_events(reply: Reply, model: str) -> Iterator[Event]:
    n = next(_ids)
    u = _usage(reply)
    message: dict[str, Any] = {
        "id": f"msg_mock_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": u.cache_read_tokens,
        },
    }
    yield "message_start", {"type": "message_start", "message": message}
    yield "ping", {"type": "ping"}
    raw_args = iter([call.arguments_json() for call in reply.tool_calls])
    for index, block in enumerate(_anthropic_blocks(reply, n)):
        if block["type"] == "thinking":
            start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _chunks(block["thinking"], reply.chunk_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": p} for p in _chunks(block["text"], reply.chunk_size)
            ]
        else:
            start = {**block, "input": {}}
            raw = next(raw_args)
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in ["", *_chunks(raw, reply.chunk_size)]
            ]
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _anthropic_stop(reply), "stop_sequence": None},
            "usage": {"output_tokens": u.output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    n = next(_ids)
    u = _usage(reply)
    return {
        "id": f"msg_mock_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(reply, n),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": u.cache_read_tokens,
        },
    }


# --------------------------------------------------------------------------- error bodies

_OPENAI_ERR = {
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "server": ("server_error", None),
    "overloaded": ("server_error", "overloaded"),
    "bad_request": ("invalid_request_error", None),
    "context_overflow": ("invalid_request_error", "context_length_exceeded"),
    "auth": ("invalid_request_error", "invalid_api_key"),
}
_ANTHROPIC_ERR = {
    "rate_limit": "rate_limit_error",
    "server": "api_error",
    "overloaded": "overloaded_error",
    "bad_request": "invalid_request_error",
    "context_overflow": "invalid_request_error",
    "auth": "authentication_error",
}


def error_body(err: MockError, api: Api) -> dict[str, Any]:
    """The provider's real error JSON for `err` (context overflow uses the real wording)."""
    message = err.message
    if err.kind == "context_overflow":
        tokens, _, limit = err.message.partition(">")
        if api == "anthropic":
            message = f"prompt is too long: {tokens} tokens > {limit} maximum"
        else:
            message = (
                f"This model's maximum context length is {limit} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the "
                "messages."
            )
    if api == "anthropic":
        return {
            "type": "error",
            "error": {"type": _ANTHROPIC_ERR[err.kind], "message": message},
            "request_id": f"req_mock_{next(_ids)}",
        }
    err_type, code = _OPENAI_ERR[err.kind]
    param = "messages" if err.kind == "context_overflow" else None
    return {"error": {"message": message, "type": err_type, "param": param, "code": code}}


# --------------------------------------------------------------------------- the server


class _Aborted(Exception):
    """The server is shutting down while a stream hangs: drop the connection."""


class MockLLM:
    """The server. Thread-safe; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        default: Reply | Rule | None = None,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        host: str = "127.0.0.1",
    ) -> None:
        self._lock = threading.Condition()
        self._queue: deque[Reply] = deque()
        self._requests: list[Request] = []
        self._default: Reply | Rule = default if default is not None else Reply(DEFAULT_TEXT)
        self._release_gen = 0
        self._hanging = 0
        self.errors: list[str] = []  # exceptions raised while serving (e.g. by a rule)
        self._stopping = False
        self.models = list(models)
        self._server = _Server((host, 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle --
    def start(self) -> MockLLM:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.05,), name="mock-llm", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> MockLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL, e.g. for ANTHROPIC_BASE_URL (the SDK appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    # -- script --
    def enqueue(self, *replies: Reply | str) -> None:
        """Queue replies (a plain string is a text reply); each model request pops one."""
        with self._lock:
            self._queue.extend(Reply(r) if isinstance(r, str) else r for r in replies)

    def set_default(self, default: Reply | Rule) -> None:
        """What to answer when the queue is empty: a fixed Reply or a `(Request) -> Reply`."""
        with self._lock:
            self._default = default

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def release(self) -> None:
        """Let every currently hanging stream continue (later hangs hang again)."""
        with self._lock:
            self._release_gen += 1
            self._lock.notify_all()

    # -- observation --
    @property
    def requests(self) -> list[Request]:
        """Every request received so far (all paths), oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[Request]:
        """Only the model calls (chat, responses, anthropic messages)."""
        return [r for r in self.requests if r.api != "other"]

    @property
    def hanging(self) -> int:
        with self._lock:
            return self._hanging

    def wait_for(
        self, predicate: Callable[[MockLLM], bool], timeout: float = 10.0, what: str = ""
    ) -> None:
        """Block until predicate(self) is true (re-checked on every request/hang change)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                self._lock.release()
                try:
                    ok = predicate(self)
                finally:
                    self._lock.acquire()
                if ok:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"mock LLM: timed out waiting for {what or predicate}")
                self._lock.wait(min(left, 0.05))

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[Request]:
        self.wait_for(lambda m: len(m.model_requests) >= n, timeout, f"{n} model requests")
        return self.model_requests

    def wait_until_hanging(self, n: int = 1, timeout: float = 10.0) -> None:
        self.wait_for(lambda m: m.hanging >= n, timeout, f"{n} hanging streams")

    # -- used by the handler --
    def _record(self, req: Request) -> None:
        with self._lock:
            self._requests.append(req)
            self._lock.notify_all()

    def _add_error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)
            self._lock.notify_all()

    def _next_reply(self, req: Request) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            default = self._default
        return default if isinstance(default, Reply) else default(req)

    def _hang(self) -> None:
        with self._lock:
            gen = self._release_gen
            self._hanging += 1
            self._lock.notify_all()
            try:
                while self._release_gen == gen and not self._stopping:
                    self._lock.wait()
                if self._stopping:
                    raise _Aborted
            finally:
                self._hanging -= 1
                self._lock.notify_all()


def _api_for(path: str) -> Api:
    p = path.split("?", 1)[0].rstrip("/")
    if p in ("/v1/chat/completions", "/chat/completions"):
        return "chat"
    if p in ("/v1/responses", "/responses"):
        return "responses"
    if p in ("/v1/messages", "/messages"):
        return "anthropic"
    return "other"


def _make_handler(mock: MockLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.mock = mock
    return Handler


class _Handler(BaseHTTPRequestHandler):
    mock: MockLLM
    protocol_version = "HTTP/1.1"
    server_version = "mock-llm/1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("mock-llm %s", format % args)

    # -- plumbing --
    def _read_json(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", "replace")}

    def _record(self, body: Any) -> Request:
        req = Request(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            json=body,
            api=_api_for(self.path),
            ts=time.time(),
        )
        self.mock._record(req)
        return req

    def _send_json(
        self, status: int, body: Any, headers: dict[str, str] | None = None, head: bool = False
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_mock_{next(_ids)}")
        self.send_header("x-request-id", f"req_mock_{next(_ids)}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- verbs --
    def do_HEAD(self) -> None:
        self._record(None)
        self._send_json(200, {}, head=True)

    def do_GET(self) -> None:
        self._record(None)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(200, self._models_body())
            return
        for prefix in ("/v1/models/", "/models/"):
            if path.startswith(prefix):
                name = path[len(prefix) :]
                if name in self.mock.models:
                    self._send_json(200, _model_entry(name))
                    return
        self._send_json(404, {"error": {"message": f"mock: no route GET {path}"}})

    def do_POST(self) -> None:
        body = self._read_json()
        req = self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            if req.api == "other":
                self._post_other(path, req)
                return
            self._serve_model(req)
        except (BrokenPipeError, ConnectionResetError) as exc:
            log.debug("mock-llm: client went away on %s: %s", path, exc)
            self.close_connection = True
        except _Aborted:
            self.close_connection = True
        except Exception as exc:  # a bug in the mock mid-response: drop it, keep it for the test
            log.exception("mock-llm: error serving %s", path)
            self.mock._add_error(f"{path}: {type(exc).__name__}: {exc}")
            self.close_connection = True

    def _post_other(self, path: str, req: Request) -> None:
        if path.endswith("/messages/count_tokens"):
            size = len(json.dumps(req.json or {}))
            self._send_json(200, {"input_tokens": max(1, size // 4)})
            return
        if path.endswith("/event_logging/batch"):  # Claude Code telemetry, if it slips through
            self._send_json(200, {})
            return
        log.warning("mock-llm: unhandled POST %s", path)
        self._send_json(404, {"error": {"message": f"mock: no route POST {path}"}})

    def _models_body(self) -> dict[str, Any]:
        data = [_model_entry(m) for m in self.mock.models]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }

    # -- model calls --
    def _serve_model(self, req: Request) -> None:
        try:
            reply = self.mock._next_reply(req)
        except Exception as exc:  # a broken rule: answer 500, keep it for the test
            log.exception("mock-llm: default rule failed on %s", req.path)
            self.mock._add_error(f"rule: {type(exc).__name__}: {exc}")
            reply = Reply.server_error(f"mock rule raised {type(exc).__name__}: {exc}")
        if reply.error is not None:
            self._send_error(reply.error, req.api)
            return
        model = req.model or "mock-model"
        if not req.stream:
            if reply.hang_after is not None:
                self.mock._hang()
            self._send_json(200, self._complete(reply, model, req.api))
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_mock_{next(_ids)}")
        self.end_headers()
        self.wfile.flush()
        for sent, payload in enumerate(self._stream_payloads(reply, model, req)):
            if reply.hang_after is not None and sent == reply.hang_after:
                self.mock._hang()
            if reply.fault is not None and sent == reply.fault_after:
                self._fault(reply.fault, req.api)
                return
            if sent and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            self._chunk(payload)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _complete(self, reply: Reply, model: str, api: Api) -> dict[str, Any]:
        if api == "chat":
            return chat_completion(reply, model)
        if api == "responses":
            return response_object(reply, model)
        return anthropic_message(reply, model)

    def _stream_payloads(self, reply: Reply, model: str, req: Request) -> Iterator[bytes]:
        events: Iterator[Event]
        if req.api == "chat":
            opts = (req.json or {}).get("stream_options") or {}
            events = chat_events(reply, model, bool(opts.get("include_usage")))
        elif req.api == "responses":
            events = responses_events(reply, model)
        else:
            events = anthropic_events(reply, model)
        for name, data in events:
            yield _sse(name, data)
        if req.api == "chat":
            yield b"data: [DONE]\n\n"

    def _fault(self, fault: Fault, api: Api) -> None:
        if fault == "malformed_json":
            name = "content_block_delta" if api == "anthropic" else None
            self._chunk(_sse_raw(name, '{"type": "content_block_delta", "delta": {"te'))
            self._chunk(_sse_raw(name, "this is not json"))
            self.wfile.write(b"0\r\n\r\n")
        elif fault == "garbage":
            self._chunk(b"\x00\xff\xfe garbage \x81\x82\n\n\x00")
            self.wfile.write(b"0\r\n\r\n")
        elif fault == "error_event":
            err = MockError(529, "overloaded", "Overloaded")
            if api == "anthropic":
                self._chunk(_sse("error", error_body(err, api)))
            elif api == "responses":
                body = {"code": "server_error", "message": "Overloaded"}
                self._chunk(_sse("error", {"type": "error", **body, "sequence_number": 999}))
            else:
                self._chunk(_sse(None, error_body(err, api)))
            self.wfile.write(b"0\r\n\r\n")
        # "truncate": write nothing more and drop the connection mid-body.
        self.wfile.flush()
        self.close_connection = True

    def _send_error(self, err: MockError, api: Api) -> None:
        headers: dict[str, str] = {}
        if err.retry_after is not None:
            headers["retry-after"] = f"{err.retry_after:g}"
            headers["retry-after-ms"] = str(int(err.retry_after * 1000))
        if err.resets_in is not None:
            headers.update(_reset_headers(err.resets_in, api))
        if err.body is not None:
            data = err.body
            self.send_response(err.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            return
        if api == "anthropic":
            headers["x-should-retry"] = "true" if err.status in (429, 500, 529) else "false"
        self._send_json(err.status, error_body(err, api), headers)


def _reset_headers(resets_in: float, api: Api) -> dict[str, str]:
    if api == "anthropic":
        at = time.time() + resets_in
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f"{at % 1:.3f}"[1:] + "Z"
        return {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": stamp,
            "anthropic-ratelimit-tokens-remaining": "40000",
            "anthropic-ratelimit-tokens-reset": time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1)
            ),
        }
    return {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": f"{resets_in:.3f}s",
        "x-ratelimit-remaining-tokens": "30000",
        "x-ratelimit-reset-tokens": "20ms",
    }


def _model_entry(name: str) -> dict[str, Any]:
    # The union of OpenAI's and Anthropic's model object, so both SDKs parse it.
    return {
        "id": name,
        "object": "model",
        "type": "model",
        "created": 1_700_000_000,
        "created_at": "2024-01-01T00:00:00Z",
        "display_name": name,
        "owned_by": "mock",
    }


def _sse(name: str | None, data: dict[str, Any]) -> bytes:
    return _sse_raw(name, json.dumps(data, separators=(",", ":")))


def _sse_raw(name: str | None, data: str) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {data}\n\n".encode()


def write_mockhttp_project(
    root: Path, openai_base_url: str, spec: str, *, name: str = "tester", config: str = ""
) -> Path:
    """A project whose `name` specialist is `spec`, with the `mockhttp` provider: the native
    loop over real HTTP to this mock, its key read from MOCK_KEY (which the caller sets);
    `config`: more lines for that provider's table (prices, say)."""
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / f"{name}.specialist.yaml").write_text(spec)
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        f'[providers.mockhttp]\nbase_url = "{openai_base_url}"\napi = "openai-chat"\n'
        f'api_key_env = "MOCK_KEY"\n{config}'
    )
    return root
