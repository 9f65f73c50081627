"""pi `--mode rpc` stdout -> the shared event vocabulary (pure; no processes, no I/O).

Two layers:

- `PiTranslator` turns one stdout line into runner events (Activity, TextDelta, Usage) plus
  protocol signals (agent_end, retry, responses...). pi repeats the whole partial message
  twice in every `message_update`, so stdout grows quadratically with the answer; delta lines
  are recognised from a bytes prefix and only the short `delta` string is decoded. Only
  lines that occur once per message, tool or turn are parsed in full.
- `PiProtocol` is the conversation state machine on top: it owns request ids, decides when a
  run is really finished (pi 0.73.1 emits several `agent_end` for one prompt while it
  auto-retries), queries the final text and session file, and emits `RunFinished`. Commands
  for pi's stdin collect in `outbox`; the adapter (runners/pi.py) writes them.

Final detection: an `agent_end` whose last assistant message did not fail (stopReason other
than "error") finishes the run at once. After a failed one, pi decides synchronously whether
to retry (`auto_retry_start`) or compact (`compaction_start`), so we wait a short grace
window (default 0.3 s, measured from reading the line) for either; `auto_retry_end` with
success false, a compaction that will not retry, or an empty window make the run final.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from specialists.runners.base import (
    Activity,
    AgentExited,
    RunFinished,
    RunnerEvent,
    TextDelta,
    Usage,
    toolcall,
)
from specialists.runners.proc import OversizedLine

Clock = Callable[[], float]

MALFORMED_LOGGED = 5  # malformed lines logged to events.jsonl before going status-only
HEARTBEAT_S = 1.0  # at most one status-only liveness event per kind per second
DEFAULT_FINAL_GRACE_S = 0.3
DEFAULT_QUERY_TIMEOUT_S = 10.0
DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})
# Events that carry nothing the job record needs.
_IGNORED_EVENTS = frozenset(
    {"turn_start", "queue_update", "session_info_changed", "thinking_level_changed", "session"}
)

# --- protocol signals (translator -> state machine) --------------------------------------


@dataclass(frozen=True)
class AgentStarted:
    pass


@dataclass(frozen=True)
class AgentEnded:
    pass


@dataclass(frozen=True)
class AssistantDone:
    """An assistant message ended (message_end)."""

    stop_reason: str | None
    error_message: str | None
    text: str


@dataclass(frozen=True)
class TurnEnded:
    pass


@dataclass(frozen=True)
class RetryStarted:
    pass


@dataclass(frozen=True)
class RetryEnded:
    success: bool
    final_error: str | None


@dataclass(frozen=True)
class CompactionStarted:
    pass


@dataclass(frozen=True)
class CompactionEnded:
    will_retry: bool


@dataclass(frozen=True)
class CommandResponse:
    id: str | None
    command: str | None
    success: bool
    data: Any
    error: str | None


@dataclass(frozen=True)
class UiRequest:
    id: str
    method: str


Signal = (
    AgentStarted
    | AgentEnded
    | AssistantDone
    | TurnEnded
    | RetryStarted
    | RetryEnded
    | CompactionStarted
    | CompactionEnded
    | CommandResponse
    | UiRequest
)
Translated = RunnerEvent | Signal

# --- cheap line recognition ---------------------------------------------------------------

_UPDATE_PREFIX = b'{"type":"message_update","assistantMessageEvent":{"type":"'
_PREFIX_SKIP = (b'{"type":"tool_execution_update"',)
_ASSISTANT_START = b'{"type":"message_start","message":{"role":"assistant"'
_MESSAGE_START = b'{"type":"message_start"'
_ASSISTANT_END = b'{"type":"message_end","message":{"role":"assistant"'
_MESSAGE_END = b'{"type":"message_end"'
_AGENT_END = b'{"type":"agent_end"'
_TURN_END = b'{"type":"turn_end"'
_DELTA_KEY = b'"delta":'


def update_kind(line: bytes) -> tuple[str, int] | None:
    """(assistantMessageEvent.type, end offset) when `line` has pi's message_update prefix."""
    if not line.startswith(_UPDATE_PREFIX):
        return None
    start = len(_UPDATE_PREFIX)
    end = line.find(b'"', start, start + 40)
    if end < 0:
        return None
    return line[start:end].decode("ascii", "replace"), end


