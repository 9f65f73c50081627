"""pi `--mode rpc` stdout -> the shared event vocabulary (pure; no processes, no I/O).

`PiTranslator` turns one stdout line into runner events (Activity, AnswerDelta, Usage) plus
signals for the protocol state machine (`Signal`, a closed union every ladder over which
ends in assert_never; used by pi_protocol.py). A line is first recognised from its bytes
(pi_lines.py: a delta costs no JSON parse); one in any other shape is parsed in full, as are
lines that occur once per message, tool or turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from specialists.base.display import one_line
from specialists.base.tuples import NamedTuple
from specialists.process.lines import OversizedLine
from specialists.runners.base import (
    Activity,
    AnswerDelta,
    RunnerEvent,
    Usage,
    agent_started,
    cost_amount,
    token_count,
    tool_end,
    toolcall,
)
from specialists.runners.pi_lines import (
    AGENT_END,
    ASSISTANT_END,
    ASSISTANT_START,
    MESSAGE_END,
    MESSAGE_START,
    TOOL_UPDATE,
    TURN_END,
    extract_delta,
    update_kind,
)


class AgentStarted(NamedTuple):
    kind: Literal["agent_started"] = "agent_started"


class AgentEnded(NamedTuple):
    """One low-level run ended; `willRetry`: pi retries it on its own."""

    will_retry: bool = False
    kind: Literal["agent_ended"] = "agent_ended"


class AgentSettled(NamedTuple):
    """pi 1.x: no automatic work is left (no retry, compaction or queued message)."""

    aborted: bool = False
    kind: Literal["agent_settled"] = "agent_settled"


class AssistantDone(NamedTuple):
    """An assistant message ended (message_end)."""

    stop_reason: str | None
    error_message: str | None
    text: str
    kind: Literal["assistant_done"] = "assistant_done"


class TurnEnded(NamedTuple):
    kind: Literal["turn_ended"] = "turn_ended"


class RetryStarted(NamedTuple):
    kind: Literal["retry_started"] = "retry_started"


class RetryEnded(NamedTuple):
    success: bool
    final_error: str | None
    kind: Literal["retry_ended"] = "retry_ended"


class CompactionStarted(NamedTuple):
    kind: Literal["compaction_started"] = "compaction_started"


class CompactionEnded(NamedTuple):
    will_retry: bool
    kind: Literal["compaction_ended"] = "compaction_ended"


class CommandResponse(NamedTuple):
    """pi's answer to one of our commands (`id` is ours; None when pi could not parse it)."""

    id: str | None
    command: str | None
    success: bool
    data: Any
    error: str | None
    kind: Literal["command_response"] = "command_response"


class UiRequest(NamedTuple):
    """An extension asks the user something; nobody is there, so it is cancelled."""

    id: str
    method: str
    kind: Literal["ui_request"] = "ui_request"


Signal = (
    AgentStarted
    | AgentEnded
    | AgentSettled
    | AssistantDone
    | TurnEnded
    | RetryStarted
    | RetryEnded
    | CompactionStarted
    | CompactionEnded
    | CommandResponse
    | UiRequest
)


Clock = Callable[[], float]
Translated = RunnerEvent | Signal

MALFORMED_LOGGED = 5  # malformed lines logged to events.jsonl before going status-only
HEARTBEAT_S = 1.0  # at most one status-only liveness event per kind per second
DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})
# Events that carry nothing the job record needs (entry_appended: pi 1.x's session entries;
# bash_execution_update: output of the RPC `bash` command, which we never send).
_IGNORED_EVENTS = frozenset(
    {
        "turn_start",
        "queue_update",
        "session_info_changed",
        "thinking_level_changed",
        "session",
        "entry_appended",
        "bash_execution_update",
    }
)
# pi ends agent_end with `"willRetry":<bool>}`; it is read from the line's tail, because the
# line repeats every message of the run and is never parsed whole.
_WILL_RETRY = b'"willRetry":true}'


def _usage_of(message: Mapping[str, Any]) -> Usage | None:
    raw = message.get("usage")
    if not isinstance(raw, Mapping):
        return None
    cost = raw.get("cost")
    total_cost = cost.get("total", 0.0) if isinstance(cost, Mapping) else 0.0
    return Usage(
        input_tokens=token_count(raw.get("input")),
        output_tokens=token_count(raw.get("output")),
        cache_read_tokens=token_count(raw.get("cacheRead")),
        cache_write_tokens=token_count(raw.get("cacheWrite")),
        cost_usd=cost_amount(total_cost),
    )


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


