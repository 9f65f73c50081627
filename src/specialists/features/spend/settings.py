"""config.toml's `[spend]`: the ceilings a person sets once, and when a fan-out waits for them.

    [spend]
    max_cost = 5.0              # every tree started without a ceiling of its own (US dollars)
    max_tokens = "2M"           #   ... and in tokens (input + output)
    session_max_cost = 20.0     # everything one outside session (Claude Code, pi, Codex) starts
    session_max_tokens = "10M"
    approve_over_cost = 3.0     # a fan-out estimated over this waits for the owner's approval
    approve_over_tokens = "1M"
    approve_timeout_s = 900     # how long it waits for the reply (then it is refused)

Every key is optional; with none, nothing is limited and nothing waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specialists.base.errors import ConfigError, UserError
from specialists.base.tuples import NamedTuple
from specialists.features.spend.ceiling import parse_tokens, parse_usd

DEFAULT_APPROVE_TIMEOUT_S = 900.0
MAX_APPROVE_TIMEOUT_S = 86_400.0


class SpendSettings(NamedTuple):
    max_tokens: int | None = None
    max_cost: float | None = None
    session_max_tokens: int | None = None
    session_max_cost: float | None = None
    approve_over_tokens: int | None = None
    approve_over_cost: float | None = None
    approve_timeout_s: float = DEFAULT_APPROVE_TIMEOUT_S


def spend_settings(config_raw: Mapping[str, Any]) -> SpendSettings:
    """The `[spend]` table, checked: one clear line for a bad value or an unknown key."""
    table = config_raw.get("spend")
    if table is None:
        return SpendSettings()
    if not isinstance(table, Mapping):
        raise ConfigError("config.toml: [spend] must be a table")
    unknown = sorted(set(table) - set(SpendSettings._fields))
    if unknown:
        raise ConfigError(
            f"config.toml: [spend] has no key {unknown[0]!r}",
            hint="keys: " + ", ".join(SpendSettings._fields),
        )
    values: dict[str, Any] = {}
    try:
        for key, value in table.items():
            what = f"[spend] {key}"
            if key == "approve_timeout_s":
                seconds = parse_usd(value, what)  # a positive number, as dollars are
                values[key] = min(seconds, MAX_APPROVE_TIMEOUT_S)
            elif key.endswith("tokens"):
                values[key] = parse_tokens(value, what)
            else:
                values[key] = parse_usd(value, what)
    except UserError as exc:
        raise ConfigError(f"config.toml: {exc.message}", hint=exc.hint) from None
    return SpendSettings(**values)
