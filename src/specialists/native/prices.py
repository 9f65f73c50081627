"""What a model's tokens cost, from a maintained price list: pydantic's `genai-prices`.

Asked only where a cost is computed and nothing else gave one: a native model with no price
in config.toml (`[providers.*]` prices always win), or an agent that reports tokens but no
cost (Codex). The package is heavy (pydantic and its price data: about a second of CPU), so it
is imported here, on the first lookup, and never on a fast path; a model it does not know,
or a provider that serves its own models (ollama, a recording), costs nothing rather than a
guess. Prices are per million tokens, our `input` without the cache tokens (genai-prices
counts them inside its input, so they are added back).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from specialists.base.tuples import NamedTuple

log = logging.getLogger(__name__)

# Our provider names (native/providers/registry.py, the runners) -> genai-prices' ids.
PROVIDERS = {
    "anthropic": "anthropic",
    "claude": "anthropic",
    "openai": "openai",
    "openai-responses": "openai",
    "codex": "openai",
    "openrouter": "openrouter",
    "groq": "groq",
    "deepseek": "deepseek",
    "together": "together",
}

Calc = Callable[..., Any]  # genai_prices.calc_price's shape (a fake in unit tests)


class Tokens(NamedTuple):
    """A usage as genai-prices reads one (its input includes the cache tokens)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def cost_usd(
    provider: str,
    model: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    calc: Calc | None = None,
) -> float:
    """US dollars for this usage of `provider`/`model`; 0.0 when the list has no price."""
    ref = PROVIDERS.get(provider)
    if ref is None or not model or not (input_tokens or output_tokens or cache_read_tokens):
        return 0.0
    total_in = input_tokens + cache_read_tokens + cache_write_tokens
    usage = Tokens(total_in, output_tokens, cache_read_tokens, cache_write_tokens)
    try:
        found = (calc or _calc())(usage, model, provider_id=ref)
    except LookupError:
        _unknown(ref, model)
        return 0.0
    return round(float(found.total_price), 8)


@functools.cache
def _unknown(provider: str, model: str) -> None:
    log.info("no price for %s/%s in genai-prices: its cost counts as 0", provider, model)


@functools.cache
def _calc() -> Calc:
    from genai_prices import calc_price

    return calc_price
