"""The model seam: one method, `stream(request) -> Iterator[StreamEvent]`.

Provider adapters (providers/) implement it over an SDK, `providers.replay` over a recording
and `testing.ScriptedModel` over a script. Every failure leaves a provider as a `ModelError`
whose `category` decides what the loop does: retry (transient, throttled), give up at once
(fatal, config) or stop without retrying (overflow: the same request can never fit).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from specialists.base.errors import SpecialistsError
from specialists.native.messages import Item, ToolCall

ErrorCategory = Literal["transient", "throttled", "fatal", "config", "overflow"]
RETRYABLE: tuple[ErrorCategory, ...] = ("transient", "throttled")
StopReason = Literal["end", "tool_use", "max_tokens", "refusal", "other"]


class ModelError(SpecialistsError):
    """A model call failed. `message` is one line meant for the user."""

    def __init__(
        self,
        message: str,
        *,
        category: ErrorCategory,
        retry_after: float | None = None,
        status: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.category: ErrorCategory = category
        self.retry_after = retry_after
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.category in RETRYABLE


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments object


@dataclass(frozen=True)
class ModelRequest:
    model: str  # the model id inside its provider (no "provider/" prefix)
    system: str
    items: tuple[Item, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    thinking: str | None = None  # off | minimal | low | medium | high | xhigh; None = default
    tool_choice: Literal["auto", "required"] = "auto"  # required: the reply must call a tool


@dataclass(frozen=True)
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    text: str
    signature: str | None = None  # Anthropic sends it once, at the end of the block
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ToolCallDone:
    call: ToolCall
    kind: Literal["tool_call_done"] = "tool_call_done"


@dataclass(frozen=True)
class UsageReport:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True)
class Done:
    stop_reason: StopReason
    raw_reason: str | None = None  # what the provider said, for the log
    kind: Literal["done"] = "done"


StreamEvent = TextDelta | ThinkingDelta | ToolCallDone | UsageReport | Done


class ModelClient(Protocol):
    """One model at one provider."""

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        """Yield events for one model turn, ending with `Done`; raise ModelError on failure."""
        ...


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = None  # None: same as input
    cache_write: float | None = None  # None: same as input

    def cost(self, usage: UsageReport) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        )
        return total / 1_000_000


@dataclass(frozen=True)
class ModelInfo:
    """What the loop knows about a resolved model besides its client."""

    label: str  # "provider/model"
    provider: str
    model_id: str
    context_window: int | None = None
    prices: Prices | None = None  # config.toml's; None: the maintained list's (native/prices)

    def cost(self, usage: UsageReport) -> float:
        """US dollars for one turn's usage."""
        if self.prices is not None:
            return self.prices.cost(usage)
        from specialists.native.prices import cost_usd

        return cost_usd(
            self.provider,
            self.model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )


# --- classifying provider failures (Infinity P9): status, code and message in, category out

_OVERFLOW_CODES = ("context_length_exceeded", "string_above_max_length", "request_too_large")
_OVERFLOW_PATTERNS = re.compile(
    r"prompt is too long|maximum context length|context (window|length)|too many tokens"
    r"|exceeds? the (model'?s? )?(context|maximum)|input is too long|reduce the length"
    r"|request too large|content too large",
    re.IGNORECASE,
)
_QUOTA_CODES = ("insufficient_quota", "billing_hard_limit_reached")
_THROTTLE_CODES = ("rate_limit_exceeded", "rate_limit_error", "overloaded_error", "overloaded")
_TRANSIENT_CODES = ("server_error", "api_error", "timeout", "internal_error")


def classify(status: int | None, code: str | None = None, message: str = "") -> ErrorCategory:
    """The category of one failed call.

    `status` is the HTTP status (None for in-stream error events and transport failures),
    `code` the provider's error code or type when it sent one.
    """
    code = (code or "").lower()
    if code in _OVERFLOW_CODES or status == 413:
        return "overflow"
    if code in _QUOTA_CODES:
        return "config"  # an empty account does not refill by waiting
    if status in (400, 422) and _OVERFLOW_PATTERNS.search(message):
        return "overflow"
    if status == 429 or code in _THROTTLE_CODES or status == 529:
        return "throttled"
    if status in (401, 403, 404, 402):
        return "config"
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return "transient"
    if status is not None and 400 <= status < 500:
        return "fatal"
    if code in _TRANSIENT_CODES:
        return "transient"
    if _OVERFLOW_PATTERNS.search(message):
        return "overflow"
    return "fatal"


def describe_status(provider: str, status: int | None, category: ErrorCategory) -> str:
    """A short reason phrase used in the one-line error."""
    if category == "config" and status in (401, 403):
        return f"{provider} rejected the API key"
    if category == "config" and status == 404:
        return f"{provider} does not know this model or endpoint"
    if category == "config":
        return f"{provider} refused the request (account or quota)"
    if category == "overflow":
        return "the conversation does not fit the model's context window"
    if category == "throttled":
        return f"{provider} is rate limiting or overloaded"
    if category == "transient":
        return f"{provider} failed temporarily"
    return f"{provider} rejected the request"


def short(text: str, limit: int = 300) -> str:
    """One line, capped: provider messages can be whole HTML pages."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
