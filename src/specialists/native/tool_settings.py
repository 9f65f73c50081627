"""The knobs of the wave-2 tools, with seed 001's defaults (section 3.2).

Read from the config files' sections [bash], [jobs], [events], [overflow], [timers] and
[threads] (config.py reads every layer: the user's, the team's `specialists/config.toml`, the
local `.specialists/config.toml` and `specialists/config.local.toml`, and names unknown
keys); the names follow the seed (camelCase keys are accepted beside snake_case ones, so a
pi-infinity config reads the same).

The values are NamedTuples (base/tuples.py), not dataclasses: the PreToolUse hook reads
them at every Bash call, and `dataclasses` (with `inspect`) would cost it some 15 ms.
"""

from __future__ import annotations

from collections.abc import Mapping

from specialists.base.errors import ConfigError
from specialists.base.tuples import NamedTuple
from specialists.native.guards import GUARD_MODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class BashSettings(NamedTuple):
    guard: str = "block"
    default_timeout_sec: int = 180
    sleep_limit_sec: int = 20


class JobsSettings(NamedTuple):
    max: int = 8
    tail_lines: int = 40
    watch_debounce_ms: int = 1000
    watch_batch_lines: int = 20
    watch_events_per_min: int = 6


class EventsSettings(NamedTuple):
    max_chars: int = 4000
    seen_cap: int = 2000


class OverflowSettings(NamedTuple):
    max_chars: int = 40_000
    head_chars: int = 6_000
    tail_chars: int = 2_000


class TimersSettings(NamedTuple):
    max: int = 32


class AdaptiveConcurrency(NamedTuple):
    """R-H11: `[threads.adaptiveConcurrency]`, off unless `enabled` (threads/limits.py)."""

    enabled: bool = False
    min: int = 1
    initial: int = 4
    max: int = 8
    successes_to_increase: int = 3
    decrease_factor: float = 0.5


class ThreadsSettings(NamedTuple):
    """Direct-child limits per parent (R-H11, R-RLM4); 0 means no limit."""

    max_concurrent: int = 0  # children launching, running or closing at once
    max_launches: int = 0  # children ever started by one parent (a job, or one session)
    adaptive_concurrency: AdaptiveConcurrency = AdaptiveConcurrency()


def adaptive_from(raw: object, where: str) -> AdaptiveConcurrency:
    """The table, checked as R-H11 says: positive integers, min <= initial <= max, a factor
    strictly between 0 and 1."""
    name = "threads.adaptiveConcurrency"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: [{name}] must be a table")
    known = set(AdaptiveConcurrency._fields)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        field_name = _snake(str(key))
        if field_name not in known:
            raise ConfigError(
                f"{where}: unknown key {name}.{key}", hint="known: " + ", ".join(sorted(known))
            )
        if field_name == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {name}.enabled must be true or false")
        elif field_name == "decrease_factor":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
                raise ConfigError(
                    f"{where}: {name}.{key} must be strictly between 0 and 1; got {value!r}"
                )
        elif isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10**6:
            raise ConfigError(f"{where}: {name}.{key} must be a positive integer; got {value!r}")
        values[field_name] = value
    out = AdaptiveConcurrency(**values)
    if not out.min <= out.initial <= out.max:
        raise ConfigError(
            f"{where}: {name} needs min <= initial <= max",
            hint=f"got {out.min}, {out.initial}, {out.max}",
        )
    return out


class Settings(NamedTuple):
    bash: BashSettings = BashSettings()
    jobs: JobsSettings = JobsSettings()
    events: EventsSettings = EventsSettings()
    overflow: OverflowSettings = OverflowSettings()
    timers: TimersSettings = TimersSettings()
    threads: ThreadsSettings = ThreadsSettings()


_SECTIONS = Settings._fields


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def settings_from_config(config: Mapping[str, Any], *, where: str = "config.toml") -> Settings:
    """Settings from a parsed config; unknown keys in these sections are errors."""
    out = Settings()
    for section_name in _SECTIONS:
        raw = config.get(section_name)
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: [{section_name}] must be a table")
        current = getattr(out, section_name)
        known = set(current._fields)
        changes: dict[str, Any] = {}
        for key, value in raw.items():
            name = _snake(str(key))
            if name not in known:
                raise ConfigError(
                    f"{where}: unknown key {section_name}.{key}",
                    hint="known: " + ", ".join(sorted(known)),
                )
            expected = type(getattr(current, name))
            if expected is AdaptiveConcurrency:
                value = adaptive_from(value, where)
            elif expected is int:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(
                        f"{where}: {section_name}.{key} must be a non-negative integer",
                        hint=f"got {value!r}",
                    )
                if value > 10**9:
                    raise ConfigError(f"{where}: {section_name}.{key} is too large: {value}")
            elif not isinstance(value, str):
                raise ConfigError(f"{where}: {section_name}.{key} must be a string; got {value!r}")
            changes[name] = value
        out = out._replace(**{section_name: current._replace(**changes)})
    if out.bash.guard not in GUARD_MODES:
        raise ConfigError(
            f"{where}: bash.guard must be one of {', '.join(GUARD_MODES)}; got {out.bash.guard!r}"
        )
    return out


def load_settings(project_root: Path) -> tuple[Settings, tuple[str, ...], str | None]:
    """The settings from the user's and the project's config.toml (config.load_config, the
    one reader): (settings, its warnings: unknown keys, named and ignored; the problem of a
    wrong value, or None). A wrong value gives the defaults: a typo must not break a
    session, and the R-B5 escape is editing this very file. Commands that can refuse call
    `settings_from_config(load_config(...).raw)` instead."""
    from specialists.catalog.config import config_layers, merge_layers

    try:
        layers = config_layers(project_root)
        config = merge_layers(layers)
    except ConfigError as exc:  # the reader names the file
        return Settings(), (), f"{exc.one_line()}; using the default settings"
    try:
        return settings_from_config(config.raw), config.warnings, None
    except ConfigError as exc:
        problem = exc.one_line()
    for path, data in layers:  # name the file that holds the wrong value
        try:
            settings_from_config(merge_layers([(path, data)]).raw, where=str(path))
        except ConfigError as named:
            problem = named.one_line()
            break
    return Settings(), config.warnings, f"{problem}; using the default settings"
