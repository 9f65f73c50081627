"""The conversation as plain frozen dataclasses, discriminated by a `kind` Literal.

A conversation is a flat sequence of items. Providers group consecutive model-side items
(thinking, assistant text, tool calls) into one provider message and consecutive tool
results into the provider's shape; the session file stores one line per complete turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never, get_args

# "event": inbox events the supervisor hands the agent (P2: the synthetic tag; the model
# reads them as a user message in the one event format).
UserSource = Literal["prompt", "steer", "follow_up", "system", "event"]
USER_SOURCES: tuple[str, ...] = get_args(UserSource)


@dataclass(frozen=True)
class UserMessage:
    text: str
    source: UserSource = "prompt"
    kind: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantText:
    text: str
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str | None = None  # Anthropic needs it to accept the block back
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    # Set when the model sent arguments that are not a JSON object; the call then gets an
    # error result instead of running.
    arguments_error: str | None = None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    text: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


Item = UserMessage | AssistantText | Thinking | ToolCall | ToolResult
MODEL_SIDE = ("assistant", "thinking", "tool_call")


def item_to_dict(item: Item) -> dict[str, Any]:
    if item.kind == "user":
        return {"kind": "user", "text": item.text, "source": item.source}
    if item.kind == "assistant":
        return {"kind": "assistant", "text": item.text}
    if item.kind == "thinking":
        out: dict[str, Any] = {"kind": "thinking", "text": item.text}
        if item.signature is not None:
            out["signature"] = item.signature
        return out
    if item.kind == "tool_call":
        out = {"kind": "tool_call", "id": item.id, "name": item.name}
        out["arguments"] = dict(item.arguments)
        if item.arguments_error is not None:
            out["arguments_error"] = item.arguments_error
        return out
    if item.kind == "tool_result":
        return {
            "kind": "tool_result",
            "call_id": item.call_id,
            "name": item.name,
            "text": item.text,
            "is_error": item.is_error,
        }
    assert_never(item)


def item_from_dict(data: Mapping[str, Any]) -> Item:
    """Rebuild an item; raises ValueError (with the offending kind/key) on a bad record."""
    kind = data.get("kind")
    try:
        if kind == "user":
            source = data.get("source", "prompt")
            if source not in USER_SOURCES:
                raise ValueError(f"unknown user source {source!r}")
            return UserMessage(str(data["text"]), source=source)
        if kind == "assistant":
            return AssistantText(str(data["text"]))
        if kind == "thinking":
            sig = data.get("signature")
            return Thinking(str(data["text"]), signature=None if sig is None else str(sig))
        if kind == "tool_call":
            args = data.get("arguments", {})
            if not isinstance(args, dict):
                raise ValueError("tool_call arguments must be an object")
            err = data.get("arguments_error")
            return ToolCall(
                str(data["id"]),
                str(data["name"]),
                args,
                arguments_error=None if err is None else str(err),
            )
        if kind == "tool_result":
            return ToolResult(
                str(data["call_id"]),
                str(data["name"]),
                str(data["text"]),
                is_error=bool(data.get("is_error", False)),
            )
    except KeyError as exc:
        raise ValueError(f"{kind} item lacks key {exc.args[0]!r}") from exc
    raise ValueError(f"unknown item kind {kind!r}")


def tool_calls_of(items: list[Item] | tuple[Item, ...]) -> list[ToolCall]:
    return [item for item in items if isinstance(item, ToolCall)]


def text_of(items: list[Item] | tuple[Item, ...]) -> str:
    return "".join(item.text for item in items if isinstance(item, AssistantText))
