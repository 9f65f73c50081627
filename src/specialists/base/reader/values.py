"""Single values read from untrusted data, and the one problem type, `Invalid`.

Text is refused where it would break what it reaches: a NUL character (an argv string or a
file name cannot hold one; the agent spawn would crash), a lone surrogate (it cannot be
encoded for a pipe or a file), control characters in one-line values (a model name, a
command, a path) and values longer than the caller allows. Numbers must be finite and
within the caller's bounds (YAML and TOML read `1e999` as infinity).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

# `typing` costs milliseconds to import and the fast commands may import this module, so the
# Literal types exist for type checkers only (as in hooks/session_start.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    # What a piece of text may hold. "line": one line of printable text (names, models,
    # paths, commands). "arg": a command-line argument or a shell script: tabs and newlines
    # allowed, other control characters not. "prose": any text without NUL (prompts).
    TextForm = Literal["line", "arg", "prose"]
    ProblemKind = Literal["value", "missing", "unknown"]
else:
    TextForm = ProblemKind = str

# One argv string may not exceed 128 KiB on Linux (MAX_ARG_STRLEN, including its NUL).
MAX_ARG_BYTES = 128 * 1024 - 1
MAX_COUNT = 2**31 - 1  # turns, tokens, windows: far beyond any real value, safe everywhere
MAX_EXACT = 2**53  # larger numbers lose precision in JSON and in float arithmetic

_ALLOWED_IN_ARG = frozenset("\t\n\r")


class Invalid(Exception):
    """One fatal problem in untrusted data: which field, what was expected, what was found.

    `problem` reads after the field name ("expected text, got a number (5)", "must not be
    empty"). `expected`/`found` are set when the problem is a wrong value, so a front can
    phrase it its own way; `kind` tells a missing or unknown field from a wrong value.
    """

    def __init__(
        self,
        field: str | None,
        problem: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        kind: ProblemKind = "value",
    ) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem
        self.expected = expected
        self.found = found
        self.kind: ProblemKind = kind

    @classmethod
    def wrong(cls, field: str | None, expected: str, found: str) -> Invalid:
        # "one of a, b; got x" reads better than "one of a, b, got x"
        joint = "; got" if ", " in expected else ", got"
        return cls(field, f"expected {expected}{joint} {found}", expected=expected, found=found)


Describe = Callable[[object], str]


def describe(value: object) -> str:
    """How a value reads to a person writing YAML or TOML ('a list', 'true/false', ...)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({number_text(value)})"
    if isinstance(value, str):
        return f"text ({clip(value)!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def describe_json(value: object) -> str:
    """How a value reads to a JSON client: the value itself, clipped."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(clip(value))
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, int | float):
        return number_text(value)
    return f"a {type(value).__name__}"


def clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def number_text(value: int | float) -> str:
    # repr of a 4,000-digit integer is a wall of digits (and Python refuses past 4,300).
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"a {value.bit_length()}-bit integer"
    return clip(repr(value))


def join(prefix: str, key: str) -> str:
    """`prefix.key`; a key that would not print as itself (control characters) is quoted."""
    shown = key if key.isprintable() and len(key) <= 64 else repr(clip(key, 64))
    return f"{prefix}.{shown}" if prefix else shown


def value_error_text(exc: ArithmeticError | ValueError) -> str:
    """A parser's ValueError in plain words (Python refuses integers of over 4,300 digits)."""
    text = " ".join(str(exc).split())
    if "integer string conversion" in text:
        return "a number with too many digits (at most 4,300)"
    return text


# --- single values ------------------------------------------------------------------------


def text_value(
    value: object,
    field: str,
    *,
    form: TextForm = "prose",
    max_chars: int | None = None,
    non_empty: bool = False,
    describe: Describe = describe,
) -> str:
    """`value` as text that fits `form` and `max_chars`. Raises `Invalid`."""
    if not isinstance(value, str):
        raise Invalid.wrong(field, "text", describe(value))
    check_text(value, field, form=form, max_chars=max_chars)
    if non_empty and not value.strip():
        raise Invalid(field, "must not be empty")
    return value


def check_text(
    value: str, field: str | None, *, form: TextForm = "prose", max_chars: int | None = None
) -> None:
    """Refuse what `value` cannot carry where it goes (see the module docstring)."""
    if max_chars is not None and len(value) > max_chars:
        raise Invalid(field, f"is too long ({len(value):,} > {max_chars:,} characters)")
    nul = value.find("\x00")
    if nul >= 0:
        raise Invalid(field, f"contains a NUL character (at character {nul})")
    if form != "prose":
        bad = _first_control(value, allowed=_ALLOWED_IN_ARG if form == "arg" else frozenset())
        if bad >= 0:
            what = "one line of text" if form == "line" else "a command-line argument"
            raise Invalid(
                field,
                f"contains a control character (U+{ord(value[bad]):04X} at character {bad});"
                f" expected {what}",
            )
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. "\ud800" from JSON escapes
        raise Invalid(
            field, f"is not valid Unicode text (a lone surrogate at character {exc.start})"
        ) from None
    if form == "arg" and len(encoded) > MAX_ARG_BYTES:
        raise Invalid(field, f"is too long for a command line ({len(encoded):,} bytes > 128 KiB)")


def _first_control(value: str, *, allowed: frozenset[str]) -> int:
    if value.isprintable():  # fast path: no control (or other non-printing) characters
        return -1
    for i, char in enumerate(value):
        code = ord(char)
        if (code < 0x20 or 0x7F <= code < 0xA0) and char not in allowed:
            return i
    return -1


def integer_value(
    value: object,
    field: str,
    *,
    low: int | None = None,
    high: int | None = None,
    what: str = "a whole number",
    describe: Describe = describe,
) -> int:
    """A whole number within [low, high]; 3.0 counts as 3 (JSON and YAML clients send it)."""
    number = _whole(value)
    if number is None:
        raise Invalid.wrong(field, what, describe(value))
    if (low is not None and number < low) or (high is not None and number > high):
        raise Invalid.wrong(field, _bounds(number, low, high), describe_json(value))
    return number


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def number_value(
    value: object,
    field: str,
    *,
    low: float | None = None,
    high: float | None = MAX_EXACT,
    what: str = "a number",
    describe: Describe = describe,
) -> float:
    """A finite number within [low, high] (TOML and YAML read `1e999` as infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid.wrong(field, what, describe(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid.wrong(field, f"{what} (finite)", describe(value))
    if (low is not None and value < low) or (high is not None and value > high):
        raise Invalid.wrong(field, _bounds(value, low, high), describe_json(value))
    return float(value)


def _bounds(value: float, low: float | None, high: float | None) -> str:
    """The range a value missed: both ends when the range is one a person would write
    (1 to 200), else only the end it crossed (not "between 1 and 2,147,483,647")."""
    if low is not None and high is not None and high - low <= 1_000_000:
        return f"between {low:,} and {high:,}"
    if low is not None and value < low:
        return f"at least {low:,}"
    return f"at most {high:,}"


def choice_value(
    value: object,
    field: str,
    choices: tuple[str, ...],
    *,
    upper: bool = False,
    describe: Describe = describe,
) -> str:
    """One of `choices`, case-insensitive; returned in the case `choices` use."""
    if isinstance(value, str):
        normal = value.strip().upper() if upper else value.strip().lower()
        if normal in choices:
            return normal
    raise Invalid.wrong(field, "one of " + ", ".join(choices), describe(value))


def suggest(name: str, known: Any) -> str | None:
    """The known name closest to a mistyped one, if any is close ('modle' -> 'model')."""
    import difflib  # only on a mistake: keep it off the import path

    close = difflib.get_close_matches(name, [str(k) for k in known], n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_key_problem(key: str, known: Any) -> str:
    close = suggest(key, known)
    return f"unknown key, ignored (did you mean '{close}'?)" if close else "unknown key, ignored"
