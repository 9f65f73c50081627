"""OpenAI-compatible Chat Completions (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp, Groq,
DeepSeek, Together, ...) over the official `openai` SDK, streaming.

`chat_params` and `ChatStreamParser` are pure (dicts in, events out); `OpenAIChatClient` is
the thin SDK edge, with the one except clause that translates SDK failures.
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
    dump_arguments,
    http_client,
    parse_arguments,
    stream_error,
)

if TYPE_CHECKING:
    from specialists.native.providers.registry import ResolvedModel


_FINISH: dict[str, StopReason] = {
    "stop": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def chat_messages(system: str, items: tuple[Item, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    text: list[str] = []
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        if not text and not calls:
            return
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            message["tool_calls"] = list(calls)
        elif message["content"] is None:
            message["content"] = ""
        out.append(message)
        text.clear()
        calls.clear()

    for item in items:
        if item.kind == "assistant":
            text.append(item.text)
        elif item.kind == "tool_call":
            fn = {"name": item.name, "arguments": dump_arguments(item.arguments)}
            calls.append({"id": item.id, "type": "function", "function": fn})
        elif item.kind == "thinking":
            continue  # compatible servers do not take reasoning back (DeepSeek rejects it)
        elif item.kind == "tool_result":
            flush()
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": item.text})
        else:
            flush()
            out.append({"role": "user", "content": item.text})
    flush()
    return out


def chat_params(request: ModelRequest, *, provider: str) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.system, request.items),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in request.tools
        ]
        if request.tool_choice == "required":
            params["tool_choice"] = "required"
    if request.max_tokens:
        # OpenAI's reasoning models refuse max_tokens; compatible servers may not know the new name.
        key = "max_completion_tokens" if provider == "openai" else "max_tokens"
        params[key] = request.max_tokens
    effort = _EFFORT.get(request.thinking or "")
    if effort and provider == "openai":
        params["reasoning_effort"] = effort
    return params


class ChatStreamParser:
    """Chat completion chunks (as dicts) -> stream events."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: UsageReport | None = None
        self.finish_reason: str | None = None
        self.received = False

    def feed(self, chunk: dict[str, Any]) -> Iterator[StreamEvent]:
        if not isinstance(chunk, dict):
            raise ModelError(f"{self.label}: malformed stream chunk", category="fatal")
        if "error" in chunk and not chunk.get("choices"):
            error = chunk["error"]
            if isinstance(error, dict):
                raise stream_error(self.label, error.get("code"), error.get("message"))
            raise stream_error(self.label, None, error)
        self.received = True
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = _usage(usage)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                yield TextDelta(content)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                yield ThinkingDelta(reasoning)
            for tc in delta.get("tool_calls") or []:
                self._add_call_piece(tc)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _add_call_piece(self, tc: dict[str, Any]) -> None:
        index = int(tc.get("index") or 0)
        slot = self.calls.setdefault(index, {"id": None, "name": "", "args": []})
        if tc.get("id"):
            slot["id"] = str(tc["id"])
        fn = tc.get("function") or {}
        if fn.get("name") and not slot["name"]:
            slot["name"] = str(fn["name"])
        if fn.get("arguments"):
            slot["args"].append(str(fn["arguments"]))

    def finish(self) -> Iterator[StreamEvent]:
        if not self.received:
            raise ModelError(
                f"{self.label}: the provider sent an empty or unreadable stream", category="fatal"
            )
        for index in sorted(self.calls):
            slot = self.calls[index]
            call_id = slot["id"] or f"call_{index}"
            yield ToolCallDone(parse_arguments(call_id, slot["name"], "".join(slot["args"])))
        if self.usage is not None:
            yield self.usage
        reason = self.finish_reason
        stop: StopReason = _FINISH.get(reason or "stop", "other")
        if self.calls and stop == "end":
            stop = "tool_use"
        yield Done(stop, reason)


def _usage(usage: dict[str, Any]) -> UsageReport:
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return UsageReport(
        input_tokens=max(0, prompt - cached),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )


class OpenAIChatClient(SdkStreamClient):
    def __init__(self, resolved: ResolvedModel, *, timeout_s: float = 600.0) -> None:
        import openai  # lazy: only a native job pays for the SDK import

        super().__init__(openai, resolved.info.label, resolved.base_url, timeout_s)
        self.provider = resolved.info.provider
        self._client = openai.OpenAI(
            api_key=resolved.api_key or "not-needed",
            base_url=resolved.base_url,
            max_retries=0,  # retries are the loop's business (classified, with a breaker)
            timeout=openai.Timeout(timeout_s, connect=10.0),
            http_client=http_client(openai),
        )

    def _parser(self) -> StreamParser:
        return ChatStreamParser(self.label)

    def _open(self, request: ModelRequest) -> Any:
        return self._client.chat.completions.create(**chat_params(request, provider=self.provider))
