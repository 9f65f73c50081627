"""User, team and local configuration (config.toml), read with the standard library only.

The files that exist are merged in this order, each over the ones before it:

    $XDG_CONFIG_HOME/specialists/config.toml     user: yours, in every project
    <project>/specialists/config.toml            team: committed beside the definitions
    <project>/.specialists/config.toml           local (the old place; still read)
    <project>/specialists/config.local.toml      local: yours, here (`init` gitignores it)

as Claude Code has settings.json beside settings.local.json.

Top-level keys are merged key by key; `[providers.NAME]` tables are merged field by field, so
a project can override one price of a provider the user defined. Bad values raise ConfigError
naming the file, the key, what was expected and what was found. Unknown keys are kept in
`Config.warnings` (reported, not fatal, with a close known name when there is one) so an older
specialists can read a newer file. A file that is not a small regular UTF-8 file (a FIFO, a
device, binary data) is a ConfigError too, never a hang or a traceback. The format is
documented in docs/config.md.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from specialists.base.errors import ConfigError
from specialists.base.reader import Fields, Invalid, check_text, check_tree, value_error_text
from specialists.base.reader.textfile import read_text_file
from specialists.base.vocab import RUNNER_ALIASES, RUNNER_NAMES
from specialists.store.paths import project_config_files, state_dir, user_config_dir

ApiKind = Literal["openai-chat", "openai-responses", "anthropic"]
API_KINDS: tuple[ApiKind, ...] = ("openai-chat", "openai-responses", "anthropic")
CONFIG_FILE_NAME = "config.toml"

_TOP_LEVEL_KEYS = ("default_runner", "default_model", "providers")
# Tables read by other rooms from `raw`: [runners.pi] (supervise/plan.py), the wave-2
# tool settings [bash], [jobs], [events], [overflow], [timers] (toolset/settings.py) and
# [executor] (executors/settings.py), [worktree] (sandbox/handoff.py), [workflows]
# (workflows/consent.py: the gates a model's workflow may run).
_ROOM_TABLES = (
    *("runners", "bash", "jobs", "events", "overflow", "timers", "executor", "worktree"),
    *("attention", "watchdog", "workflows", "spend"),
)
_PRICE_KEYS = (
    "input_price_per_mtok",
    "output_price_per_mtok",
    "cache_read_price_per_mtok",
    "cache_write_price_per_mtok",
)
_PRICE = "a number >= 0 (US dollars per million tokens)"


@dataclass(frozen=True)
class ModelConfig:
    """Per-model overrides inside a provider (OpenRouter serves many models at many prices)."""

    context_window: int | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    cache_read_price_per_mtok: float | None = None
    cache_write_price_per_mtok: float | None = None


@dataclass(frozen=True)
class ProviderConfig:
    name: str
    base_url: str | None = None
    api: ApiKind | None = None  # None: the built-in provider's kind, else "openai-chat"
    api_key_env: str | None = None
    context_window: int | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    cache_read_price_per_mtok: float | None = None
    cache_write_price_per_mtok: float | None = None
    models: Mapping[str, ModelConfig] = field(default_factory=dict)
    source: Path | None = None


@dataclass(frozen=True)
class Config:
    default_runner: str | None = None
    default_model: str | None = None
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()  # the files that were read, user first
    warnings: tuple[str, ...] = ()  # unknown keys, one line each
    raw: Mapping[str, Any] = field(default_factory=dict)  # merged tables, for other rooms


def user_config_path() -> Path:
    return user_config_dir() / CONFIG_FILE_NAME


def project_config_path(project_root: Path) -> Path:
    """The local config's old place, in the gitignored state directory (still read)."""
    return state_dir(project_root) / CONFIG_FILE_NAME


def config_paths(project_root: Path) -> list[Path]:
    """Every config file that is read, lowest precedence first (see the module docstring)."""
    return [user_config_path(), *project_config_files(project_root)]


def load_config(project_root: Path) -> Config:
    """Read and merge the user, team and local config files (all optional)."""
    return merge_layers(config_layers(project_root))


