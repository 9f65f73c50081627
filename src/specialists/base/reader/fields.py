"""A mapping read field by field (`Fields`): typed values out, unknown keys as warnings."""

from __future__ import annotations

from collections.abc import Mapping

from specialists.base.reader.values import (
    MAX_COUNT,
    Describe,
    Invalid,
    TextForm,
    choice_value,
    describe,
    integer_value,
    join,
    number_text,
    number_value,
    suggest,
    text_value,
    unknown_key_problem,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Fields:
    """One mapping, read field by field; remembers which keys were asked for.

    Every accessor returns None (or the default) for an absent or null key, so optional
    fields read in one line; `require` turns absence into a problem of kind "missing".
    """

    def __init__(
        self,
        data: object,
        prefix: str = "",
        warnings: list[str] | None = None,
        *,
        ignored: frozenset[str] = frozenset(),
        describe: Describe = describe,
        what: str = "a mapping",
    ) -> None:
        if not isinstance(data, Mapping):
            raise Invalid.wrong(prefix or None, what, describe(data))
        self.what = what  # what a mapping is called here: "a table" in TOML, "an object" in JSON
        for key in data:
            if not isinstance(key, str):
                raise Invalid(prefix or None, f"keys must be text, got {describe(key)}")
        self.data: Mapping[str, Any] = data
        self.prefix = prefix
        self.warnings: list[str] = [] if warnings is None else warnings
        self.ignored = ignored
        self.describe = describe
        self.used: set[str] = set()

    def field(self, key: str) -> str:
        return join(self.prefix, key)

    def raw(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def require(self, key: str, hint: str = "") -> Any:
        value = self.raw(key)
        if value is None:
            raise Invalid(self.field(key), f"is required{hint}", kind="missing")
        return value

    def text(
        self,
        key: str,
        *,
        form: TextForm = "prose",
        max_chars: int | None = None,
        non_empty: bool = False,
    ) -> str | None:
        value = self.raw(key)
        if value is None:
            return None
        return text_value(
            value,
            self.field(key),
            form=form,
            max_chars=max_chars,
            non_empty=non_empty,
            describe=self.describe,
        )

    def scalar_text(self, key: str, *, max_chars: int = 256) -> str | None:
        """Text, also accepting a bare number (YAML reads `version: 1.0` as a float)."""
        value = self.raw(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return number_text(value)
        return self.text(key, form="line", max_chars=max_chars)

    def choice(self, key: str, choices: tuple[str, ...], *, upper: bool = False) -> str | None:
        value = self.raw(key)
        if value is None:
            return None
        return choice_value(value, self.field(key), choices, upper=upper, describe=self.describe)

    def flag(self, key: str) -> bool | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise Invalid.wrong(self.field(key), "true or false", self.describe(value))
        return value

    def integer(
        self,
        key: str,
        *,
        low: int | None = None,
        high: int | None = MAX_COUNT,
        what: str = "a whole number",
    ) -> int | None:
        value = self.raw(key)
        if value is None:
            return None
        return integer_value(
            value, self.field(key), low=low, high=high, what=what, describe=self.describe
        )

    def number(self, key: str, *, low: float | None = None, what: str = "a number") -> float | None:
        value = self.raw(key)
        if value is None:
            return None
        return number_value(value, self.field(key), low=low, what=what, describe=self.describe)

    def text_list(
        self, key: str, *, form: TextForm = "line", max_chars: int | None = 4096
    ) -> list[str]:
        """A list of text; a single text counts as a list of one."""
        value = self.raw(key)
        if value is None:
            return []
        where = self.field(key)
        if isinstance(value, str):
            return [text_value(value, where, form=form, max_chars=max_chars)]
        if not isinstance(value, list):
            raise Invalid.wrong(where, "a list of text", self.describe(value))
        return [
            text_value(
                item, f"{where}[{i}]", form=form, max_chars=max_chars, describe=self.describe
            )
            for i, item in enumerate(value)
        ]

    def section(self, key: str, *, ignored: frozenset[str] = frozenset()) -> Fields | None:
        value = self.raw(key)
        if value is None:
            return None
        return Fields(
            value,
            self.field(key),
            self.warnings,
            ignored=ignored,
            describe=self.describe,
            what=self.what,
        )

    def unknown(self) -> list[str]:
        """Keys present that nobody asked for (nor declared ignored), in file order."""
        return [k for k in self.data if k not in self.used and k not in self.ignored]

    def finish(self) -> None:
        """Warn once per unknown key: usually a typo that would otherwise do nothing."""
        for key in self.unknown():
            self.warnings.append(f"{self.field(key)}: {unknown_key_problem(key, self.used)}")

    def finish_strict(self) -> None:
        """Refuse the first unknown key (for small closed mappings such as a script entry)."""
        unknown = self.unknown()
        if unknown:
            close = suggest(unknown[0], self.used)
            known = ", ".join(sorted(self.used))
            hint = f"did you mean '{close}'? " if close else ""
            raise Invalid(
                self.field(unknown[0]), f"unknown key ({hint}expected {known})", kind="unknown"
            )
