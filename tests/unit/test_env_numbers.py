"""reader/env.py: numbers from environment variables, refused with one line when bad."""

from __future__ import annotations

import pytest

from specialists.base.errors import ConfigError
from specialists.base.reader.env import env_number


def read(value: str | None, **kw) -> float:
    env = {} if value is None else {"X_DAYS": value}
    kw.setdefault("low", 0)
    kw.setdefault("high", 100)
    return env_number("X_DAYS", 7, unit="days", env=env, **kw)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_unset_or_empty_is_the_default(value):
    assert read(value) == 7


@pytest.mark.parametrize("value", ["0.5", "100", " 3 ", "1e1"])
def test_a_number_in_bounds_is_taken(value):
    assert read(value) == float(value)


@pytest.mark.parametrize(
    "value", ["0", "-1", "abc", "nan", "inf", "-inf", "1e999", "100.5", "7 days", "0x10"]
)
def test_anything_else_is_one_line_exit_2(value):
    with pytest.raises(ConfigError) as refused:
        read(value)
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith(f"X_DAYS={value.strip()!r} is not a number of days")
    assert "\n" not in refused.value.one_line()


def test_zero_can_be_allowed_and_a_huge_value_is_clipped_in_the_message():
    assert read("0", zero_ok=True) == 0
    with pytest.raises(ConfigError) as refused:
        read("9" * 500)
    assert len(refused.value.one_line()) < 200
