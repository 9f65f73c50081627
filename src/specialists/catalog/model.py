"""The resolved specialist definition every other room consumes.

Loaders (YAML/JSON specialist files, Markdown agent files) produce these; nothing else in
the package reads definition files directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from specialists.base.tuples import NamedTuple

Scope = Literal["project", "user", "builtin"]


def shown_path(path: Path) -> str:
    """A path as it may be printed: quoted when its name holds control characters."""
    text = str(path)
    return text if text.isprintable() else repr(text)


class ScriptSpec(NamedTuple):
    path: str  # command line or script path, run with the job's cwd
    phase: Literal["pre", "post"] = "pre"
    inject_output: bool = False
    required: bool = False  # a pre-script that fails ends the job before its agent starts


class MissingSkill(NamedTuple):
    """A skill path that does not exist: a warning, never fatal (seed 000 section 4.1)."""

    field: str  # where it was written, e.g. "skills.paths[1]"
    written: str  # as written in the file
    path: Path  # where it was looked for
    reason: str = "not found"

    def one_line(self) -> str:
        return f"{self.field}: {self.written} {self.reason} (looked at {shown_path(self.path)})"


class Specialist(NamedTuple):
    name: str  # the runtime name: `{package}.{local name}` when the file names a package
    description: str = ""
    version: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    package: str | None = None  # seed 004: the runtime name is `{package}.{name}`
    # other names that select it (seed 004 `aliases`); the canonical name wins over an alias
    aliases: tuple[str, ...] = ()
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
    runner_options: Mapping[str, Any] = {}  # read-only (a Mapping): one shared empty one
    # execution.executor as written (a kind, or a table); checked when a job is planned
    executor: Mapping[str, Any] = {}
    max_turns: int | None = None
    max_tokens: int | None = None
    requires_worktree: bool = False  # always run in a sandbox (git worktree)
    auto_commit: bool = True  # commit the sandbox's work when the job ends (R-S3)
    commit_on_waiting: bool = False  # also at each answer it waits after (checkpoint_on_waiting)
    bare: bool = False  # none of our own additions to the system prompt (format, tool guide)
    system_prompt_mode: Literal["append", "replace"] = "append"  # to the agent's own prompt
    # execution.attention / execution.watchdog as written; checked when a job is planned
    attention: Any = None
    watchdog: Any = None
    # the strict tool allowlist (catalog/tools.py canonical names, e.g. read, find); None means
    # "whatever the permission tier allows", () no agent tool at all. The tier is always set
    # and is the floor: a runner gives the tools both the tier and this list allow.
    tools: tuple[str, ...] | None = None
    system_prompt: str = ""
    task_template: str = "$prompt"
    skill_inherit: str | None = None
    variables: Mapping[str, str] = {}
    skill_paths: tuple[Path, ...] = ()  # resolved, in order, missing ones included
    # the skill paths that did not exist at load time; each is also one line of `warnings`
    # (for people), kept here as data so the supervisor can record a notice event for each
    missing_skills: tuple[MissingSkill, ...] = ()
    scripts: tuple[ScriptSpec, ...] = ()
    beads_integration: Literal["auto", "always", "never"] = "auto"
    source: Path | None = None
    scope: Scope = "builtin"
    warnings: tuple[str, ...] = ()

    @property
    def pre_scripts(self) -> tuple[ScriptSpec, ...]:
        return tuple(s for s in self.scripts if s.phase == "pre")

    @property
    def post_scripts(self) -> tuple[ScriptSpec, ...]:
        return tuple(s for s in self.scripts if s.phase == "post")


class LoadProblem(NamedTuple):
    """A definition file that could not be loaded: one line for the user."""

    path: Path
    field: str | None
    problem: str
    scope: Scope | None = None  # where the file was found (None: a single file was loaded)

    def one_line(self) -> str:
        where = shown_path(self.path)
        return (
            f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
        )


def specialist_to_dict(spec: Specialist) -> dict[str, Any]:
    """A JSON-ready view of a resolved definition (paths as text, tuples as lists)."""
    out = spec._asdict()
    out["skill_paths"] = [str(p) for p in spec.skill_paths]
    out["missing_skills"] = [
        {"field": m.field, "written": m.written, "path": str(m.path), "reason": m.reason}
        for m in spec.missing_skills
    ]
    out["source"] = str(spec.source) if spec.source else None
    out["tags"] = list(spec.tags)
    out["aliases"] = list(spec.aliases)
    out["tools"] = None if spec.tools is None else list(spec.tools)
    out["warnings"] = list(spec.warnings)
    out["runner_options"] = dict(spec.runner_options)  # plain data: checked when loaded
    out["executor"] = dict(spec.executor)
    out["variables"] = dict(spec.variables)
    out["scripts"] = [s._asdict() for s in spec.scripts]
    return out
