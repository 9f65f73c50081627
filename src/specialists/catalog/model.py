"""The resolved specialist definition every other room consumes.

Loaders (YAML/JSON specialist files, Markdown agent files) produce these; nothing else in
the package reads definition files directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Scope = Literal["project", "user", "builtin"]


@dataclass(frozen=True)
class ScriptSpec:
    path: str  # command line or script path, run with the job's cwd
    phase: Literal["pre", "post"] = "pre"
    inject_output: bool = False


@dataclass(frozen=True)
class Specialist:
    name: str
    description: str = ""
    version: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    # execution
    mode: str = "auto"
    model: str | None = None
    fallback_model: str | None = None
    timeout_ms: int | None = None
    stall_timeout_ms: int | None = None
    stall_kill: bool = False  # kill a stalled agent instead of only flagging it
    response_format: str | None = None
    permission: str = "MEDIUM"  # READ_ONLY | BASH_ONLY | LOW | MEDIUM | HIGH
    thinking_level: str | None = None
    interactive: bool = False  # keep-alive: accept follow-ups after a run
    idle_timeout_ms: int | None = None  # keep-alive idle limit
    runner: str | None = None  # pi | claude | codex | command | native; None = config default
    runner_options: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int | None = None
    max_tokens: int | None = None
    # tool allowlist declared by an agent file (names as written, e.g. Read, grep); () means
    # "whatever the permission tier allows". The tier is always set and is the floor to enforce.
    tools: tuple[str, ...] = ()
    # prompt
    system_prompt: str = ""
    task_template: str = "$prompt"
    skill_inherit: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    # skills
    skill_paths: tuple[Path, ...] = ()  # resolved; missing ones listed in `warnings`
    scripts: tuple[ScriptSpec, ...] = ()
    # beads
    beads_integration: Literal["auto", "always", "never"] = "auto"
    # provenance
    source: Path | None = None
    scope: Scope = "builtin"
    warnings: tuple[str, ...] = ()

    @property
    def pre_scripts(self) -> tuple[ScriptSpec, ...]:
        return tuple(s for s in self.scripts if s.phase == "pre")

    @property
    def post_scripts(self) -> tuple[ScriptSpec, ...]:
        return tuple(s for s in self.scripts if s.phase == "post")


@dataclass(frozen=True)
class LoadProblem:
    """A definition file that could not be loaded: one line for the user."""

    path: Path
    field: str | None
    problem: str

    def one_line(self) -> str:
        where = f"{self.path}: {self.field}" if self.field else str(self.path)
        return f"{where}: {self.problem}"
