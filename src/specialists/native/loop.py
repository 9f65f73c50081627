"""The agent loop for one agent: ask the model, run its tool calls, repeat.

    run(prompt): record the prompt -> [steers] -> model turn (recorded with its tool calls
    before they run, P3) -> each tool call -> result recorded -> ... until the model answers
    without tool calls, a tool yields, the turn budget is spent, an error ends it, or it is
    aborted.

A yielding tool (sleep, sleep_until_event, ...: the answer comes later as an event) ends the
run once every call of its turn has its result, without another model call (R-T1, R-T2);
`LoopFinished.yielded` tells the runner, and the supervisor wakes the loop with the event. A
steer that is waiting when the turn ends is answered first: yielding would leave it unread.

Thread-safety: `run` executes on one thread (the runner's); `steer` and `abort` may be called
from any other thread and take effect at the next safe point (between stream events, between
tool calls, during a retry wait). A steer that arrives while tools run skips the remaining
tool calls of that turn (each gets a "skipped" result), like pi does.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specialists.events.spill import SpillLimits, bound_body
from specialists.native.calling import Aborted, BreakerFor, ModelCaller, ModelSlot, RetryPolicy
from specialists.native.events import Emit, LoopFinished, Progress, Spent
from specialists.native.messages import (
    MODEL_SIDE,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
    UserSource,
    text_of,
    tool_calls_of,
)
from specialists.native.model import ModelError, ModelRequest
from specialists.native.session import Session
from specialists.native.tools import Tool, ToolContext, execute_call, tool_specs

SKIPPED_TEXT = "skipped: a new user message arrived before this tool call ran"
ABORTED_TEXT = "aborted: the run was stopped before this tool call ran"


@dataclass(frozen=True)
class LoopSettings:
    system_prompt: str = ""
    max_turns: int | None = None  # model calls per run; None = unlimited
    max_tokens: int | None = None  # per model response
    thinking: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    spill: SpillLimits = field(default_factory=SpillLimits)
    user_max_chars: int = 200_000  # larger user messages are spilled too (P8)
    # A schema for the final answer: the final_answer tool is offered, every request
    # requires a tool call, and a valid final_answer call ends the run (tools/answer.py).
    answer_schema: Mapping[str, Any] | None = None
    # Asked before each model request: a line back ends the run with it (a spend ceiling).
    gate: Callable[[], str | None] | None = None


class AgentLoop:
    def __init__(
        self,
        *,
        session: Session,
        models: Sequence[ModelSlot],
        tools: Mapping[str, Tool],
        tool_context: ToolContext,
        settings: LoopSettings,
        emit: Emit,
        breaker_for: BreakerFor | None = None,
    ) -> None:
        self.session = session
        self.tools = dict(tools)
        self.settings = settings
        self.emit = emit
        self._abort = threading.Event()
        self._steers: collections.deque[str] = collections.deque()
        self._running = threading.Event()
        # Makes "is a run going?" and "hand it this steer" one step, so a steer cannot land
        # in the deque just after the run ended and its caller stopped looking (a lost steer).
        self._lock = threading.Lock()
        # One set of limits for every tool result, bash output included (R-O1..R-O3).
        self.tool_context = dataclasses.replace(
            tool_context, cancel=self._abort, result_limits=settings.spill
        )
        self.caller = ModelCaller(
            models, policy=settings.retry, emit=emit, abort=self._abort, breaker_for=breaker_for
        )
        self._specs = tool_specs(self.tools)

    # --- controls (any thread) ------------------------------------------------------------

    def steer(self, text: str) -> None:
        self._steers.append(text)

    def try_steer(self, text: str) -> bool:
        """Queue `text` for the current run; False (nothing queued) when no run is going."""
        with self._lock:
            if not self._running.is_set():
                return False
            self._steers.append(text)
            return True

    def abort(self) -> None:
        if self._running.is_set():
            self._abort.set()

    def arm(self, *, aborted: bool = False) -> None:
        """Mark a run as started before `run` is called, so an abort from another thread in
        between is not lost (`aborted=True`: the caller already saw one)."""
        with self._lock:
            self._abort.clear()
            self._running.set()
            if aborted:
                self._abort.set()

    @property
    def running(self) -> bool:
        return self._running.is_set()

    @property
    def has_pending_steers(self) -> bool:
        return bool(self._steers)

    # --- the loop (one thread) ------------------------------------------------------------

    def run(self, prompt: str | None, source: UserSource = "prompt") -> LoopFinished:
        """Answer `prompt` (None: continue the session as it stands)."""
        if not self._running.is_set():  # not armed by the caller
            self.arm()
        try:
            return self._run(prompt, source)
        finally:
            with self._lock:
                self._running.clear()

    def _run(self, prompt: str | None, source: UserSource) -> LoopFinished:
        interrupted = self.session.close_interrupted()
        if interrupted:
            names = ", ".join(f"{c.name} ({c.id})" for c in interrupted)
            self.emit(Progress("notice", {"message": f"interrupted tool calls closed: {names}"}))
        if prompt:
            self._add_user(prompt, source)
        turns = 0
        last_text = self._last_text()
        while True:
            self._apply_steers()
            if self._abort.is_set():
                return self._finish(last_text, "aborted", turns)
            if not self._model_owes_reply():
                return self._finish(last_text, None, turns)
            if self.settings.max_turns is not None and turns >= self.settings.max_turns:
                return self._finish(
                    last_text, f"turn budget spent (max_turns={self.settings.max_turns})", turns
                )
            if self.settings.gate is not None and (stop := self.settings.gate()):
                return self._finish(last_text, stop, turns)
            request = ModelRequest(
                model="",
                system=self.settings.system_prompt,
                items=self.session.items,
                tools=self._specs,
                max_tokens=self.settings.max_tokens,
                thinking=self.settings.thinking,
                tool_choice="required" if self.settings.answer_schema is not None else "auto",
            )
            try:
                turn = self.caller.call(request)
            except Aborted:
                return self._finish(last_text, "aborted", turns)
            except ModelError as err:
                return self._finish(last_text, err.one_line(), turns)
            turns += 1
            usage = turn.usage
            self.session.append(
                turn.items,
                model=turn.model.label,
                stop_reason=turn.stop_reason,
                usage=dataclasses.asdict(usage)
                if usage.input_tokens or usage.output_tokens
                else None,
            )
            self.emit(Spent(usage, turn.model.cost(usage), turn.model.label))
            text = text_of(turn.items)
            if text:
                last_text = text
            calls = tool_calls_of(turn.items)
            yielded = self._run_tools(calls) if calls else ()
            answered = self._answered(calls)
            if answered is not None:
                self.emit(
                    Progress(
                        "turn_end",
                        {"turn": turns, "stop_reason": "answer", "tool_calls": len(calls)},
                    )
                )
                return self._finish(answered, None, turns)
            if turn.stop_reason == "max_tokens" and not calls:
                self.emit(Progress("notice", {"message": "the model hit its max_tokens limit"}))
            self.emit(
                Progress(
                    "turn_end",
                    {"turn": turns, "stop_reason": turn.stop_reason, "tool_calls": len(calls)},
                )
            )
            if yielded and not self._steers and not self._abort.is_set():
                self.emit(Progress("yielded", {"tools": list(yielded)}))
                return self._finish(last_text, None, turns, yielded=True)

    def _run_tools(self, calls: list[ToolCall]) -> tuple[str, ...]:
        """Run a turn's calls in order; the names of those that yielded."""
        yielded: list[str] = []
        for index, call in enumerate(calls):
            if self._abort.is_set():
                self._close_rest(calls[index:], ABORTED_TEXT)
                break
            if index and self._steers:
                self._close_rest(calls[index:], SKIPPED_TEXT)
                break
            self.emit(
                Progress("tool_execution", {"tool": call.name, "call_id": call.id}, log=False)
            )
            started = time.monotonic()
            result, yields = execute_call(call, self.tools, self.tool_context)
            if yields and not result.is_error:
                yielded.append(call.name)
            self.session.append([result])
            self.emit(
                Progress(
                    "tool_execution_end",
                    {
                        "tool": call.name,
                        "call_id": call.id,
                        "is_error": result.is_error,
                        "duration_ms": int((time.monotonic() - started) * 1000),
                        # Why it failed (the runner adapter bounds it): a guard's refusal too.
                        "error": result.text if result.is_error else None,
                    },
                )
            )
        return tuple(yielded)

    def _answered(self, calls: list[ToolCall]) -> str | None:
        """The final answer, when this turn made a final_answer call that was accepted."""
        schema = self.settings.answer_schema
        if schema is None:
            return None
        from specialists.native.tools.answer import ANSWER_TOOL, answer_text

        results = {i.call_id: i for i in self.session.items if isinstance(i, ToolResult)}
        for call in calls:
            result = results.get(call.id)
            if call.name == ANSWER_TOOL and result is not None and not result.is_error:
                return answer_text(schema, call.arguments)
        return None

    def _close_rest(self, calls: list[ToolCall], text: str) -> None:
        for call in calls:
            self.session.append([ToolResult(call.id, call.name, text, is_error=True)])

    def _apply_steers(self) -> None:
        while self._steers:
            text = self._steers.popleft()
            self._add_user(text, "steer")
            self.emit(Progress("steer_ack", {"chars": len(text)}))

    def _add_user(self, text: str, source: UserSource) -> None:
        limits = SpillLimits(
            max_chars=self.settings.user_max_chars,
            head_chars=self.settings.spill.head_chars,
            tail_chars=self.settings.spill.tail_chars,
        )
        body = bound_body(text, self.tool_context.spill_dir, f"user-{source}", limits)
        self.session.append([UserMessage(body, source=source)])

    def _model_owes_reply(self) -> bool:
        """True when the conversation ends with input the model has not answered yet."""
        items = self.session.items
        return bool(items) and items[-1].kind not in MODEL_SIDE

    def _last_text(self) -> str:
        items: Sequence[Item] = self.session.items
        for start in range(len(items) - 1, -1, -1):
            if items[start].kind == "user":
                break
            if items[start].kind == "assistant":
                return text_of([items[start]])
        return ""

    def _finish(
        self, text: str, error: str | None, turns: int, *, yielded: bool = False
    ) -> LoopFinished:
        finished = LoopFinished(text, error, turns, yielded)
        self.emit(finished)
        return finished
