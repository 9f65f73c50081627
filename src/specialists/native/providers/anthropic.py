"""Anthropic Messages over the official `anthropic` SDK, streaming, with extended thinking.

`anthropic_params` and `AnthropicStreamParser` are pure; `AnthropicClient` is the SDK edge
with the one except clause that translates failures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from specialists.native.messages import Item
from specialists.native.model import (
    Done,
    ModelError,
    ModelRequest,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDone,
    UsageReport,
)
from specialists.native.providers.common import (
    SdkStreamClient,
    StreamParser,
    http_client,
    parse_arguments,
    stream_error,
)

if TYPE_CHECKING:
    from specialists.native.providers.registry import ResolvedModel

DEFAULT_MAX_TOKENS = 8192
THINKING_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}
_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def anthropic_messages(items: tuple[Item, ...]) -> list[dict[str, Any]]:
    """Items -> alternating user/assistant messages (consecutive same-role blocks merged)."""
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for item in items:
        if item.kind == "user":
            add("user", {"type": "text", "text": item.text or "(empty)"})
        elif item.kind == "tool_result":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": item.call_id,
                "content": item.text or "(no output)",
            }
            if item.is_error:
                block["is_error"] = True
            add("user", block)
        elif item.kind == "thinking":
            if item.signature:  # unsigned thinking is refused by the API; drop it
                add(
                    "assistant",
                    {"type": "thinking", "thinking": item.text, "signature": item.signature},
                )
        elif item.kind == "assistant":
            if item.text:
                add("assistant", {"type": "text", "text": item.text})
        else:
            add(
                "assistant",
                {
                    "type": "tool_use",
                    "id": item.id,
                    "name": item.name,
                    "input": dict(item.arguments),
                },
            )
    return out


def anthropic_params(request: ModelRequest) -> dict[str, Any]:
    max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
    params: dict[str, Any] = {
        "model": request.model,
        "messages": anthropic_messages(request.items),
        "stream": True,
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in request.tools
        ]
        if request.tool_choice == "required":
            params["tool_choice"] = {"type": "any"}  # Anthropic's name for "some tool"
    budget = THINKING_BUDGET.get(request.thinking or "")
    if budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        max_tokens = max(max_tokens, budget + 4096)  # the budget must leave room for the answer
    params["max_tokens"] = max_tokens
    return params


class AnthropicStreamParser:
    def __init__(self, label: str) -> None:
        self.label = label
        self.blocks: dict[int, dict[str, Any]] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_write = 0
        self.stop_reason: str | None = None
        self.stopped = False
        self.received = False

    def feed(self, event: dict[str, Any]) -> Iterator[StreamEvent]:
        kind = event.get("type")
        self.received = True
        if kind == "message_start":
            self._usage((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            self.blocks[int(event.get("index") or 0)] = {
                "type": block.get("type"),
                "id": block.get("id"),
                "name": block.get("name"),
                "json": [],
            }
        elif kind == "content_block_delta":
            yield from self._delta(int(event.get("index") or 0), event.get("delta") or {})
        elif kind == "content_block_stop":
            block = self.blocks.get(int(event.get("index") or 0))
            if block and block["type"] == "tool_use":
                call_id = str(block["id"] or f"toolu_{event.get('index')}")
                yield ToolCallDone(
                    parse_arguments(call_id, str(block["name"] or ""), "".join(block["json"]))
                )
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            error = event.get("error") or {}
            raise stream_error(self.label, error.get("type"), error.get("message") or error)

    def _delta(self, index: int, delta: dict[str, Any]) -> Iterator[StreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            yield TextDelta(str(delta["text"]))
        elif kind == "thinking_delta" and delta.get("thinking"):
            yield ThinkingDelta(str(delta["thinking"]))
        elif kind == "signature_delta" and delta.get("signature"):
            yield ThinkingDelta("", signature=str(delta["signature"]))
        elif kind == "input_json_delta":
            block = self.blocks.setdefault(
                index, {"type": "tool_use", "id": None, "name": None, "json": []}
            )
            block["json"].append(str(delta.get("partial_json") or ""))

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # message_delta carries cumulative counts: take the latest non-null value of each.
        self.input_tokens = int(usage.get("input_tokens") or self.input_tokens)
        self.output_tokens = int(usage.get("output_tokens") or self.output_tokens)
        self.cache_read = int(usage.get("cache_read_input_tokens") or self.cache_read)
        self.cache_write = int(usage.get("cache_creation_input_tokens") or self.cache_write)

    def finish(self) -> Iterator[StreamEvent]:
        if not self.received:
            raise ModelError(
                f"{self.label}: the provider sent an empty or unreadable stream", category="fatal"
            )
        if not self.stopped:
            raise ModelError(
                f"{self.label}: the stream ended before the message was complete",
                category="transient",
            )
        yield UsageReport(self.input_tokens, self.output_tokens, self.cache_read, self.cache_write)
        yield Done(_STOP.get(self.stop_reason or "end_turn", "other"), self.stop_reason)


class AnthropicClient(SdkStreamClient):
    def __init__(self, resolved: ResolvedModel, *, timeout_s: float = 600.0) -> None:
        import anthropic  # lazy: only a native job pays for the SDK import

        super().__init__(anthropic, resolved.info.label, resolved.base_url, timeout_s)
        self._client = anthropic.Anthropic(
            api_key=resolved.api_key,
            base_url=resolved.base_url,
            max_retries=0,  # retries are the loop's business (classified, with a breaker)
            timeout=anthropic.Timeout(timeout_s, connect=10.0),
            http_client=http_client(anthropic),
        )

    def _parser(self) -> StreamParser:
        return AnthropicStreamParser(self.label)

    def _open(self, request: ModelRequest) -> Any:
        return self._client.messages.create(**anthropic_params(request))
