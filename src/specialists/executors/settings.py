"""Which executor a job uses and how it is set up (pure; config.toml, definitions, the CLI).

Chosen, first match wins: the run's `--executor`, the specialist's
`execution.executor`, config.toml's `[executor] kind`, else `local`. The Ray settings come
from `[executor]` (every key and its default: docs/executors.md) with the specialist's
mapping over them key by key.

A job's settings are resolved once, when it is planned, and kept in job.json (`executor`),
so a job always runs where it was planned to.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import AgentUnavailable, ConfigError, UserError
from specialists.base.reader import Fields, Invalid

EXECUTORS = ("local", "ray")
WORKSPACES = ("bundle", "shared")
CONNECTIONS = ("shared", "direct")
RAY_EXTRA_HINT = "pip install 'specialists[ray]'"
RESOURCE_NAME_MAX = 128
DEFAULTS: dict[str, Any] = {
    "kind": "ray",
    "address": "auto",
    "namespace": "specialists",
    "resources": {"CPU": 1.0},
    "workspace": "bundle",
    "connect_timeout_s": 15.0,
    "schedule_timeout_s": 120.0,
    "lease_s": 60.0,
    "node_root": "",
    "connection": "shared",
    "bridge_idle_s": 120.0,
}


def check_kind(value: object, where: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in EXECUTORS:
        raise Invalid.wrong(where, "one of " + ", ".join(EXECUTORS), repr(value))
    return value.strip().lower()


def parse_table(data: object, where: str) -> dict[str, Any]:
    """`[executor]` or a definition's `execution.executor` mapping -> checked settings
    (only the keys given). Raises Invalid naming the field."""
    warnings: list[str] = []
    fields = Fields(data, where, warnings, what="a table")
    out: dict[str, Any] = {}
    if fields.has("kind") or fields.has("type"):
        key = "kind" if fields.has("kind") else "type"
        out["kind"] = check_kind(fields.raw(key), fields.field(key))
    for key in ("address", "namespace", "node_root"):
        text = fields.text(key, form="line", max_chars=1024)
        if text is not None:
            out[key] = text.strip()
    if out.get("namespace") == "":
        raise Invalid.wrong(fields.field("namespace"), "a namespace name", "''")
    for key, choices in (("workspace", WORKSPACES), ("connection", CONNECTIONS)):
        choice = fields.choice(key, choices)
        if choice is not None:
            out[key] = choice
    for key in ("connect_timeout_s", "schedule_timeout_s", "lease_s", "bridge_idle_s"):
        number = fields.number(key, low=0.1, what="a number of seconds >= 0.1")
        if number is not None:
            out[key] = float(number)
    if fields.has("forward_env"):
        out["forward_env"] = fields.text_list("forward_env", max_chars=256)
    resources = fields.section("resources")
    if resources is not None:
        out["resources"] = {}
        for name in resources.data:
            amount = resources.number(name, low=0, what="an amount >= 0")
            if len(name) > RESOURCE_NAME_MAX or not name.strip():
                raise Invalid.wrong(resources.field(name), "a resource name", repr(name[:40]))
            if amount:
                out["resources"][name] = float(amount)
    fields.finish_strict()  # a typo here would run the job somewhere unintended
    return out


def resolve(
    run_choice: str | None,
    definition: Mapping[str, Any] | None,
    config_table: object,
) -> dict[str, Any] | None:
    """The job's executor settings, or None for local (see the module docstring)."""
    try:
        table = parse_table(config_table, "[executor]") if config_table is not None else {}
    except Invalid as exc:
        raise ConfigError(f"config.toml: {exc}") from None
    try:
        own = parse_table(dict(definition), "execution.executor") if definition else {}
        kind = check_kind(run_choice, "--executor") if run_choice else None
    except Invalid as exc:
        raise UserError(str(exc)) from None
    kind = kind or own.get("kind") or table.get("kind") or "local"
    if kind == "local":
        return None
    require_ray()
    from specialists.executors.travel import DEFAULT_FORWARD_ENV  # a local job never needs it

    return {**DEFAULTS, "forward_env": list(DEFAULT_FORWARD_ENV), **table, **own, "kind": kind}


def ray_installed() -> bool:
    """Whether `ray` can be imported, without importing it (it takes most of a second)."""
    if "ray" in sys.modules:
        return sys.modules["ray"] is not None
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        return False


def require_ray() -> None:
    if not ray_installed():
        raise AgentUnavailable(
            "the Ray executor needs the ray extra, which is not installed",
            hint=RAY_EXTRA_HINT,
        )


def planned(planning: Any) -> dict[str, Any]:
    """A job's executor at plan time (supervise.hooks.HOOKS.planning)."""
    request, spec = planning.request, planning.spec
    return {
        "executor": resolve(request.executor, spec.executor, planning.config.get("executor")) or {}
    }
