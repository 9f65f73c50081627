"""One model turn with everything around it: breaker, retries with backoff, fallback model,
prompt abort. The stream is read on a helper thread so an abort never waits on the network.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from specialists.native.breaker import CircuitBreaker
from specialists.native.events import Emit, Progress, TextOut
from specialists.native.messages import AssistantText, Item, Thinking
from specialists.native.model import (
    Done,
    ModelClient,
    ModelError,
    ModelInfo,
    ModelRequest,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDone,
    UsageReport,
    short,
)

_POLL_S = 0.05


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for model calls. Pure: the caller sleeps, this only decides how long."""

    max_retries: int = 3  # retries after the first attempt, per model
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0  # a server asking for longer than this is not waited for
    jitter: float = 0.2  # +- fraction of the delay

    def delay(
        self,
        attempt: int,
        error: ModelError,
        rand: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None to give up."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after_s:
                return None
            return max(0.0, error.retry_after)
        backoff = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        spread = backoff * self.jitter * (2 * rand() - 1)
        return max(0.0, backoff + spread)


class Aborted(Exception):
    """The run was aborted while waiting for the model."""


@dataclass
class ModelSlot:
    """A model the loop may call; the client (and its SDK import) is built on first use."""

    info: ModelInfo
    make_client: Callable[[], ModelClient]
    _client: ModelClient | None = field(default=None, repr=False)

    def client(self) -> ModelClient:
        if self._client is None:
            self._client = self.make_client()
        return self._client


@dataclass(frozen=True)
class Turn:
    items: tuple[Item, ...]
    stop_reason: StopReason
    usage: UsageReport
    model: ModelInfo


BreakerFor = Callable[[str], "CircuitBreaker | None"]


class ModelCaller:
    def __init__(
        self,
        slots: Sequence[ModelSlot],
        *,
        policy: RetryPolicy,
        emit: Emit,
        abort: threading.Event,
        breaker_for: BreakerFor | None = None,
    ) -> None:
        if not slots:
            raise ValueError("bug: ModelCaller needs at least one model")
        self.slots = list(slots)
        self.policy = policy
        self.emit = emit
        self.abort = abort
        self.breaker_for = breaker_for or (lambda _key: None)

    def call(self, request: ModelRequest) -> Turn:
        """A complete turn from the first model that gives one; raises ModelError/Aborted."""
        last: ModelError | None = None
        tried: list[str] = []
        for index, slot in enumerate(self.slots):
            if index:
                assert last is not None
                self.emit(
                    Progress(
                        "notice",
                        {"message": f"falling back to {slot.info.label}: {last.message}"},
                    )
                )
            tried.append(slot.info.label)
            try:
                return self._call_one(slot, request)
            except ModelError as err:
                if not err.retryable:
                    raise
                last = err
        assert last is not None
        via = f" (tried {', '.join(tried)})" if len(tried) > 1 else ""
        raise ModelError(f"{last.message}{via}", category=last.category, status=last.status)

    def _call_one(self, slot: ModelSlot, request: ModelRequest) -> Turn:
        breaker = self.breaker_for(slot.info.label)
        attempt = 0
        while True:
            refused = breaker.allow() if breaker is not None else None
            if refused is not None:
                raise ModelError(refused, category="throttled")
            try:
                turn = self._stream(slot, replace(request, model=slot.info.model_id))
            except ModelError as err:
                if err.retryable and breaker is not None:
                    breaker.record_failure(err.message)
                attempt += 1
                delay = self.policy.delay(attempt, err)
                if delay is None:
                    if err.retryable and attempt > 1:
                        raise ModelError(
                            f"{err.message} (gave up after {attempt} attempts)",
                            category=err.category,
                            status=err.status,
                        ) from err
                    raise
                self.emit(
                    Progress(
                        "retry",
                        {
                            "attempt": attempt,
                            "delay_s": round(delay, 2),
                            "category": err.category,
                            "error": short(err.message, 200),
                            "model": slot.info.label,
                        },
                    )
                )
                if self.abort.wait(delay):
                    raise Aborted from err
                continue
            if breaker is not None:
                breaker.record_success()
            return turn

    def _stream(self, slot: ModelSlot, request: ModelRequest) -> Turn:
        client = slot.client()
        events: queue.SimpleQueue[StreamEvent | BaseException | None] = queue.SimpleQueue()
        stop = threading.Event()
        pump = threading.Thread(
            target=_pump, args=(client, request, events, stop), name="native-model", daemon=True
        )
        pump.start()
        acc = _Accumulator(self.emit)
        while True:
            try:
                event = events.get(timeout=_POLL_S)
            except queue.Empty:
                if self.abort.is_set():
                    stop.set()
                    cancel = getattr(client, "cancel", None)
                    if callable(cancel):
                        cancel()  # best effort: unblock a read stuck on the network
                    raise Aborted from None
                continue
            if event is None:
                break
            if isinstance(event, BaseException):
                if isinstance(event, ModelError):
                    raise event
                raise ModelError(
                    f"{slot.info.label}: unexpected failure while streaming: "
                    f"{type(event).__name__}: {short(str(event))}",
                    category="fatal",
                ) from event
            acc.feed(event)
            if self.abort.is_set():
                stop.set()
                raise Aborted
        return acc.turn(slot.info)


def _pump(
    client: ModelClient,
    request: ModelRequest,
    out: queue.SimpleQueue[StreamEvent | BaseException | None],
    stop: threading.Event,
) -> None:
    try:
        stream = client.stream(request)
        try:
            for event in stream:
                out.put(event)
                if stop.is_set():
                    break
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()
        out.put(None)
    except BaseException as exc:  # noqa: BLE001 - handed to the loop thread, which raises it
        out.put(exc)


class _Accumulator:
    """Stream events -> one turn's items, emitting progress as the turn unfolds."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.signature: str | None = None
        self.calls: list[Item] = []
        self.usage = UsageReport()
        self.done: Done | None = None

    def feed(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            if not self.text:
                self.emit(Progress("text"))
            self.text.append(event.text)
            self.emit(TextOut(event.text))
        elif isinstance(event, ThinkingDelta):
            if not self.thinking and self.signature is None:
                self.emit(Progress("thinking"))
            self.thinking.append(event.text)
            if event.signature:
                self.signature = event.signature
        elif isinstance(event, ToolCallDone):
            call = event.call
            # The runner adapter turns the raw arguments into the shared toolcall shape.
            fields = {"tool": call.name, "call_id": call.id, "arguments": call.arguments}
            self.emit(Progress("toolcall", fields, current_tool=call.name))
            self.calls.append(call)
        elif isinstance(event, UsageReport):
            self.usage = event
        elif isinstance(event, Done):
            self.done = event

    def turn(self, info: ModelInfo) -> Turn:
        if self.done is None:
            raise ModelError(
                f"{info.label}: the stream ended before the model finished its turn",
                category="transient",
            )
        items: list[Item] = []
        thinking = "".join(self.thinking)
        if thinking or self.signature:
            items.append(Thinking(thinking, signature=self.signature))
        text = "".join(self.text)
        if text:
            items.append(AssistantText(text))
        items.extend(self.calls)
        stop = self.done.stop_reason
        if self.calls and stop == "end":
            stop = "tool_use"
        return Turn(tuple(items), stop, self.usage, info)
