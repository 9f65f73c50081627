"""Argument types for the commands: bad values are refused where they enter.

Each is an argparse `type=`: a value it refuses becomes the parser's one-line error
(`error: argument --timeout: ... (see: specialists run --help)`, exit 2) before any work.
"""

from __future__ import annotations

import argparse
import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, None: 1}
MAX_DURATION_MS = 30 * 86_400_000  # 30 days: anything longer is a typo
DURATION_HELP = "30s, 5m, 1h or 500ms; a bare number is milliseconds"


def duration_ms(text: str) -> int:
    """'90000' (milliseconds, as the seed's `--timeout <ms>`), '500ms', '30s', '5m', '1h'."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"invalid duration {text[:40]!r} ({DURATION_HELP})")
    value = float(match.group(1)) * _UNITS_MS[match.group(2)]
    # Under 1 ms rounds to 0, which means "no timeout" downstream: refuse it instead.
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: shorter than 1 ms")
    if value > MAX_DURATION_MS:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: longer than 30 days")
    return int(value)


class Duration:
    """argparse type: the milliseconds, and the text (a bare small number gets a nudge)."""

    def __init__(self, text: str) -> None:
        self.text = text.strip()
        self.ms = duration_ms(text)

    def warning(self, option: str) -> str | None:
        """'--timeout 90' is 90 ms, likely meant as seconds: say so (the run goes ahead)."""
        if not self.text.replace(".", "", 1).isdigit() or self.ms >= 1000:
            return None
        return (
            f"{option} {self.text} is {self.ms} ms (a bare number is milliseconds); "
            f"write {self.text}s for seconds"
        )

    def __repr__(self) -> str:
        return f"Duration({self.text!r})"


def nonempty(text: str) -> str:
    """A name-like value (runner, model, cwd): not empty, not blank, no NUL."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if "\x00" in text:
        raise argparse.ArgumentTypeError("must not contain a NUL byte")
    return text
