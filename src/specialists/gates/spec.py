"""What a gate is: the command, its timeout, and the environment its result depends on.

The memo key covers PATH and the variables in `ENV_KEYS` (the ones build and test tools
commonly read), plus any a gate names in `env`. Everything else in the environment is taken
not to change a gate's verdict; a gate that depends on another variable must name it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specialists.errors import UserError

DEFAULT_TIMEOUT_S = 600.0
MAX_TIMEOUT_S = 24 * 3600.0
MAX_COMMAND_CHARS = 8 * 1024
MAX_ENV_NAMES = 64

# Variables that decide which tools run and how (interpreters, package paths, locale, CI
# switches). PATH first: it picks every executable the command names.
ENV_KEYS: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_ENV",
    "GOPATH",
    "GOFLAGS",
    "CARGO_HOME",
    "RUSTFLAGS",
    "CI",
)


# The values a gate may be given as data (a workflow's arguments, item, index and child key):
# environment variables of these names only, never text spliced into the command, and never
# a variable that changes how a program runs (PATH, LD_PRELOAD, BASH_ENV, ...).
VAR_NAME = re.compile(r"SPECIALISTS_(ARG_[A-Z0-9_]{1,64}|ITEM|INDEX|KEY)")
MAX_VARS = 64
MAX_VAR_CHARS = 64 * 1024  # one environment string must stay under the kernel's 128 KiB


class GateError(UserError):
    """A gate or acceptance option that cannot be used as given."""


@dataclass(frozen=True)
class GateSpec:
    """One verification command. `memo=False` always runs it (the result is still stored)."""

    command: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    env: tuple[str, ...] = ()  # more variable names the verdict depends on
    memo: bool = True
    vars: tuple[tuple[str, str], ...] = ()  # values the command reads from its environment

    def variables(self) -> dict[str, str]:
        return dict(self.vars)

    def env_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*ENV_KEYS, *self.env)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "timeout_s": self.timeout_s,
            "env": list(self.env),
            "memo": self.memo,
            **({"vars": self.variables()} if self.vars else {}),
        }


def parse_gate(value: object, *, where: str = "gate") -> GateSpec:
    """A gate from its option: a command string, or {command, timeout_s?, env?, memo?}
    (`timeout`, in seconds as a child's own, is the same field as `timeout_s`)."""
    if isinstance(value, str):
        return GateSpec(_command(value, where))
    if not isinstance(value, Mapping):
        raise GateError(f"{where} must be a command string or an object with a command")
    unknown = sorted(set(value) - {"command", "timeout_s", "timeout", "env", "memo", "vars"})
    if unknown:
        raise GateError(
            f"{where} has unknown field {unknown[0]!r}",
            hint="use command, timeout_s, env, memo, vars",
        )
    if "timeout" in value and "timeout_s" in value:
        raise GateError(f"{where} has both timeout and timeout_s", hint="give one of them")
    timeout = value.get("timeout_s", value.get("timeout", DEFAULT_TIMEOUT_S))
    if type(timeout) not in (int, float) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise GateError(f"{where}.timeout_s must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    names = value.get("env", [])
    if not isinstance(names, list) or len(names) > MAX_ENV_NAMES:
        raise GateError(f"{where}.env must be a list of at most {MAX_ENV_NAMES} variable names")
    for name in names:
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise GateError(f"{where}.env holds {name!r}, which is not a variable name")
    memo = value.get("memo", True)
    if type(memo) is not bool:
        raise GateError(f"{where}.memo must be true or false")
    variables = _vars(value.get("vars", {}), where)
    command = _command(value.get("command"), where)
    return GateSpec(command, float(timeout), tuple(names), memo, variables)


def _vars(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or len(value) > MAX_VARS:
        raise GateError(f"{where}.vars must map at most {MAX_VARS} variable names to text")
    for name, text in value.items():
        if not isinstance(name, str) or not VAR_NAME.fullmatch(name):
            raise GateError(
                f"{where}.vars names {str(name)[:80]!r}, which a gate may not be given",
                hint="SPECIALISTS_ARG_<NAME>, SPECIALISTS_ITEM, SPECIALISTS_INDEX, SPECIALISTS_KEY",
            )
        if not isinstance(text, str) or "\0" in text or len(text) > MAX_VAR_CHARS:
            raise GateError(
                f"{where}.vars.{name} must be text of at most {MAX_VAR_CHARS} characters "
                "without a NUL byte"
            )
    return tuple(sorted(value.items()))


def from_dict(data: Mapping[str, Any]) -> GateSpec:
    """The inverse of `GateSpec.to_dict` (a job record's `gate`), validated again."""
    return parse_gate(dict(data))


def _command(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GateError(f"{where} needs a non-empty command", hint='e.g. gate: "pytest -q"')
    if len(value) > MAX_COMMAND_CHARS:
        raise GateError(f"{where} command is longer than {MAX_COMMAND_CHARS} characters")
    if "\0" in value:
        raise GateError(f"{where} command holds a NUL byte")
    return value
