"""Can pi find a credential for the job's provider? Known before a job exists.

Without one, pi (1.6.0, as 0.73.1 before it) starts, takes the prompt and rejects it ("No API
key found for anthropic"): the job would exist and end `error` a second later. `specialists run`
refuses it instead, exit 3 with one line, and creates nothing (project.check_agent).

pi looks in this order (pi-ai env-api-keys.js, pi-coding-agent auth-storage.js and
model-registry.js): a key in its `auth.json`, the provider's environment variable, a
provider defined in its `models.json` (its own apiKey, headers or command). This answers
"no" only where all three are certain to come up empty: the provider is one whose variable
pi reads (the table), that variable is unset, `auth.json` has no entry for the provider,
and `models.json` does not define it. Any other provider (Vertex with ADC, Bedrock with an
AWS profile, Copilot, one an extension adds) and any file that cannot be read is left to
pi: a wrong refusal would be worse than a failed job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from specialists.base.errors import AgentUnavailable, StoreError
from specialists.runners.pi_extensions import pi_agent_dir
from specialists.store.files import read_bytes

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# The environment variables pi reads per built-in provider (pi-ai's env-api-keys.js; 1.6.0
# added ANTHROPIC_AUTH_TOKEN, which 0.73.1 did not read: accepting it refuses less).
ENV_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "google": ("GEMINI_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
}


def check_pi_credential(provider: str | None, env: Mapping[str, str]) -> None:
    """Raise AgentUnavailable when pi certainly has no credential for `provider`."""
    names = ENV_KEYS.get(provider or "")
    if provider is None or names is None or any(env.get(name) for name in names):
        return
    agent_dir = pi_agent_dir(env)
    auth = _entries(agent_dir / "auth.json", None)
    models = _entries(agent_dir / "models.json", "providers")
    if auth is None or models is None or provider in auth or provider in models:
        return
    raise AgentUnavailable(
        f"pi has no credential for {provider}: set {names[-1]}, or log in with `pi` (/login)",
        hint=f"or choose another model (execution.model); pi reads {agent_dir / 'auth.json'}",
    )


def _entries(path: Path, key: str | None) -> Mapping[str, object] | None:
    """The top-level names of a JSON object (or of its `key` object); {} when the file does
    not exist; None when it cannot be read or understood (then nothing is certain)."""
    try:
        data = json.loads(read_bytes(path, MAX_CONFIG_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, StoreError, ValueError, RecursionError):
        return None
    if key is not None and isinstance(data, dict):
        data = data.get(key, {})
    return data if isinstance(data, dict) else None
