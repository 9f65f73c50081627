"""What a Codex child keeps of the user's $CODEX_HOME/config.toml, as `-c` overrides.

The child runs with `--ignore-user-config` (runners/codex.py says why); this module reads the
user's config (bounded, never blocking on a FIFO), drops the orchestrator's parts and writes
the rest back as TOML values for `-c key=value`.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError
from specialists.runners.job_mcp import SERVER_NAME, STARTUP_TIMEOUT_S

# Parts of the user's config.toml that are the orchestrator's, not a child's.
ORCHESTRATOR_KEYS = frozenset({"mcp_servers", "hooks", "notify", "projects"})
CONFIG_MAX_BYTES = 4 << 20


def toml_string(text: str) -> str:
    """A TOML basic string for a `-c key=value` override."""
    # JSON escapes are valid TOML escapes; TOML additionally forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def isolation_args(
    user_config: Mapping[str, Any],
    options: Mapping[str, Any],
    ours: Mapping[str, Any] | None = None,
) -> list[str]:
    """No user config file, no hooks; the user's settings back as overrides, minus the
    orchestrator's; the job's own MCP servers, and `ours` (runners/job_mcp.py), which Codex
    must wait for before its first request (`required`) and which wins the name."""
    args = ["--ignore-user-config", "--disable", "hooks"]
    for key, value in user_config.items():
        if key in ORCHESTRATOR_KEYS or not _bare_key(key):
            continue
        if key == "profiles" and isinstance(value, Mapping):
            value = {name: _child_part(p) for name, p in value.items()}
        args += ["-c", f"{key}={toml_value(value)}"]
    servers = options.get("mcp_servers")
    if servers is not None:
        if not isinstance(servers, Mapping) or not all(
            isinstance(v, Mapping) and _bare_key(str(k)) for k, v in servers.items()
        ):
            raise ConfigError(
                "codex runner: mcp_servers must map each server name to its settings",
                hint='e.g. {docs: {command: docs-mcp, args: ["--stdio"]}}',
            )
        for name, server in servers.items():
            if ours is None or name != SERVER_NAME:
                args += ["-c", f"mcp_servers.{name}={toml_value(server)}"]
    if ours is not None:
        # `codex exec` 0.171.0 sends its first request about 1.5 s after starting its MCP
        # servers unless one is `required` (docs/mcp.md, Start-up time).
        server = {**ours, "required": True, "startup_timeout_sec": STARTUP_TIMEOUT_S}
        args += ["-c", f"mcp_servers.{SERVER_NAME}={toml_value(server)}"]
    return args


def _child_part(profile: Any) -> Any:
    if not isinstance(profile, Mapping):
        return profile
    return {k: v for k, v in profile.items() if k not in ORCHESTRATOR_KEYS}


def read_user_config(env: Mapping[str, str]) -> dict[str, Any]:
    """$CODEX_HOME/config.toml (default ~/.codex), parsed; {} when there is none."""
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".codex")
    path = Path(home) / "config.toml"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not hang the start
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path} is not a regular file", hint="codex reads it too")
        raw = os.read(fd, CONFIG_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > CONFIG_MAX_BYTES:
        raise ConfigError(f"{path} is larger than {CONFIG_MAX_BYTES >> 20} MiB")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", hint="codex reads it too") from exc


def toml_value(value: Any) -> str:
    """A TOML value (inline tables for tables) for a `-c key=value` override."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (
            f"{k if _bare_key(str(k)) else toml_string(str(k))} = {toml_value(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    isoformat = getattr(value, "isoformat", None)  # dates and times from tomllib
    if callable(isoformat):
        return str(isoformat())
    raise ConfigError(f"cannot pass {type(value).__name__} {value!r} to codex as TOML")


def _bare_key(key: str) -> bool:
    return bool(key) and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
