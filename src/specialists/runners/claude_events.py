"""`claude -p --output-format stream-json --verbose` lines -> normalized runner events. Pure.

Facts (Claude Code 2.1.197, see shared/reference/claude-code/):
- `system/init` carries session_id; `system/api_retry` reports provider retries.
- An `assistant` line holds one or more content blocks of one API message; Claude Code may
  split one message over several lines with the same `message.id`.
- `user` lines carry `tool_result` blocks (matched to `tool_use` by id).
- `stream_event` lines (only with --include-partial-messages) carry raw Anthropic deltas.
- The run ends with one `result` line. API failures come as subtype "success" with
  `is_error: true` and the message in `result`; error_max_turns / error_during_execution
  carry an `errors` list and no `result`. With --json-schema the answer is in
  `structured_output` (the model's StructuredOutput tool call) and `result` holds its JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specialists.runners.base import (
    Activity,
    AnswerDelta,
    RunFinished,
    RunnerEvent,
    Usage,
    agent_started,
    cost_amount,
    session_id,
    token_count,
    tool_end,
    toolcall,
)


def usage_from_result(obj: Mapping[str, Any]) -> Usage:
    usage = obj.get("usage") if isinstance(obj.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    cost = obj.get("total_cost_usd")
    return Usage(
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=token_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=token_count(usage.get("cache_creation_input_tokens")),
        cost_usd=cost_amount(cost),
    )


def answer_of(obj: Mapping[str, Any]) -> str:
    """The answer of a successful `result` line: the structured output (--json-schema) as
    JSON when there is one, else the final text."""
    structured = obj.get("structured_output")
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    text = obj.get("result")
    return text if isinstance(text, str) else ""


def result_error(obj: Mapping[str, Any]) -> str | None:
    """The error of a `result` line, or None when the run succeeded."""
    subtype = str(obj.get("subtype") or "")
    if subtype == "success" and not obj.get("is_error"):
        return None
    errors = obj.get("errors")
    if isinstance(errors, list) and errors:
        message = "; ".join(str(e) for e in errors)
    elif isinstance(obj.get("result"), str) and obj["result"]:
        message = obj["result"]
    else:
        message = f"claude run failed ({subtype or 'no subtype'})"
    if subtype == "error_max_turns":
        return f"max turns reached: {message}"
    return message


class ClaudeTranslator:
    """Turns one claude process's stdout objects into events. One instance per process."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.finished = False  # a `result` line was seen
        self.aborting = False  # set by the runner when it interrupts the run
        self._message_id: str | None = None  # the assistant message being received
        self._texted: set[str] = set()  # messages that already logged their `text` event
        self._thought: set[str] = set()
        self._streamed: set[str] = set()  # messages whose text came as stream deltas
        self._tools: dict[str, tuple[str, float]] = {}  # tool_use id -> (name, started)

    # --- a successor supervisor (runners/oneshot.py `adopt_state`) ----------------------

    def adopt_state(self, now: float) -> dict[str, Any]:
        tools = {k: [name, round(now - at, 3)] for k, (name, at) in self._tools.items()}
        return {
            "session_id": self.session_id,
            "finished": self.finished,
            "aborting": self.aborting,
            "message_id": self._message_id,
            "texted": sorted(self._texted),
            "thought": sorted(self._thought),
            "streamed": sorted(self._streamed),
            "tools": tools,
        }

    def restore(self, state: Mapping[str, Any], now: float) -> None:
        self.session_id = state["session_id"]
        self.finished, self.aborting = bool(state["finished"]), bool(state["aborting"])
        self._message_id = state["message_id"]
        self._texted, self._thought = set(state["texted"]), set(state["thought"])
        self._streamed = set(state["streamed"])
        self._tools = {str(k): (str(n), now - float(a)) for k, (n, a) in state["tools"].items()}

    def feed(self, obj: Mapping[str, Any], now: float) -> list[RunnerEvent]:
        kind = obj.get("type")
        self.session_id = session_id(obj.get("session_id")) or self.session_id
        if kind == "system":
            return self._system(obj)
        if kind == "assistant":
            return self._assistant(obj, now)
        if kind == "user":
            return self._user(obj, now)
        if kind == "stream_event":
            return self._stream(obj)
        if kind == "result":
            return self._result(obj)
        return []

    def _system(self, obj: Mapping[str, Any]) -> list[RunnerEvent]:
        if obj.get("subtype") == "init":
            return [agent_started()]
        if obj.get("subtype") == "api_retry":
            fields = {
                k: obj[k]
                for k in ("attempt", "max_retries", "error_status", "error", "retry_delay_ms")
                if k in obj
            }
            return [Activity("retry", fields)]
        return []

    def _new_message(self, message_id: str) -> list[RunnerEvent]:
        """A new assistant message starts: the previous one ended its turn."""
        if message_id == self._message_id:
            return []
        previous, self._message_id = self._message_id, message_id
        return [Activity("turn_end")] if previous is not None else []

    def _text(self, message_id: str, text: str) -> list[RunnerEvent]:
        out: list[RunnerEvent] = []
        if message_id not in self._texted:
            self._texted.add(message_id)
            out.append(Activity("text"))
        out.append(AnswerDelta(text))
        return out

    def _thinking(self, message_id: str) -> list[RunnerEvent]:
        if message_id in self._thought:
            return []
        self._thought.add(message_id)
        return [Activity("thinking")]

    def _assistant(self, obj: Mapping[str, Any], now: float) -> list[RunnerEvent]:
        message = obj.get("message")
        if not isinstance(message, Mapping):
            return []
        message_id = str(message.get("id") or obj.get("uuid") or "")
        out = self._new_message(message_id)
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            btype = block.get("type")
            if btype == "text" and block.get("text") and message_id not in self._streamed:
                out += self._text(message_id, str(block["text"]))
            elif btype == "thinking":
                out += self._thinking(message_id)
            elif btype == "tool_use":
                name = str(block.get("name") or "tool")
                self._tools[str(block.get("id"))] = (name, now)
                out.append(toolcall(name, block.get("input")))
        return out

    def _user(self, obj: Mapping[str, Any], now: float) -> list[RunnerEvent]:
        message = obj.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        out: list[RunnerEvent] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            name, started = self._tools.pop(str(block.get("tool_use_id")), ("tool", now))
            ms = round((now - started) * 1000)
            failed = block.get("is_error") is True
            out.append(tool_end(name, ms, failed=failed, error=block.get("content")))
        return out

    def _stream(self, obj: Mapping[str, Any]) -> list[RunnerEvent]:
        event = obj.get("event")
        if not isinstance(event, Mapping):
            return []
        etype = event.get("type")
        if etype == "message_start":
            message = event.get("message")
            if isinstance(message, Mapping) and message.get("id"):
                return self._new_message(str(message["id"]))
            return []
        if etype != "content_block_delta" or self._message_id is None:
            return []
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            return []
        if delta.get("type") == "text_delta" and delta.get("text"):
            self._streamed.add(self._message_id)
            return self._text(self._message_id, str(delta["text"]))
        if delta.get("type") == "thinking_delta":
            return self._thinking(self._message_id)
        return []

    def _result(self, obj: Mapping[str, Any]) -> list[RunnerEvent]:
        self.finished = True
        out: list[RunnerEvent] = []
        if self._message_id is not None:
            out.append(Activity("turn_end"))
            self._message_id = None
        out.append(usage_from_result(obj))
        error = result_error(obj)
        if error is not None and self.aborting:
            error = "aborted"  # SIGINT yields an error_during_execution "[ede_diagnostic] ..."
        text = None if error is not None else answer_of(obj)
        out.append(RunFinished(text=text, error=error, session_file=self.session_id))
        return out

    def on_exit(self, description: str, *, aborted: bool) -> list[RunnerEvent]:
        """The process ended; a run without a `result` line failed (or was aborted)."""
        if self.finished:
            return []
        self.finished = True
        error = "aborted" if aborted else description
        return [RunFinished(text=None, error=error, session_file=self.session_id)]