def config_layers(project_root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The config files that exist, parsed, lowest precedence first (not merged)."""
    layers: list[tuple[Path, dict[str, Any]]] = []
    for path in config_paths(project_root):
        data = _read_toml(path)
        if data is not None:
            layers.append((path, data))
    return layers


def merge_layers(layers: list[tuple[Path, dict[str, Any]]]) -> Config:
    """Validate each layer, then merge them in order (later wins). Pure: no file access."""
    default_runner: str | None = None
    default_model: str | None = None
    providers: dict[str, dict[str, Any]] = {}
    provider_sources: dict[str, Path] = {}
    warnings: list[str] = []
    raw: dict[str, Any] = {}
    for path, data in layers:
        layer: list[str] = []
        try:
            top = Fields(data, "", layer, what="a table")
            for key, value in data.items():
                if key in _ROOM_TABLES:
                    top.raw(key)  # read by its room, not here: not an unknown key
                if key not in _TOP_LEVEL_KEYS:
                    if isinstance(value, dict) and isinstance(raw.get(key), dict):
                        raw[key] = {**raw[key], **value}
                    else:
                        raw[key] = value
            runner = _runner_name(top, "default_runner")
            model = _model_name(top, "default_model")
            default_runner = runner or default_runner
            default_model = model or default_model
            table = top.section("providers")
            for name in table.data if table is not None else ():
                assert table is not None, "bug: iterated the providers of no table"
                where = table.field(name)
                check_text(name, where, form="line", max_chars=128)
                fields = table.section(name)
                if fields is None:
                    raise Invalid.wrong(where, "a table", "nothing (null)")
                checked = _check_provider(fields)
                merged = providers.setdefault(name, {})
                models = {**merged.get("models", {}), **checked.pop("models", {})}
                merged.update(checked)
                if models:
                    merged["models"] = models
                provider_sources[name] = path
            top.finish()
        except Invalid as exc:
            raise ConfigError(f"{path}: {exc}") from None
        warnings.extend(f"{path}: {w}" for w in layer)
    return Config(
        default_runner=default_runner,
        default_model=default_model,
        providers={
            name: ProviderConfig(name=name, source=provider_sources[name], **fields)
            for name, fields in providers.items()
        },
        sources=tuple(path for path, _ in layers),
        warnings=tuple(warnings),
        raw=raw,
    )


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        text = read_text_file(path)
    except FileNotFoundError:
        return None
    except Invalid as exc:
        raise ConfigError(f"{path}: {exc.problem}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ConfigError(f"{path}: not valid TOML: {value_error_text(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    try:
        check_tree(data, "the TOML document")
    except Invalid as exc:
        raise ConfigError(f"{path}: {exc.problem}") from None
    return data


def _runner_name(top: Fields, key: str) -> str | None:
    value = top.text(key, form="line", max_chars=64, non_empty=True)
    if value is None:
        return None
    name = RUNNER_ALIASES.get(value.strip().lower(), value.strip().lower())
    if name not in RUNNER_NAMES:
        raise Invalid.wrong(top.field(key), "one of " + ", ".join(RUNNER_NAMES), repr(value))
    return name


def _model_name(fields: Fields, key: str) -> str | None:
    from specialists.catalog.schema import check_model_name

    value = fields.raw(key)
    return None if value is None else check_model_name(value, fields.field(key))


def _check_provider(fields: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    url = fields.text("base_url", form="line", max_chars=2048, non_empty=True)
    if url is not None:
        if not url.strip().startswith(("http://", "https://")):
            raise Invalid.wrong(fields.field("base_url"), "an http:// or https:// URL", repr(url))
        out["base_url"] = url.strip().rstrip("/")
    api = fields.choice("api", API_KINDS)
    if api is not None:
        out["api"] = cast(ApiKind, api)
    key_env = fields.text("api_key_env", form="line", max_chars=256, non_empty=True)
    if key_env is not None:
        out["api_key_env"] = key_env.strip()
    out.update(_model_facts(fields))
    models = fields.section("models")
    if models is not None:
        out["models"] = {}
        for model_id in models.data:
            where = f'{fields.field("models")}."{model_id}"'
            check_text(model_id, where, form="line", max_chars=256)
            entry = Fields(models.raw(model_id), where, fields.warnings, what="a table")
            out["models"][model_id] = ModelConfig(**_model_facts(entry))
            entry.finish()
    fields.finish()
    return out


def _model_facts(fields: Fields) -> dict[str, Any]:
    """context_window and the prices: what a provider and each of its models may set."""
    out: dict[str, Any] = {}
    window = fields.integer("context_window", low=1, what="a positive integer")
    if window is not None:
        out["context_window"] = window
    for key in _PRICE_KEYS:
        price = fields.number(key, low=0, what=_PRICE)
        if price is not None:
            out[key] = price
    return out
