"""Numbers from environment variables: a bad one is refused with one line (ConfigError,
exit 2), never warned about and then replaced by a default behind the person's back.

Unset or empty means the default (`VAR= cmd` is how a shell unsets for one command).
Anything else must be a finite number within the caller's bounds: `abc`, `-1`, `0` where
zero is not allowed, `1e999`, `nan` are each one line naming the variable and its value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from specialists.base.errors import ConfigError


def env_number(
    name: str,
    default: float,
    *,
    low: float,
    high: float,
    unit: str,
    zero_ok: bool = False,
    env: Mapping[str, str] | None = None,
) -> float:
    """The number in `name` (`default` when unset or empty), in ]low, high] (or [low, high]
    with `zero_ok` and low == 0). Raises ConfigError for anything else."""
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    above = value >= low if zero_ok else value > low
    if not (above and value <= high):  # also refuses nan and the infinities
        shown = raw if len(raw) <= 40 else raw[:39] + "…"
        bounds = f"from {low:g}" if zero_ok else f"above {low:g}"
        raise ConfigError(
            f"{name}={shown!r} is not a number of {unit} {bounds} up to {high:g}",
            hint=f"unset it for the default ({default:g}) or give a number such as {default:g}",
        )
    return value
