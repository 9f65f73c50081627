"""Resolve "provider/model" to a provider definition, credentials and a lazy client.

Built-in providers are found by their usual environment variables; config.toml
`[providers.NAME]` adds new ones or overrides fields of a built-in. Nothing here imports an
SDK: `make_client` defers that to the first model call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from specialists.base.errors import AgentUnavailable, ConfigError
from specialists.base.vocab import split_model
from specialists.catalog.config import ApiKind, Config, ProviderConfig
from specialists.native.model import ModelClient, ModelInfo, Prices

Api = ApiKind | Literal["replay"]


@dataclass(frozen=True)
class ProviderDef:
    name: str
    api: Api
    base_url: str | None = None  # None: the SDK's default
    api_key_env: str | None = None  # None: no key needed
    base_url_env: str | None = None  # an env var that overrides base_url


BUILTINS: Mapping[str, ProviderDef] = {
    p.name: p
    for p in (
        ProviderDef("openai", "openai-chat", None, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ProviderDef(
            "openai-responses", "openai-responses", None, "OPENAI_API_KEY", "OPENAI_BASE_URL"
        ),
        ProviderDef("anthropic", "anthropic", None, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        ProviderDef(
            "openrouter", "openai-chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"
        ),
        ProviderDef("groq", "openai-chat", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ProviderDef("deepseek", "openai-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        ProviderDef("together", "openai-chat", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        ProviderDef("ollama", "openai-chat", "http://localhost:11434/v1", None, "OLLAMA_BASE_URL"),
        ProviderDef("vllm", "openai-chat", "http://localhost:8000/v1", None, "VLLM_BASE_URL"),
        ProviderDef(
            "llamacpp", "openai-chat", "http://localhost:8080/v1", None, "LLAMACPP_BASE_URL"
        ),
        ProviderDef("replay", "replay"),
    )
}


@dataclass(frozen=True)
class ResolvedModel:
    info: ModelInfo
    api: Api
    base_url: str | None
    api_key: str | None
    api_key_env: str | None


def require_provider(name: str) -> tuple[str, str]:
    """`vocab.split_model` for the native runtime, which cannot guess a provider."""
    provider, model = split_model(name.strip())
    if provider is None:
        raise ConfigError(
            f"model {name!r} must be written provider/model",
            hint="e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/qwen3",
        )
    return provider, model


def resolve_model(
    name: str, config: Config, env: Mapping[str, str], cwd: Path | None = None
) -> ResolvedModel:
    provider, model_id = require_provider(name)
    builtin = BUILTINS.get(provider)
    custom = config.providers.get(provider)
    if builtin is None and custom is None:
        known = ", ".join(sorted(BUILTINS))
        raise ConfigError(
            f"unknown provider {provider!r} in model {name!r}",
            hint=f"built-in providers: {known}; or add [providers.{provider}] to config.toml",
        )
    merged = _merge(provider, builtin, custom)
    if merged.api == "replay":
        return _resolve_replay(name, model_id, cwd, _model_facts(custom, model_id)[1])
    base_url = merged.base_url
    if merged.base_url_env and env.get(merged.base_url_env) and not (custom and custom.base_url):
        base_url = env[merged.base_url_env].rstrip("/")
    api_key: str | None = None
    if merged.api_key_env:
        api_key = env.get(merged.api_key_env) or None
        if api_key is None:
            raise AgentUnavailable(
                f"{merged.api_key_env} is not set: export it or configure a provider in config.toml"
            )
    context_window, prices = _model_facts(custom, model_id)
    info = ModelInfo(f"{provider}/{model_id}", provider, model_id, context_window, prices)
    return ResolvedModel(info, merged.api, base_url, api_key, merged.api_key_env)


def _merge(name: str, builtin: ProviderDef | None, custom: ProviderConfig | None) -> ProviderDef:
    if custom is None:
        assert builtin is not None
        return builtin
    if builtin is None:
        if not custom.base_url:
            where = f"{custom.source}: " if custom.source else ""
            raise ConfigError(
                f"{where}providers.{name}.base_url: expected an http(s) URL for a custom provider"
            )
        return ProviderDef(name, custom.api or "openai-chat", custom.base_url, custom.api_key_env)
    return ProviderDef(
        name,
        custom.api or builtin.api,
        custom.base_url or builtin.base_url,
        custom.api_key_env or builtin.api_key_env,
        builtin.base_url_env,
    )


def _model_facts(custom: ProviderConfig | None, model_id: str) -> tuple[int | None, Prices | None]:
    """The context window and the prices config.toml gives (None: no price set there)."""
    if custom is None:
        return None, None
    per_model = custom.models.get(model_id)

    def pick(field_name: str) -> float | None:
        value = getattr(per_model, field_name, None) if per_model else None
        return value if value is not None else getattr(custom, field_name)

    window = per_model.context_window if per_model and per_model.context_window else None
    if pick("input_price_per_mtok") is None and pick("output_price_per_mtok") is None:
        return window or custom.context_window, None
    prices = Prices(
        input=pick("input_price_per_mtok") or 0.0,
        output=pick("output_price_per_mtok") or 0.0,
        cache_read=pick("cache_read_price_per_mtok"),
        cache_write=pick("cache_write_price_per_mtok"),
    )
    return window or custom.context_window, prices


# Recordings shipped with the package, by name (`replay/review`): an offline try-out anywhere.
RECORDINGS = Path(__file__).resolve().parent / "recordings"


def _resolve_replay(
    name: str, model_id: str, cwd: Path | None, prices: Prices | None
) -> ResolvedModel:
    """A recording (a path, or a shipped name); `[providers.replay]` prices, if any, give its
    turns a cost (demos)."""
    path = Path(model_id).expanduser()
    if not path.is_absolute() and cwd is not None:
        path = cwd / path
    shipped = RECORDINGS / f"{model_id}.jsonl"
    if not path.is_file() and model_id.isidentifier() and shipped.is_file():
        path = shipped
    if not path.is_file():
        raise ConfigError(
            f"replay recording {path} not found (model {name!r})",
            hint="write replay/<path to a .jsonl or .yaml recording>, or replay/review",
        )
    info = ModelInfo(name, "replay", str(path), prices=prices or Prices())
    return ResolvedModel(info, "replay", None, None, None)


def make_client(resolved: ResolvedModel, *, timeout_s: float = 600.0) -> Callable[[], ModelClient]:
    """A factory that imports the provider's SDK and builds its client on first call."""

    def build() -> ModelClient:
        if resolved.api == "openai-chat":
            from specialists.native.providers.openai_chat import OpenAIChatClient

            return OpenAIChatClient(resolved, timeout_s=timeout_s)
        if resolved.api == "openai-responses":
            from specialists.native.providers.openai_responses import OpenAIResponsesClient

            return OpenAIResponsesClient(resolved, timeout_s=timeout_s)
        if resolved.api == "anthropic":
            from specialists.native.providers.anthropic import AnthropicClient

            return AnthropicClient(resolved, timeout_s=timeout_s)
        from specialists.native.providers.replay import ReplayModel

        return ReplayModel(Path(resolved.info.model_id))

    return build
