"""`codex exec --json` lines -> normalized runner events. Pure.

Facts (codex-cli 0.171.0 against a mock Responses server, see shared/reference/codex/):
- `thread.started{thread_id}` first; the id resumes with `codex exec resume <id>`.
- `item.started` / `item.completed` carry items: command_execution (command, exit_code,
  aggregated_output), agent_message (text), reasoning, file_change, mcp_tool_call,
  web_search, todo_list, and `error` items that are NOT fatal (e.g. unknown model metadata).
- `turn.completed{usage}` ends a run; `turn.failed{error}` fails it.
- Top-level `error` lines are not fatal either: "Reconnecting... 1/5 (...)" precedes each
  provider retry, and the last one repeats the message that `turn.failed` then carries.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from specialists.runners.base import (
    Activity,
    AnswerDelta,
    RunFinished,
    RunnerEvent,
    Usage,
    agent_started,
    session_id,
    summarize_args,
    token_count,
    tool_end,
    toolcall,
)

_SHELLS = ("bash", "sh", "zsh")


def command_summary(command: Any) -> str:
    """`/bin/bash -lc 'echo hi'` -> `echo hi` (what the model asked for)."""
    if not isinstance(command, str):
        return summarize_args(command)
    try:
        parts = shlex.split(command)
    except ValueError:
        return summarize_args(command)
    if len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in _SHELLS and parts[1] in ("-c", "-lc"):
        return summarize_args(parts[2])
    return summarize_args(command)


def error_message(raw: Any) -> str:
    """Codex wraps provider errors as a JSON string; keep the human part."""
    text = raw.get("message") if isinstance(raw, Mapping) else raw
    text = str(text) if text is not None else "codex run failed"
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            resets = inner.get("resets_at")  # a usage limit's reset: the job pauses until then
            if isinstance(resets, int) and not isinstance(resets, bool) and resets > 0:
                return f"{inner['message']} (usage limit; resets at {_iso(resets)})"
            return inner["message"]
    return text


def _iso(epoch_s: int) -> str:
    try:
        return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(epoch_s)


def usage_from_turn(usage: Any) -> Usage:
    """Codex counts cached tokens inside input_tokens; ours are disjoint."""
    if not isinstance(usage, Mapping):
        return Usage()
    cached = token_count(usage.get("cached_input_tokens"))
    return Usage(
        input_tokens=max(0, token_count(usage.get("input_tokens")) - cached),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=token_count(usage.get("cache_write_input_tokens")),
    )


def _tool_of(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """(tool name, args summary) for items that are tool calls, else None."""
    itype = item.get("type")
    if itype == "command_execution":
        return "bash", command_summary(item.get("command"))
    if itype == "file_change":
        changes = item.get("changes")
        paths = [c.get("path") for c in changes or [] if isinstance(c, Mapping)]
        return "edit", summarize_args(" ".join(str(p) for p in paths if p))
    if itype == "mcp_tool_call":
        name = f"{item.get('server', 'mcp')}.{item.get('tool', 'tool')}"
        return name, summarize_args(item.get("arguments"))
    if itype == "web_search":
        return "web_search", summarize_args(item.get("query"))
    return None


def _failure(item: Mapping[str, Any]) -> str:
    """Why a tool item failed: an MCP call's error, a command's exit code and output."""
    error = item.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    output = str(item.get("aggregated_output") or "").strip()
    code = item.get("exit_code")
    return f"exit {code}: {output}" if isinstance(code, int) else output


class CodexTranslator:
    """Turns one codex process's stdout objects into events. One instance per process."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model  # what its turns are priced by (None: they cost nothing known)
        self.thread_id: str | None = None
        self.finished = False
        self.aborting = False  # set by the runner when it interrupts the run
        self.last_text = ""
        self.last_error: str | None = None
        self._started: dict[str, float] = {}  # tool item id -> start time

    # --- a successor supervisor (runners/oneshot.py `adopt_state`) ----------------------

    def adopt_state(self, now: float) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "finished": self.finished,
            "aborting": self.aborting,
            "last_text": self.last_text,
            "last_error": self.last_error,
            "started": {k: round(now - at, 3) for k, at in self._started.items()},
        }

    def restore(self, state: Mapping[str, Any], now: float) -> None:
        self.thread_id = state["thread_id"]
        self.finished, self.aborting = bool(state["finished"]), bool(state["aborting"])
        self.last_text, self.last_error = str(state["last_text"]), state["last_error"]
        self._started = {str(k): now - float(a) for k, a in state["started"].items()}

    def feed(self, obj: Mapping[str, Any], now: float) -> list[RunnerEvent]:
        kind = obj.get("type")
        if kind == "thread.started":
            self.thread_id = session_id(obj.get("thread_id")) or self.thread_id
            return [agent_started()]
        if kind == "turn.started":  # a resumed thread (a follow-up) starts with this
            return [agent_started()]
        if kind in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if not isinstance(item, Mapping):
                return []
            return self._item(item, done=kind == "item.completed", now=now)
        if kind == "turn.completed":
            return self._finish([self._priced(obj.get("usage")), Activity("turn_end")], error=None)
        if kind == "turn.failed":
            error = "aborted" if self.aborting else error_message(obj.get("error"))
            return self._finish([Activity("turn_end")], error=error)
        if kind == "error":
            message = error_message(obj.get("message"))
            self.last_error = message
            event = "retry" if message.startswith("Reconnecting") else "notice"
            return [Activity(event, {"message": message})]
        return []

    def _priced(self, raw: Any) -> Usage:
        usage = usage_from_turn(raw)
        if self.model is None or not (usage.input_tokens or usage.output_tokens):
            return usage
        from specialists.native.prices import cost_usd

        cost = cost_usd(
            "codex",
            self.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
        return usage._replace(cost_usd=cost)

    def _item(self, item: Mapping[str, Any], *, done: bool, now: float) -> list[RunnerEvent]:
        itype = item.get("type")
        item_id = str(item.get("id"))
        if itype == "agent_message":
            text = item.get("text")
            if not done or not isinstance(text, str):
                return []
            self.last_text = text
            return [Activity("text"), AnswerDelta(text)]
        if itype == "reasoning":
            return [Activity("thinking")] if not done else []
        if itype == "error":
            return [Activity("notice", {"message": str(item.get("message", ""))})]
        tool = _tool_of(item)
        if tool is None:
            return []
        name, args = tool
        out: list[RunnerEvent] = []
        if item_id not in self._started:
            self._started[item_id] = now
            out.append(toolcall(name, args))
        if done:
            started = self._started.pop(item_id, now)
            ms = round((now - started) * 1000)
            more = {"exit_code": item.get("exit_code")} if itype == "command_execution" else {}
            failed = item.get("status") == "failed"
            out.append(tool_end(name, ms, failed=failed, error=_failure(item), **more))
        return out

    def _finish(self, out: list[RunnerEvent], error: str | None) -> list[RunnerEvent]:
        self.finished = True
        text = None if error is not None else self.last_text
        out.append(RunFinished(text=text, error=error, session_file=self.thread_id))
        return out

    def on_exit(self, description: str, *, aborted: bool) -> list[RunnerEvent]:
        """The process ended; a run without turn.completed/turn.failed failed."""
        if self.finished:
            return []
        self.finished = True
        if aborted:
            error = "aborted"
        elif self.last_error:
            error = f"{description}: {self.last_error}"
        else:
            error = description
        return [RunFinished(text=None, error=error, session_file=self.thread_id)]
