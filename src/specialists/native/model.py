"""The model seam: one method, `stream(request) -> Iterator[StreamEvent]`.

Provider adapters (providers/) implement it over an SDK, `providers.replay` over a recording
and `testing.ScriptedModel` over a script. Every failure leaves a provider as a `ModelError`
whose `category` decides what the loop does: retry (transient, throttled), give up at once
(fatal, config) or stop without retrying (overflow: the same request can never fit).
"""

from __future__ import annotations

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
