"""User, team and local configuration (config.toml), read with the standard library only.

The files that exist are merged in this order, each over the ones before it:

    $XDG_CONFIG_HOME/specialists/config.toml     user: yours, in every project
    <project>/specialists/config.toml            team: committed beside the definitions
    <project>/.specialists/config.toml           local (the old place; still read)
    <project>/specialists/config.local.toml      local: yours, here (`init` gitignores it)

as Claude Code has settings.json beside settings.local.json.

Top-level keys are merged key by key; `[providers.NAME]` tables are merged field by field, so
a project can override one price of a provider the user defined. Bad values raise ConfigError
naming the file, the key, what was expected and what was found. Unknown keys, here and in the
tables other rooms read (ROOM_TABLES), are kept in `Config.warnings` (reported, not fatal,
with a close known name when there is one) and left out of `raw`, so an older specialists can
read a newer file and every front reads the same file the same way. A file that is not a
small regular UTF-8 file (a FIFO, a device, binary data) is a ConfigError too, never a hang
or a traceback. The format is
documented in docs/config.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from specialists.base.errors import ConfigError
from specialists.base.reader import Fields, Invalid, check_text, check_tree, value_error_text
from specialists.base.reader.textfile import read_text_file
from specialists.base.reader.values import unknown_key_problem
from specialists.base.tuples import NamedTuple
from specialists.base.vocab import RUNNER_ALIASES, RUNNER_NAMES
from specialists.store.paths import project_config_files, user_config_dir

ApiKind = Literal["openai-chat", "openai-responses", "anthropic"]
API_KINDS: tuple[ApiKind, ...] = ("openai-chat", "openai-responses", "anthropic")
CONFIG_FILE_NAME = "config.toml"

_TOP_LEVEL_KEYS = ("default_runner", "default_model", "enabled_models", "providers")
MAX_ENABLED_MODELS = 256

# The tables other rooms read from `raw`, and the keys each knows. This file is the one
# reader: it names unknown keys once (a warning, "unknown key, ignored") and hands the rooms
# only the keys they know, so no front refuses a file another front accepts and none drops
# the whole file for one typo (seed 001 3.2). The rooms check the values. A Schema maps a
# key to ANY (a value its room checks, whatever its shape), OPEN (a table whose keys are
# the room's to name: runner options, resource names) or a nested Schema.
ANY = "any"
OPEN = "open"
Schema = Mapping[str, "str | Schema"]


def _snake_and_camel(*names: str) -> dict[str, str | Schema]:
    """Seed 001's camelCase spellings are accepted beside snake_case (native/tool_settings.py)."""
    out: dict[str, str | Schema] = {}
    for name in names:
        head, *rest = name.split("_")
        out[name] = out[head + "".join(part.title() for part in rest)] = ANY
    return out


_ADAPTIVE = _snake_and_camel(
    "enabled", "min", "initial", "max", "successes_to_increase", "decrease_factor"
)
ROOM_TABLES: dict[str, str | Schema] = {
    # supervise/plan.py: [runners.<name>] are the runner's options
    "runners": {name: OPEN for name in (*RUNNER_NAMES, *RUNNER_ALIASES)},
    # native/tool_settings.py
    "bash": _snake_and_camel("guard", "default_timeout_sec", "sleep_limit_sec"),
    "jobs": _snake_and_camel(
        "max", "tail_lines", "watch_debounce_ms", "watch_batch_lines", "watch_events_per_min"
    ),
    "events": _snake_and_camel("max_chars", "seen_cap"),
    "overflow": _snake_and_camel("max_chars", "head_chars", "tail_chars"),
    "timers": _snake_and_camel("max"),
    "threads": {
        **_snake_and_camel("max_concurrent", "max_launches"),
        "adaptive_concurrency": _ADAPTIVE,
        "adaptiveConcurrency": _ADAPTIVE,
    },
    # executors/settings.py
    "executor": {
        **dict.fromkeys(
            ("kind", "type", "address", "namespace", "node_root", "workspace", "connection"), ANY
        ),
        **dict.fromkeys(
            ("connect_timeout_s", "schedule_timeout_s", "lease_s", "bridge_idle_s"), ANY
        ),
        "forward_env": ANY,
        "resources": OPEN,
    },
    # sandbox/handoff.py
    "worktree": dict.fromkeys(("setup", "setup_timeout_s", "link"), ANY),
    # attention/settings.py (either may also be a plain value: off, true, false)
    "attention": dict.fromkeys(("after", "tool_after", "toolAfter", "failures", "enabled"), ANY),
    "watchdog": dict.fromkeys(("enabled", "reviewer", "max_reviews", "maxReviews"), ANY),
    # workflows/consent.py: the gates a model's workflow may run
    "workflows": {"gates": ANY},
    # features/spend/settings.py: ceilings and the approval threshold
    "spend": dict.fromkeys(
        (
            *("max_tokens", "max_cost", "session_max_tokens", "session_max_cost"),
            *("approve_over_tokens", "approve_over_cost", "approve_timeout_s"),
        ),
        ANY,
    ),
    # runners/external_job.py: each provider's name is the user's to choose
    "external_job_providers": OPEN,
}
_PRICE_KEYS = (
    "input_price_per_mtok",
    "output_price_per_mtok",
    "cache_read_price_per_mtok",
    "cache_write_price_per_mtok",
)
_PRICE = "a number >= 0 (US dollars per million tokens)"


