"""Markdown agent files (`.claude/agents/*.md`, `.pi/agents/*.md`) -> `Specialist`.

A file is YAML frontmatter between `---` lines, then the body, which is the system prompt.
`tools:` (a comma-separated string or a list; Claude Code or pi names) is a strict allowlist
(catalog/tools.py): an unknown name fails the file, the list decides the permission tier, and
its canonical names are kept in `Specialist.tools` for every runner to narrow to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specialists.base.reader import Fields, Invalid, check_text, check_tree, choice_value, describe
from specialists.base.vocab import PERMISSION_TIERS, THINKING_LEVELS
from specialists.catalog.files import parse_yaml, read_definition
from specialists.catalog.model import Scope, Specialist
from specialists.catalog.schema import (
    MAX_LINE,
    check_aliases,
    check_model_name,
    check_name,
    duration_ms,
    parse_runner,
    positive_int,
    runtime_name,
)
from specialists.catalog.skills import resolve_skill_paths
from specialists.catalog.tools import WRITE_TOOLS, allowlist, builtin_names

# Keys Claude Code and pi agents use that have no meaning here: accepted silently.
_IGNORED_KEYS = frozenset(
    {
        "color",
        "systemPromptMode",
        "inheritProjectContext",
        "inheritSkills",
        "skills",
        "memory",
        "defaultProgress",
        "defaultReads",
        "output",
        "subagentOnlyExtensions",
        "extensions",
        "maxSubagentDepth",
        "acceptance",
        "acceptanceRole",
        "async",
        "background",
        "mcpServers",
        "hooks",
        "isolation",
        "effort",
        "permissionMode",
    }
)

_FRONTMATTER_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s?(.*)$")


def split_frontmatter(text: str) -> tuple[str, str, int]:
    """(frontmatter, body, line where the body starts). Raises `Invalid` if there is none."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise Invalid(None, "missing frontmatter: expected a first line '---', then name, ...")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    raise Invalid(None, "frontmatter is not closed: expected a line '---' after it")


def parse_frontmatter(block: str, warnings: list[str]) -> dict[str, Any]:
    """YAML first; hand-written agent files often break YAML (an unquoted ': ' inside a
    description), so fall back to plain `key: value` lines and say so in a warning."""
    try:
        data = parse_yaml(block, what="frontmatter YAML", first_line=2, bounded=False)
    except Invalid as exc:
        loose = _loose_key_values(block)
        if loose is None:
            raise
        warnings.append(f"{exc.problem}; read as plain 'key: value' lines")
        return loose
    check_tree(data, "the frontmatter")  # valid YAML too large is refused, not read loosely
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise Invalid(None, f"frontmatter: expected key: value lines, got {describe(data)}")
    return data


def _loose_key_values(block: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FRONTMATTER_LINE.match(line)
        if match is None:
            return None
        value = match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[match.group(1)] = _loose_scalar(value)
    return out


def _loose_scalar(value: str) -> object:
    if value.isascii() and value.isdigit() and len(value) <= 18:  # "²" is a digit too
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def name_list(value: object, field: str, what: str = "tool names") -> tuple[str, ...]:
    """Names (tools, models, paths) written comma-separated or as a list; each one line."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [t.strip() for t in value.split(",")]
    elif isinstance(value, list) and all(isinstance(t, str) for t in value):
        items = [t.strip() for t in value]
    else:
        raise Invalid.wrong(field, f"{what}, comma-separated or a list", describe(value))
    for i, item in enumerate(items):
        check_text(item, f"{field}[{i}]", form="line", max_chars=MAX_LINE)
    return tuple(t for t in items if t)


def permission_for_tools(tools: tuple[str, ...] | None, disallowed: tuple[str, ...] = ()) -> str:
    """The smallest tier that covers a declared tool list.

    No list at all: the agent gets every tool (Claude Code's rule), so MEDIUM.
    Edit/write tools: MEDIUM. Shell alone: BASH_ONLY. Reading, searching and a shell used
    to inspect: READ_ONLY (the tier's own shell is taken away again by the allowlist).
    """
    if tools is None and not disallowed:
        return "MEDIUM"
    names = builtin_names(allowlist(tools, disallowed) or ())
    if names & WRITE_TOOLS:
        return "MEDIUM"
    if names == {"bash"}:
        return "BASH_ONLY"
    return "READ_ONLY"


def specialist_from_markdown(
    text: str, *, source: Path, scope: Scope, project_root: Path | None = None
) -> Specialist:
    warnings: list[str] = []
    block, body, _ = split_frontmatter(text)
    front = Fields(parse_frontmatter(block, warnings), "", warnings, ignored=_IGNORED_KEYS)

    name_value = front.raw("name")
    local = check_name(source.stem if name_value is None else name_value, "name")
    name, package = runtime_name(local, front.raw("package"), "package")
    aliases = check_aliases(front.raw("aliases"), "aliases", name, warnings)
    description = front.text("description") or ""

    tools_raw = front.raw("tools")
    written = None if tools_raw is None else name_list(tools_raw, "tools")
    disallowed = name_list(front.raw("disallowedTools"), "disallowedTools")
    allowed = allowlist(written, disallowed)  # Invalid for a tool no agent has
    explicit_key = "permission" if front.has("permission") else "permission_required"
    front.raw("permission")
    explicit = front.choice(explicit_key, PERMISSION_TIERS, upper=True)
    permission = explicit or permission_for_tools(written, disallowed)

    model_value = front.raw("model")
    if isinstance(model_value, str) and model_value.strip().lower() in ("", "inherit", "default"):
        model_value = None
    model = None if model_value is None else check_model_name(model_value, "model")
    fallbacks = name_list(front.raw("fallbackModels"), "fallbackModels", "model names")
    fallback = check_model_name(fallbacks[0], "fallbackModels[0]") if fallbacks else None

    thinking = front.raw("thinking")
    thinking_level = (
        None if thinking is None else choice_value(thinking, "thinking", THINKING_LEVELS)
    )

    max_turns = positive_int(front.raw("maxTurns"), "maxTurns")
    budget = front.raw("turnBudget")
    if max_turns is None and isinstance(budget, dict):
        max_turns = positive_int(budget.get("maxTurns"), "turnBudget.maxTurns")
    timeout_ms = duration_ms(front, "timeoutMs") or duration_ms(front, "maxRuntimeMs")
    runner, runner_options = parse_runner(front.raw("runner"), "runner")

    skill_paths, missing_skills = resolve_skill_paths(
        name_list(front.raw("skillPath"), "skillPath", "paths"), source.parent, "skillPath"
    )
    warnings.extend(m.one_line() for m in missing_skills)
    front.finish()

    system_prompt = body.strip()
    check_text(system_prompt, "body")
    if not system_prompt:
        warnings.append("body is empty: the agent gets no system prompt")

    return Specialist(
        name=name,
        package=package,
        aliases=aliases,
        description=description.strip(),
        model=model,
        fallback_model=fallback,
        timeout_ms=timeout_ms,
        permission=permission,
        thinking_level=thinking_level,
        runner=runner,
        runner_options=runner_options,
        max_turns=max_turns,
        system_prompt=system_prompt,
        skill_paths=skill_paths,
        missing_skills=missing_skills,
        tools=allowed,
        source=source,
        scope=scope,
        warnings=tuple(warnings),
    )


def load_markdown_file(path: Path, scope: Scope, project_root: Path | None = None) -> Specialist:
    """Read and validate one Markdown agent file. Raises `Invalid`."""
    return specialist_from_markdown(
        read_definition(path), source=path, scope=scope, project_root=project_root
    )
