"""The conversation as plain frozen dataclasses, discriminated by a `kind` Literal.

A conversation is a flat sequence of items. Providers group consecutive model-side items
(thinking, assistant text, tool calls) into one provider message and consecutive tool
results into the provider's shape; the session file stores one line per complete turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, get_args

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


_ITEMS: dict[str, Any] = {
    cls.kind: cls for cls in (UserMessage, AssistantText, Thinking, ToolCall, ToolResult)
}


def item_to_dict(item: Item) -> dict[str, Any]:
    """One item as its session line holds it: the kind first, then its fields in declared
    order, an optional one (None by default) only when set."""
    out: dict[str, Any] = {"kind": item.kind}
    for f in fields(item):
        value = getattr(item, f.name)
        if f.name != "kind" and not (value is None and f.default is None):
            out[f.name] = dict(value) if f.name == "arguments" else value
    return out


def item_from_dict(data: Mapping[str, Any]) -> Item:
    """Rebuild an item; raises ValueError (with the offending kind/key) on a bad record."""
    kind = data.get("kind")
    cls = _ITEMS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown item kind {kind!r}")
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name == "kind" or (f.name not in data and f.default is not MISSING):
            continue
        if f.name not in data and f.default_factory is MISSING:
            raise ValueError(f"{kind} item lacks key {f.name!r}")
        value = data.get(f.name, {})
        if f.name == "source" and value not in USER_SOURCES:
            raise ValueError(f"unknown user source {value!r}")
        if f.name == "arguments" and not isinstance(value, dict):
            raise ValueError("tool_call arguments must be an object")
        if f.type == "bool":
            value = bool(value)
        elif f.type == "str" or (f.type == "str | None" and value is not None):
            value = str(value)
        values[f.name] = value
    item: Item = cls(**values)
    return item


def tool_calls_of(items: list[Item] | tuple[Item, ...]) -> list[ToolCall]:
    return [item for item in items if isinstance(item, ToolCall)]


def text_of(items: list[Item] | tuple[Item, ...]) -> str:
    return "".join(item.text for item in items if isinstance(item, AssistantText))