class PiTranslator:
    """One pi stdout line -> runner events and protocol signals. Stateful, pure."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._saw_thinking = False
        self._saw_text = False
        self._tool_started: dict[str, float] = {}
        self._heartbeat: dict[str, float] = {}
        self._turn_usage: Usage | None = None
        self.turns = 0
        self.malformed = 0
        self.oversized = 0

    def feed(self, line: bytes | OversizedLine) -> list[Translated]:
        if isinstance(line, OversizedLine):
            return self._oversized(line)
        if not line or line.isspace():  # isspace stops at the first byte; strip() would copy
            return []
        kind = update_kind(line)
        if kind is not None:
            return self._fast_update(line, *kind)
        if line.startswith(TOOL_UPDATE):
            return self._beat("tool_execution")
        if line.startswith(MESSAGE_START):
            if line.startswith(ASSISTANT_START):
                self._saw_thinking = self._saw_text = False
            return []
        if line.startswith(MESSAGE_END) and not line.startswith(ASSISTANT_END):
            return []  # user and tool-result messages: possibly huge, never needed
        if line.startswith(AGENT_END):
            return [_agent_ended(line)]  # its messages repeat what message_end told us
        if line.startswith(TURN_END):
            return self._turn_end()
        return self._parsed(line)

    def _fast_update(self, line: bytes, kind: str, pos: int) -> list[Translated]:
        if kind == "text_delta":
            delta = extract_delta(line, pos)
            if delta is None:
                return self._parsed(line)
            out: list[Translated] = self._text_started() if not self._saw_text else []
            if delta:
                out.append(AnswerDelta(delta))
            return out
        if kind == "thinking_delta":
            return self._beat("thinking")
        if kind == "toolcall_delta":
            return self._beat("toolcall")
        if kind in ("thinking_start", "text_start"):
            return self._assistant_event({"type": kind})
        if kind in ("toolcall_start", "toolcall_end"):
            return self._parsed(line)
        return []  # text_end, thinking_end, start, done, error: implied by other events

    def _parsed(self, line: bytes) -> list[Translated]:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return self._malformed(line)
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            return self._malformed(line)  # a `type` of {} or [] is unhashable: no event
        return self._event(obj)

    def _assistant_event(self, ev: Mapping[str, Any]) -> list[Translated]:
        kind = ev.get("type")
        if kind == "thinking_start":
            if self._saw_thinking:
                return []
            self._saw_thinking = True
            self._heartbeat["thinking"] = self._clock()
            return [Activity("thinking")]
        if kind == "thinking_delta":
            return self._beat("thinking")
        if kind == "text_start":
            return [] if self._saw_text else self._text_started()
        if kind == "text_delta":
            out: list[Translated] = [] if self._saw_text else self._text_started()
            delta = ev.get("delta")
            if isinstance(delta, str) and delta:
                out.append(AnswerDelta(delta))
            return out
        if kind == "toolcall_start":
            self._heartbeat["toolcall"] = self._clock()
            named = ev.get("toolName")
            name = str(named) if isinstance(named, str) and named else None
            return [
                Activity("toolcall", {"tool": name} if name else {}, log=False, current_tool=name)
            ]
        if kind == "toolcall_delta":
            return self._beat("toolcall")
        if kind == "toolcall_end":
            call = ev.get("toolCall")
            call = call if isinstance(call, Mapping) else {}
            name = str(call.get("name") or "?")
            return [toolcall(name, call.get("arguments"))]
        return []

    def _text_started(self) -> list[Translated]:
        self._saw_text = True
        return [Activity("text")]

    def _event(self, obj: Mapping[str, Any]) -> list[Translated]:
        kind = obj.get("type")
        if kind == "message_update":
            ev = obj.get("assistantMessageEvent")
            return self._assistant_event(ev) if isinstance(ev, Mapping) else []
        if kind == "response":
            return [_response(obj)]
        if kind == "agent_start":
            return [AgentStarted(), agent_started()]
        if kind == "agent_end":
            return [AgentEnded(obj.get("willRetry") is True)]
        if kind == "agent_settled":
            return [AgentSettled(aborted=obj.get("aborted") is True)]
        if kind == "message_start":
            msg = obj.get("message")
            if isinstance(msg, Mapping) and msg.get("role") == "assistant":
                self._saw_thinking = self._saw_text = False
            return []
        if kind == "message_end":
            return self._message_end(obj.get("message"))
        if kind == "turn_end":
            return self._turn_end()
        if kind == "tool_execution_start":
            name = str(obj.get("toolName") or "?")
            self._tool_started[str(obj.get("toolCallId"))] = self._heartbeat["tool_execution"] = (
                self._clock()
            )
            return [Activity("tool_execution", {"tool": name}, log=False, current_tool=name)]
        if kind == "tool_execution_update":
            return self._beat("tool_execution")
        if kind == "tool_execution_end":
            return self._tool_end(obj)
        if kind in ("auto_retry_start", "auto_retry_end"):
            return self._retry(obj)
        if kind in ("compaction_start", "compaction_end"):
            return self._compaction(obj)
        if kind == "extension_ui_request":
            return self._ui_request(obj)
        if kind == "extension_error":
            fields = {
                "message": "extension error",
                "extension": str(obj.get("extensionPath") or ""),
                "error": one_line(obj.get("error") or "", 200),
            }
            return [Activity("notice", fields, log=False)]
        if kind in _IGNORED_EVENTS:
            return []
        return [
            Activity("notice", {"message": "unknown agent event", "type": str(kind)}, log=False)
        ]

    def _message_end(self, msg: Any) -> list[Translated]:
        if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
            return []
        out: list[Translated] = []
        usage = _usage_of(msg)
        if usage is not None:
            self._turn_usage = usage
            out.append(usage)
        stop = msg.get("stopReason")
        err = msg.get("errorMessage")
        out.append(
            AssistantDone(
                stop_reason=str(stop) if stop is not None else None,
                error_message=str(err) if err else None,
                text=_text_of(msg),
            )
        )
        return out

    def _turn_end(self) -> list[Translated]:
        self.turns += 1
        fields: dict[str, Any] = {"turn": self.turns}
        usage = self._turn_usage
        if usage is not None:
            fields["usage"] = {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "cache_read": usage.cache_read_tokens,
                "cache_write": usage.cache_write_tokens,
                "cost_usd": usage.cost_usd,
            }
        self._turn_usage = None
        return [Activity("turn_end", fields), TurnEnded()]

    def _tool_end(self, obj: Mapping[str, Any]) -> list[Translated]:
        name = str(obj.get("toolName") or "?")
        started = self._tool_started.pop(str(obj.get("toolCallId")), None)
        duration = None if started is None else int((self._clock() - started) * 1000)
        result = obj.get("result")
        content = result.get("content") if isinstance(result, Mapping) else None
        return [tool_end(name, duration, failed=bool(obj.get("isError")), error=content)]

    def _retry(self, obj: Mapping[str, Any]) -> list[Translated]:
        if obj.get("type") == "auto_retry_start":
            fields = {
                "attempt": obj.get("attempt"),
                "max_attempts": obj.get("maxAttempts"),
                "delay_ms": obj.get("delayMs"),
                "error": one_line(obj.get("errorMessage") or "", 200),
            }
            return [Activity("retry", fields), RetryStarted()]
        success = bool(obj.get("success"))
        final = obj.get("finalError")
        fields = {"message": "retry succeeded" if success else "retries exhausted"}
        fields["attempt"] = obj.get("attempt")
        if final:
            fields["error"] = one_line(final, 200)
        return [
            Activity("notice", fields, log=not success),
            RetryEnded(success, str(final) if final else None),
        ]

    def _compaction(self, obj: Mapping[str, Any]) -> list[Translated]:
        reason = str(obj.get("reason") or "")
        if obj.get("type") == "compaction_start":
            return [Activity("compaction", {"reason": reason}), CompactionStarted()]
        will_retry = bool(obj.get("willRetry"))
        fields: dict[str, Any] = {"reason": reason, "phase": "end", "will_retry": will_retry}
        if obj.get("aborted"):
            fields["aborted"] = True
        if obj.get("errorMessage"):
            fields["error"] = one_line(obj.get("errorMessage"), 200)
        return [Activity("compaction", fields), CompactionEnded(will_retry)]

    def _ui_request(self, obj: Mapping[str, Any]) -> list[Translated]:
        method = str(obj.get("method") or "")
        level = obj.get("notifyType")
        if method == "notify" and level in ("warning", "error"):
            # What an extension tells its person (ours: a sidecar that will not start, tools
            # that are off) is shown to ours too, never only in a log file.
            return [
                Activity(
                    "notice", {"message": one_line(obj.get("message") or "", 200), "level": level}
                )
            ]
        if method not in DIALOG_METHODS:
            return []  # info notices, setStatus, ...: fire-and-forget, nobody answers them
        fields = {
            "message": "extension dialog cancelled (no user in a background job)",
            "method": method,
            "title": one_line(obj.get("title") or obj.get("message") or "", 200),
        }
        return [Activity("notice", fields), UiRequest(str(obj.get("id")), method)]

    def _malformed(self, line: bytes) -> list[Translated]:
        self.malformed += 1
        fields = {
            "message": "malformed agent output line skipped",
            "count": self.malformed,
            "head": line[:80].decode("utf-8", "replace"),
        }
        return [Activity("notice", fields, log=self.malformed <= MALFORMED_LOGGED)]

    def _oversized(self, line: OversizedLine) -> list[Translated]:
        self.oversized += 1
        if line.head.startswith(AGENT_END):
            return [AgentEnded()]
        fields = {
            "message": "oversized agent output line skipped",
            "bytes": line.size,
            "head": line.head[:80].decode("utf-8", "replace"),
        }
        return [Activity("notice", fields)]

    def _beat(self, kind: str) -> list[Translated]:
        """A throttled status-only event, so long thinking or tools do not look stalled."""
        now = self._clock()
        if now - self._heartbeat.get(kind, -HEARTBEAT_S) < HEARTBEAT_S:
            return []
        self._heartbeat[kind] = now
        return [Activity(kind, log=False)]


def _agent_ended(line: bytes) -> AgentEnded:
    tail = line[-32:].rstrip()
    return AgentEnded(will_retry=tail.endswith(_WILL_RETRY))


def _response(obj: Mapping[str, Any]) -> CommandResponse:
    rid = obj.get("id")
    err = obj.get("error")
    cmd = obj.get("command")
    return CommandResponse(
        id=str(rid) if rid is not None else None,
        command=str(cmd) if cmd is not None else None,
        success=bool(obj.get("success")),
        data=obj.get("data"),
        error=str(err) if err is not None else None,
    )
