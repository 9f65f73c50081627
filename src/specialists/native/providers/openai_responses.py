"""OpenAI Responses API over the official `openai` SDK, streaming, stateless (store=False).

`responses_params` and `ResponsesStreamParser` are pure; `OpenAIResponsesClient` is the SDK
edge with the one except clause that translates failures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
    StreamParser,
    dump_arguments,
    parse_arguments,
    stream_error,
)
from specialists.native.providers.openai_chat import OpenAIChatClient

_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def responses_input(items: tuple[Item, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item.kind == "user":
            out.append({"role": "user", "content": item.text})
        elif item.kind == "assistant":
            out.append({"role": "assistant", "content": item.text})
        elif item.kind == "tool_call":
            out.append(
                {
                    "type": "function_call",
                    "call_id": item.id,
                    "name": item.name,
                    "arguments": dump_arguments(item.arguments),
                }
            )
        elif item.kind == "tool_result":
            out.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": item.text}
            )
        # thinking: reasoning items cannot be replayed without encrypted content (store=False)
    return out


def responses_params(request: ModelRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "input": responses_input(request.items),
        "stream": True,
        "store": False,
    }
    if request.system:
        params["instructions"] = request.system
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            }
            for t in request.tools
        ]
        if request.tool_choice == "required":
            params["tool_choice"] = "required"
    if request.max_tokens:
        params["max_output_tokens"] = request.max_tokens
    effort = _EFFORT.get(request.thinking or "")
    if effort:
        params["reasoning"] = {"effort": effort, "summary": "auto"}
    return params


class ResponsesStreamParser:
    def __init__(self, label: str) -> None:
        self.label = label
        self.done: Done | None = None
        self.usage: UsageReport | None = None
        self.calls = 0
        self.received = False

    def feed(self, event: dict[str, Any]) -> Iterator[StreamEvent]:
        kind = event.get("type")
        self.received = True
        if kind == "response.output_text.delta":
            if event.get("delta"):
                yield TextDelta(str(event["delta"]))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if event.get("delta"):
                yield ThinkingDelta(str(event["delta"]))
        elif kind == "response.output_item.done":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                self.calls += 1
                call_id = str(item.get("call_id") or item.get("id") or f"call_{self.calls}")
                yield ToolCallDone(
                    parse_arguments(call_id, str(item.get("name") or ""), item.get("arguments"))
                )
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response") or {}
            self.usage = _usage(response.get("usage"))
            stop: StopReason = "tool_use" if self.calls else "end"
            details = response.get("incomplete_details") or {}
            if kind == "response.incomplete" or details.get("reason"):
                stop = "max_tokens" if details.get("reason") == "max_output_tokens" else "other"
            self.done = Done(stop, details.get("reason") or response.get("status"))
        elif kind == "response.failed":
            error = (event.get("response") or {}).get("error") or {}
            raise stream_error(
                self.label, error.get("code"), error.get("message") or "response failed"
            )
        elif kind == "error":
            raise stream_error(
                self.label, event.get("code"), event.get("message") or "stream error"
            )

    def finish(self) -> Iterator[StreamEvent]:
        if not self.received:
            raise ModelError(
                f"{self.label}: the provider sent an empty or unreadable stream", category="fatal"
            )
        if self.done is None:
            raise ModelError(
                f"{self.label}: the stream ended before the response completed",
                category="transient",
            )
        if self.usage is not None:
            yield self.usage
        yield self.done


def _usage(usage: Any) -> UsageReport | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    return UsageReport(
        input_tokens=max(0, int(usage.get("input_tokens") or 0) - cached),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=cached,
    )


class OpenAIResponsesClient(OpenAIChatClient):
    """The same SDK client as Chat Completions; another endpoint and parser."""

    def _parser(self) -> StreamParser:
        return ResponsesStreamParser(self.label)

    def _open(self, request: ModelRequest) -> Any:
        return self._client.responses.create(**responses_params(request))
