"""User and project configuration (config.toml), read with the standard library only.

Two files are merged, project over user:

    $XDG_CONFIG_HOME/specialists/config.toml     (user)
    <project>/.specialists/config.toml           (project)

Top-level keys are merged key by key; `[providers.NAME]` tables are merged field by field, so
a project can override one price of a provider the user defined. Bad values raise ConfigError
naming the file, the key and what was expected. Unknown keys are kept in `Config.warnings`
(reported, not fatal) so an older specialists can read a newer file. The format is documented
in docs/config.md.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from specialists.errors import ConfigError
from specialists.jobs.paths import state_dir, user_config_dir

ApiKind = Literal["openai-chat", "openai-responses", "anthropic"]
API_KINDS: tuple[ApiKind, ...] = ("openai-chat", "openai-responses", "anthropic")
CONFIG_FILE_NAME = "config.toml"

_TOP_LEVEL_KEYS = ("default_runner", "default_model", "providers")
_ROOM_TABLES = ("runners",)  # read by other rooms from `raw` ([runners.pi]: supervise/plan.py)
_PRICE_KEYS = (
    "input_price_per_mtok",
    "output_price_per_mtok",
    "cache_read_price_per_mtok",
    "cache_write_price_per_mtok",
)
_PROVIDER_KEYS = ("base_url", "api", "api_key_env", "context_window", *_PRICE_KEYS, "models")
_MODEL_KEYS = ("context_window", *_PRICE_KEYS)


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
    return state_dir(project_root) / CONFIG_FILE_NAME


def load_config(project_root: Path) -> Config:
    """Read and merge the user and project config files (both optional)."""
    layers: list[tuple[Path, dict[str, Any]]] = []
    for path in (user_config_path(), project_config_path(project_root)):
        data = _read_toml(path)
        if data is not None:
            layers.append((path, data))
    return merge_layers(layers)


def merge_layers(layers: list[tuple[Path, dict[str, Any]]]) -> Config:
    """Validate each layer, then merge them in order (later wins). Pure: no file access."""
    default_runner: str | None = None
    default_model: str | None = None
    providers: dict[str, dict[str, Any]] = {}
    provider_sources: dict[str, Path] = {}
    warnings: list[str] = []
    raw: dict[str, Any] = {}
    for path, data in layers:
        for key, value in data.items():
            if key not in _TOP_LEVEL_KEYS:
                if key not in _ROOM_TABLES:
                    warnings.append(f"{path}: unknown key '{key}' ignored")
                if isinstance(value, dict) and isinstance(raw.get(key), dict):
                    raw[key] = {**raw[key], **value}
                else:
                    raw[key] = value
        if "default_runner" in data:
            default_runner = _str(data["default_runner"], path, "default_runner")
        if "default_model" in data:
            default_model = _str(data["default_model"], path, "default_model")
        table = data.get("providers", {})
        if not isinstance(table, dict):
            raise _bad(path, "providers", "a table of [providers.NAME] tables", table)
        for name, fields in table.items():
            where = f"providers.{name}"
            if not isinstance(fields, dict):
                raise _bad(path, where, "a table", fields)
            checked = _check_provider(fields, path, where, warnings)
            merged = providers.setdefault(name, {})
            models = {**merged.get("models", {}), **checked.pop("models", {})}
            merged.update(checked)
            if models:
                merged["models"] = models
            provider_sources[name] = path
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
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _check_provider(
    fields: dict[str, Any], path: Path, where: str, warnings: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        key_where = f"{where}.{key}"
        if key not in _PROVIDER_KEYS:
            warnings.append(f"{path}: unknown key '{key_where}' ignored")
        elif key == "base_url":
            url = _str(value, path, key_where)
            if not url.startswith(("http://", "https://")):
                raise _bad(path, key_where, "an http:// or https:// URL", value)
            out[key] = url.rstrip("/")
        elif key == "api":
            if value not in API_KINDS:
                raise _bad(path, key_where, "one of " + ", ".join(API_KINDS), value)
            out[key] = cast(ApiKind, value)
        elif key == "api_key_env":
            out[key] = _str(value, path, key_where)
        elif key == "context_window":
            out[key] = _positive_int(value, path, key_where)
        elif key in _PRICE_KEYS:
            out[key] = _price(value, path, key_where)
        else:  # models
            out[key] = _check_models(value, path, key_where, warnings)
    return out


def _check_models(
    value: Any, path: Path, where: str, warnings: list[str]
) -> dict[str, ModelConfig]:
    if not isinstance(value, dict):
        raise _bad(path, where, 'a table of model tables, e.g. [providers.x.models."id"]', value)
    out: dict[str, ModelConfig] = {}
    for model_id, fields in value.items():
        model_where = f'{where}."{model_id}"'
        if not isinstance(fields, dict):
            raise _bad(path, model_where, "a table", fields)
        checked: dict[str, Any] = {}
        for key, item in fields.items():
            if key not in _MODEL_KEYS:
                warnings.append(f"{path}: unknown key '{model_where}.{key}' ignored")
            elif key == "context_window":
                checked[key] = _positive_int(item, path, f"{model_where}.{key}")
            else:
                checked[key] = _price(item, path, f"{model_where}.{key}")
        out[str(model_id)] = ModelConfig(**checked)
    return out


def _str(value: Any, path: Path, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(path, key, "a non-empty string", value)
    return value.strip()


def _positive_int(value: Any, path: Path, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _bad(path, key, "a positive integer", value)
    return value


def _price(value: Any, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _bad(path, key, "a number >= 0 (US dollars per million tokens)", value)
    return float(value)


def _bad(path: Path, key: str, expected: str, value: Any) -> ConfigError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ConfigError(f"{path}: {key}: expected {expected}, got {shown}")