def extract_delta(line: bytes, pos: int) -> str | None:
    """The JSON string after `"delta":` near `pos`, decoded from a short slice of the line."""
    key = line.find(_DELTA_KEY, pos, pos + 96)
    if key < 0:
        return None
    start = key + len(_DELTA_KEY)
    if line[start : start + 1] != b'"':
        return None
    window = 512
    while True:
        # A slice may cut a UTF-8 sequence at its end; that only matters when the string is
        # longer than the slice, and then the string is unterminated and we grow the slice.
        text = line[start : start + window].decode("utf-8", "replace")
        try:
            value, _end = scanstring(text, 1)
        except ValueError:
            if start + window >= len(line):
                return None
            window *= 8
            continue
        return str(value)


def _usage_of(message: Mapping[str, Any]) -> Usage | None:
    raw = message.get("usage")
    if not isinstance(raw, Mapping):
        return None
    cost = raw.get("cost")
    total_cost = cost.get("total", 0.0) if isinstance(cost, Mapping) else 0.0
    return Usage(
        input_tokens=_int(raw.get("input")),
        output_tokens=_int(raw.get("output")),
        cache_read_tokens=_int(raw.get("cacheRead")),
        cache_write_tokens=_int(raw.get("cacheWrite")),
        cost_usd=float(total_cost) if isinstance(total_cost, int | float) else 0.0,
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


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


def _short(text: Any, limit: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


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

    # -- entry point --
    def feed(self, line: bytes | OversizedLine) -> list[Translated]:
        if isinstance(line, OversizedLine):
            return self._oversized(line)
        if not line or line.isspace():  # isspace stops at the first byte; strip() would copy
            return []
        kind = update_kind(line)
        if kind is not None:
            return self._fast_update(line, *kind)
        if line.startswith(_PREFIX_SKIP):
            return self._beat("tool_execution")
        if line.startswith(_MESSAGE_START):
            if line.startswith(_ASSISTANT_START):
                self._saw_thinking = self._saw_text = False
            return []
        if line.startswith(_MESSAGE_END) and not line.startswith(_ASSISTANT_END):
            return []  # user and tool-result messages: possibly huge, never needed
        if line.startswith(_AGENT_END):
            return [AgentEnded()]  # its messages repeat what message_end already told us
        if line.startswith(_TURN_END):
            return self._turn_end()
        try:
            obj = json.loads(line)
        except ValueError:
            return self._malformed(line)
        if not isinstance(obj, dict):
            return self._malformed(line)
        return self._event(obj)

    # -- message_update --
    def _fast_update(self, line: bytes, kind: str, pos: int) -> list[Translated]:
        if kind == "text_delta":
            delta = extract_delta(line, pos)
            if delta is None:
                return self._parsed_update(line)
            out: list[Translated] = self._text_started() if not self._saw_text else []
            if delta:
                out.append(TextDelta(delta))
            return out
        if kind == "thinking_delta":
            return self._beat("thinking")
        if kind == "toolcall_delta":
            return self._beat("toolcall")
        if kind in ("thinking_start", "text_start"):
            return self._assistant_event({"type": kind})
        if kind in ("toolcall_start", "toolcall_end"):
            return self._parsed_update(line)
        return []  # text_end, thinking_end, start, done, error: implied by other events

    def _parsed_update(self, line: bytes) -> list[Translated]:
        try:
            obj = json.loads(line)
        except ValueError:
            return self._malformed(line)
        return self._event(obj) if isinstance(obj, dict) else self._malformed(line)

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
                out.append(TextDelta(delta))
            return out
        if kind == "toolcall_start":
            self._heartbeat["toolcall"] = self._clock()
            name = _tool_name_in_partial(ev)
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

    # -- everything else --
    def _event(self, obj: Mapping[str, Any]) -> list[Translated]:
        kind = obj.get("type")
        if kind == "message_update":
            ev = obj.get("assistantMessageEvent")
            return self._assistant_event(ev) if isinstance(ev, Mapping) else []
        if kind == "response":
            return [_response(obj)]
        if kind == "agent_start":
            return [AgentStarted()]
        if kind == "agent_end":
            return [AgentEnded()]
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
                "error": _short(obj.get("error") or ""),
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
        fields = {"tool": name, "duration_ms": duration, "is_error": bool(obj.get("isError"))}
        return [Activity("tool_execution_end", fields, current_tool=name)]

    def _retry(self, obj: Mapping[str, Any]) -> list[Translated]:
        if obj.get("type") == "auto_retry_start":
            fields = {
                "attempt": obj.get("attempt"),
                "max_attempts": obj.get("maxAttempts"),
                "delay_ms": obj.get("delayMs"),
                "error": _short(obj.get("errorMessage") or ""),
            }
            return [Activity("retry", fields), RetryStarted()]
        success = bool(obj.get("success"))
        final = obj.get("finalError")
        fields = {"message": "retry succeeded" if success else "retries exhausted"}
        fields["attempt"] = obj.get("attempt")
        if final:
            fields["error"] = _short(final)
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
            fields["error"] = _short(obj.get("errorMessage"))
        return [Activity("compaction", fields), CompactionEnded(will_retry)]

    def _ui_request(self, obj: Mapping[str, Any]) -> list[Translated]:
        method = str(obj.get("method") or "")
        if method not in DIALOG_METHODS:
            return []  # notify/setStatus/...: fire-and-forget, nobody waits for an answer
        fields = {
            "message": "extension dialog cancelled (no user in a background job)",
            "method": method,
            "title": _short(obj.get("title") or obj.get("message") or ""),
        }
        return [Activity("notice", fields), UiRequest(str(obj.get("id")), method)]

    # -- bad input --
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
        if line.head.startswith(_AGENT_END):
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


def _tool_name_in_partial(ev: Mapping[str, Any]) -> str | None:
    partial = ev.get("partial")
    index = ev.get("contentIndex")
    if not isinstance(partial, Mapping) or not isinstance(index, int):
        return None
    content = partial.get("content")
    if not isinstance(content, list) or not 0 <= index < len(content):
        return None
    block = content[index]
    name = block.get("name") if isinstance(block, Mapping) else None
    return str(name) if name else None


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


# --- the conversation state machine -------------------------------------------------------

IDLE = "idle"
RUNNING = "running"  # a prompt is being answered
SETTLING = "settling"  # agent_end after a failed message: waiting to see if pi retries
RETRYING = "retrying"  # auto-retry or compaction-with-retry pending: waiting for agent_start
COMPACTING = "compacting"  # compaction after a failed run: waiting for compaction_end
FINALIZING = "finalizing"  # final: waiting for get_last_assistant_text / get_state answers
_BUSY = frozenset({RUNNING, SETTLING, RETRYING, COMPACTING})


class PiProtocol:
    """pi's RPC conversation: commands out (`outbox`), lines in, runner events out."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        final_grace_s: float = DEFAULT_FINAL_GRACE_S,
        query_timeout_s: float = DEFAULT_QUERY_TIMEOUT_S,
        max_turns: int | None = None,
        session_file: str | None = None,
    ) -> None:
        self._clock = clock
        self._grace = final_grace_s
        self._query_timeout = query_timeout_s
        self._max_turns = max_turns
        self.translator = PiTranslator(clock)
        self.outbox: list[dict[str, Any]] = []
        self.state = IDLE
        self.session_file = session_file
        self._ids = itertools.count(1)
        self._pending: dict[str, tuple[str, str]] = {}  # request id -> (purpose, note)
        self._deadline: float | None = None
        self._queued: list[str] = []  # follow-ups to send as prompts once the run is over
        self._reset_run()

    def _reset_run(self) -> None:
        self._stop_reason: str | None = None
        self._error_message: str | None = None
        self._fallback_text = ""
        self._final_error: str | None = None
        self._abort_requested = False
        self._turn_limit_hit = False
        self._run_turns = 0
        self._answer: str | None = None
        self._awaiting: set[str] = set()
        self._restarted = False  # pi began another run while we collected this one's result

    # -- commands --------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A run is in progress or its result is still being collected."""
        return self.state != IDLE or bool(self._queued)

    def prompt(self, message: str, *, purpose: str = "prompt") -> None:
        self._reset_run()
        self.state = RUNNING
        self._deadline = None
        self._send("prompt", {"message": message}, purpose=purpose, note=message)

    def follow_up(self, message: str) -> list[RunnerEvent]:
        if self.state == IDLE:
            self.prompt(message)
            return []
        if self.state == RUNNING:
            # A prompt with streamingBehavior is queued when pi is streaming and starts a new
            # run when pi has just gone idle, so it is never stranded in pi's follow-up queue.
            body = {"message": message, "streamingBehavior": "followUp"}
            self._send("prompt", body, purpose="follow_up", note=message)
            return []
        self._queued.append(message)
        return [Activity("follow_up", {"queued": True, "message": _short(message, 80)})]

    def steer(self, message: str) -> None:
        if self.state in _BUSY:
            self._send("steer", {"message": message}, purpose="steer", note=message)
        elif self.state == FINALIZING:
            self._queued.append(message)
        else:
            self.prompt(message, purpose="steer_prompt")

    def abort(self) -> None:
        self._queued.clear()
        if self.state in _BUSY:
            self._abort_requested = True
            self._send("abort", {}, purpose="abort")

    def _send(self, kind: str, body: Mapping[str, Any], *, purpose: str, note: str = "") -> str:
        rid = f"sp-{next(self._ids)}"
        self._pending[rid] = (purpose, note)
        self.outbox.append({"id": rid, "type": kind, **body})
        return rid

    def take_outbox(self) -> list[dict[str, Any]]:
        out, self.outbox = self.outbox, []
        return out

    # -- input -----------------------------------------------------------------------
    def feed(self, line: bytes | OversizedLine) -> list[RunnerEvent]:
        out: list[RunnerEvent] = []
        for item in self.translator.feed(line):
            if isinstance(item, Activity | TextDelta | Usage | RunFinished | AgentExited):
                out.append(item)
            else:
                out.extend(self._signal(item))
        return out

    def next_deadline(self) -> float | None:
        return self._deadline

    def tick(self) -> list[RunnerEvent]:
        """Act on expired timers (grace window, query timeout)."""
        if self._deadline is None or self._clock() < self._deadline:
            return []
        self._deadline = None
        if self.state == SETTLING:
            return self._finalize()
        if self.state == FINALIZING:
            return [
                Activity("notice", {"message": "pi did not answer the result queries in time"}),
                *self._finish(),
            ]
        return []

    def process_exited(self) -> list[RunnerEvent]:
        """pi is gone: finish a run whose answer is already known; others are lost."""
        if self.state in (SETTLING, FINALIZING):
            self.state = FINALIZING
            return self._finish()
        self._queued.clear()
        self.state = IDLE
        return []

    # -- signals ---------------------------------------------------------------------
    def _signal(self, sig: Signal) -> list[RunnerEvent]:
        if isinstance(sig, CommandResponse):
            return self._response(sig)
        if isinstance(sig, AssistantDone):
            self._stop_reason = sig.stop_reason
            self._error_message = sig.error_message
            self._fallback_text = sig.text
            return []
        if isinstance(sig, TurnEnded):
            return self._turn_ended()
        if isinstance(sig, UiRequest):
            self.outbox.append({"type": "extension_ui_response", "id": sig.id, "cancelled": True})
            return []
        if isinstance(sig, AgentStarted):
            if self.state == FINALIZING:
                self._restarted = True
            elif self.state in (IDLE, SETTLING, RETRYING, COMPACTING):
                if self.state == IDLE:
                    self._reset_run()  # pi started a run on its own (e.g. a late steer)
                self.state = RUNNING
                self._deadline = None
            return []
        if isinstance(sig, AgentEnded):
            return self._agent_ended()
        if isinstance(sig, RetryStarted):
            if self.state in (RUNNING, SETTLING):
                self.state = RETRYING
                self._deadline = None
            return []
        if isinstance(sig, RetryEnded):
            if not sig.success and self.state in (SETTLING, RETRYING):
                self._final_error = sig.final_error
                return self._finalize()
            return []
        if isinstance(sig, CompactionStarted):
            if self.state == SETTLING:
                self.state = COMPACTING
                self._deadline = None
            return []
        if isinstance(sig, CompactionEnded):
            if self.state == COMPACTING:
                if sig.will_retry:
                    self.state = RETRYING
                    return []
                return self._finalize()
            return []
        raise AssertionError(f"bug: unhandled pi signal {sig!r}")

    def _agent_ended(self) -> list[RunnerEvent]:
        if self.state not in (RUNNING, IDLE):
            return []
        if self._stop_reason == "error" and not self._abort_requested:
            self.state = SETTLING
            self._deadline = self._clock() + self._grace
            return []
        return self._finalize()

    def _turn_ended(self) -> list[RunnerEvent]:
        self._run_turns += 1
        limit = self._max_turns
        if (
            limit is not None
            and self._run_turns >= limit
            and self._stop_reason == "toolUse"
            and self.state == RUNNING
            and not self._abort_requested
        ):
            self._turn_limit_hit = True
            self._abort_requested = True
            self._send("abort", {}, purpose="abort")
            return [Activity("notice", {"message": f"max turns reached ({limit}): aborting"})]
        return []

    def _finalize(self) -> list[RunnerEvent]:
        self.state = FINALIZING
        self._answer = None
        self._awaiting = {
            self._send("get_last_assistant_text", {}, purpose="text"),
            self._send("get_state", {}, purpose="state"),
        }
        self._deadline = self._clock() + self._query_timeout
        return []

    def _response(self, resp: CommandResponse) -> list[RunnerEvent]:
        if resp.id is None:
            fields = {"message": "pi rejected a command", "error": _short(resp.error or "")}
            return [Activity("notice", fields)]
        pending = self._pending.pop(resp.id, None)
        if pending is None:
            return []
        purpose, note = pending
        data = resp.data if isinstance(resp.data, Mapping) else {}
        if purpose == "text":
            text = data.get("text") if resp.success else None
            self._answer = text if isinstance(text, str) else ("" if resp.success else None)
        elif purpose == "state" and resp.success:
            session_file = data.get("sessionFile")
            if isinstance(session_file, str) and session_file:
                self.session_file = session_file
        elif purpose in ("prompt", "follow_up") and not resp.success:
            return self._prompt_rejected(purpose, resp.error)
        elif purpose == "steer_prompt" and not resp.success:
            return self._prompt_rejected("prompt", resp.error)
        elif purpose in ("steer", "steer_prompt"):
            if resp.success:
                ack: dict[str, Any] = {"message": _short(note, 80)}
                ack["as_prompt"] = purpose == "steer_prompt"
                return [Activity("steer_ack", ack)]
            rejected = {"message": "steer rejected", "error": _short(resp.error or "")}
            return [Activity("notice", rejected)]
        out: list[RunnerEvent] = []
        if self.state == FINALIZING and resp.id in self._awaiting:
            self._awaiting.discard(resp.id)
            if not self._awaiting:
                out.extend(self._finish())
        return out

    def _prompt_rejected(self, purpose: str, error: str | None) -> list[RunnerEvent]:
        message = f"pi rejected the {purpose.replace('_', '-')}: {error or 'unknown error'}"
        if purpose == "follow_up" or self.state != RUNNING:
            return [Activity("notice", {"message": message})]
        self.state = IDLE
        self._deadline = None
        return [RunFinished(text=None, error=message, session_file=self.session_file)]

    def _finish(self) -> list[RunnerEvent]:
        if self.state != FINALIZING:
            raise AssertionError(f"bug: finishing a pi run in state {self.state}")
        text = self._answer if self._answer is not None else self._fallback_text
        done = RunFinished(text=text, error=self._run_error(), session_file=self.session_file)
        self.state = IDLE
        self._deadline = None
        self._awaiting = set()
        out: list[RunnerEvent] = [done]
        if self._restarted:
            self._reset_run()
            self.state = RUNNING
        elif self._queued:
            message = "\n\n".join(self._queued)
            self._queued.clear()
            out.append(Activity("follow_up", {"queued": False, "message": _short(message, 80)}))
            self.prompt(message)
        return out

    def _run_error(self) -> str | None:
        if self._turn_limit_hit:
            return f"max turns reached ({self._max_turns})"
        if self._abort_requested or self._stop_reason == "aborted":
            return "aborted"
        if self._final_error:
            return self._final_error
        if self._stop_reason == "error":
            return self._error_message or "pi reported an error"
        return None