class ModelConfig(NamedTuple):
    """Per-model overrides inside a provider (OpenRouter serves many models at many prices)."""

    context_window: int | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    cache_read_price_per_mtok: float | None = None
    cache_write_price_per_mtok: float | None = None


class ProviderConfig(NamedTuple):
    name: str
    base_url: str | None = None
    api: ApiKind | None = None  # None: the built-in provider's kind, else "openai-chat"
    api_key_env: str | None = None
    context_window: int | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    cache_read_price_per_mtok: float | None = None
    cache_write_price_per_mtok: float | None = None
    models: Mapping[str, ModelConfig] = {}  # read-only (a Mapping): one shared empty one
    source: Path | None = None


class Config(NamedTuple):
    default_runner: str | None = None
    default_model: str | None = None
    # The scoped model list (pi's `enabledModels`, seed 001 R-H13): when not empty,
    # spawn_thread uses only these; the project's list replaces the user's.
    enabled_models: tuple[str, ...] = ()
    providers: Mapping[str, ProviderConfig] = {}  # read-only, as all of these
    sources: tuple[Path, ...] = ()  # the files that were read, user first
    warnings: tuple[str, ...] = ()  # unknown keys, one line each
    raw: Mapping[str, Any] = {}  # merged tables, for other rooms


def user_config_path() -> Path:
    return Path(user_config_dir()) / CONFIG_FILE_NAME


def config_paths(project_root: Path) -> list[Path]:
    """Every config file that is read, lowest precedence first (see the module docstring)."""
    return [user_config_path(), *map(Path, project_config_files(project_root))]


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
    enabled_models: tuple[str, ...] = ()
    providers: dict[str, dict[str, Any]] = {}
    provider_sources: dict[str, Path] = {}
    warnings: list[str] = []
    raw: dict[str, Any] = {}
    for path, data in layers:
        layer: list[str] = []
        try:
            top = Fields(data, "", layer, what="a table")
            for key, value in data.items():
                if key not in ROOM_TABLES:
                    continue  # ours (below), or unknown: top.finish() names it
                top.raw(key)  # read by its room, not here: not an unknown key
                known = known_part(value, ROOM_TABLES[key], key, layer)
                if isinstance(known, dict) and isinstance(raw.get(key), dict):
                    raw[key] = {**raw[key], **known}
                else:
                    raw[key] = known
            runner = _runner_name(top, "default_runner")
            model = _model_name(top, "default_model")
            default_runner = runner or default_runner
            default_model = model or default_model
            if top.has("enabled_models"):
                enabled_models = _model_list(top, "enabled_models")
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
        enabled_models=enabled_models,
        providers={
            name: ProviderConfig(name=name, source=provider_sources[name], **fields)
            for name, fields in providers.items()
        },
        sources=tuple(path for path, _ in layers),
        warnings=tuple(warnings),
        raw=raw,
    )


def known_part(value: Any, schema: str | Schema, where: str, warnings: list[str]) -> Any:
    """`value` with the keys `schema` does not know left out, each named in `warnings`
    once. A value of another shape than the schema's is its room's to refuse: kept."""
    if not isinstance(schema, Mapping) or not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in schema:
            out[key] = known_part(item, schema[key], f"{where}.{key}", warnings)
        else:
            warnings.append(f"{where}.{key}: {unknown_key_problem(str(key), schema)}")
    return out


_reported: set[str] = set()


def unreported(warnings: tuple[str, ...] | list[str]) -> list[str]:
    """The warnings this process has not shown yet (each is shown once, seed 001 3.2): a
    long-lived front (the MCP server, the pi sidecar) reads the config on every call."""
    fresh = [w for w in warnings if w not in _reported]
    _reported.update(fresh)
    return fresh


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        text = read_text_file(path)
    except FileNotFoundError:
        return None
    except Invalid as exc:
        raise ConfigError(f"{path}: {exc.problem}") from None
    import tomllib  # only when a config file exists

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


def _model_list(fields: Fields, key: str) -> tuple[str, ...]:
    from specialists.catalog.schema import check_model_name

    where = fields.field(key)
    value = fields.raw(key)
    if not isinstance(value, list):
        raise Invalid.wrong(where, "a list of provider/model names", fields.describe(value))
    if len(value) > MAX_ENABLED_MODELS:
        raise Invalid.wrong(where, f"at most {MAX_ENABLED_MODELS} models", str(len(value)))
    names = [check_model_name(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return tuple(dict.fromkeys(names))


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
