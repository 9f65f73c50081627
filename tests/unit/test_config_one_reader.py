"""config.py is the one reader of config.toml (issue 21 item 15): an unknown key anywhere,
top level or inside a table another room reads, is named once and ignored, on every front;
the rooms get only the keys they know and still check every value."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, UserError
from specialists.catalog import config as config_mod
from specialists.catalog.config import ROOM_TABLES, merge_layers, unreported
from specialists.executors.settings import parse_table
from specialists.features.attention.settings import resolve_watchdog
from specialists.features.sandbox.handoff import worktree_settings
from specialists.native import tool_settings as toolset
from specialists.native.tool_settings import settings_from_config

FILE = Path("/p/.specialists/config.toml")


def read(data: dict) -> config_mod.Config:
    return merge_layers([(FILE, data)])


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"colour": "red"}, "colour"),
        ({"jobs": {"max": 3, "foo": 1}}, "jobs.foo"),
        ({"bash": {"guard": "warn", "gaurd": "off"}}, "bash.gaurd"),
        ({"watchdog": {"reviewer": "r", "foo": 1}}, "watchdog.foo"),
        ({"attention": {"after": "5m", "foo": 1}}, "attention.foo"),
        ({"executor": {"adress": "x"}}, "executor.adress"),
        ({"worktree": {"foo": 1}}, "worktree.foo"),
        ({"threads": {"adaptiveConcurrency": {"enabled": True, "bogus": 2}}}, "bogus"),
        ({"runners": {"xx": {"a": 1}}}, "runners.xx"),
    ],
)
def test_an_unknown_key_is_named_once_and_left_out(data: dict, named: str) -> None:
    config = read(data)
    (warning,) = config.warnings
    assert (
        warning.startswith(f"{FILE}: ") and named in warning and "unknown key, ignored" in warning
    )
    # What the rooms get accepts in every room's own reader: nothing refuses the file.
    settings_from_config(config.raw)
    resolve_watchdog(config.raw.get("watchdog"), None, None)
    parse_table(config.raw.get("executor") or {}, "[executor]")
    worktree_settings(config.raw)


def test_a_close_name_is_suggested() -> None:
    (warning,) = read({"bash": {"gaurd": "off"}}).warnings
    assert "did you mean 'guard'?" in warning


def test_the_known_keys_beside_an_unknown_one_still_apply() -> None:
    config = read({"jobs": {"max": 3, "foo": 1}, "overflow": {"maxChars": 500}})
    settings = settings_from_config(config.raw)
    assert settings.jobs.max == 3 and settings.overflow.max_chars == 500


def test_a_wrong_value_is_still_its_rooms_error() -> None:
    config = read({"jobs": {"max": -1}, "watchdog": "sometimes"})
    with pytest.raises(ConfigError, match=r"jobs\.max must be a non-negative integer"):
        settings_from_config(config.raw)
    with pytest.raises(UserError, match="expected true, false or a table"):
        resolve_watchdog(config.raw["watchdog"], None, None)


def test_runner_options_and_resource_names_are_open() -> None:
    config = read({"runners": {"pi": {"anything": 1}}, "executor": {"resources": {"gpu": 1}}})
    assert config.warnings == ()
    assert config.raw["runners"]["pi"] == {"anything": 1}


def test_each_process_shows_a_warning_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_mod, "_reported", set())
    assert unreported(["a", "b"]) == ["a", "b"]
    assert unreported(["a", "b", "c"]) == ["c"]


@pytest.mark.parametrize("table", ["bash", "jobs", "events", "overflow", "timers", "threads"])
def test_the_schema_knows_exactly_the_toolset_fields(table: str) -> None:
    """No drift: every field of the tool settings is known to config.py, in both spellings,
    and nothing else is."""
    fields = set(getattr(toolset.Settings(), table)._fields)
    snake = {k for k in ROOM_TABLES[table] if k == toolset._snake(k)}
    assert snake == fields
    for key in ROOM_TABLES[table]:
        assert toolset._snake(key) in fields


def test_the_schema_knows_every_executor_setting() -> None:
    from specialists.executors.settings import DEFAULTS

    assert set(DEFAULTS) <= set(ROOM_TABLES["executor"])
