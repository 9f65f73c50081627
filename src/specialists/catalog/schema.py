"""Validate `*.specialist.yaml` / `*.specialist.json` definitions into `Specialist` records.

The first fatal problem stops a file and becomes one `LoadProblem` (path, field, what was
expected). Unknown keys and missing skill paths are warnings kept on the record. YAML is
imported only when a YAML file is read, never at CLI import time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from specialists.catalog.model import Scope, ScriptSpec, Specialist
from specialists.vocab import SPEC_SUFFIXES, THINKING_LEVELS

PERMISSIONS = ("READ_ONLY", "BASH_ONLY", "LOW", "MEDIUM", "HIGH")
RUNNERS = ("pi", "claude", "codex", "command", "native")
RUNNER_ALIASES = {"external-cli": "command", "external_cli": "command"}
MODES = ("auto", "tool", "skill")
RESPONSE_FORMATS = ("text", "json", "markdown")
BEADS_MODES = ("auto", "always", "never")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# Keys other tools write into the same files (xtrm specialists, Agent Forge, Mercury):
# accepted so shared files load without noise, but they change nothing here.
_IGNORED_TOP = frozenset(
    {
        "capabilities",
        "communication",
        "validation",
        "stall_detection",
        "output_file",
        "beads_write_notes",
        "heartbeat",
    }
)
_IGNORED_METADATA = frozenset({"author", "created", "updated"})
_IGNORED_EXECUTION = frozenset(
    {
        "max_retries",
        "output_type",
        "requires_worktree",
        "auto_commit",
        "extensions",
        "preferred_profile",
        "approval_mode",
    }
)
_IGNORED_PROMPT = frozenset({"output_schema", "examples", "normalize_template"})


class Invalid(Exception):
    """A fatal problem in one definition: the dotted field and what was expected."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


def describe(value: object) -> str:
    """How a value reads to a person writing YAML ('a list', 'true/false', ...)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"text ({shown!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def join_field(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


class Section:
    """One mapping of a definition; reads typed values and remembers which keys it used."""

    def __init__(
        self,
        data: object,
        prefix: str,
        warnings: list[str],
        *,
        ignored: frozenset[str] = frozenset(),
    ) -> None:
        if not isinstance(data, Mapping):
            raise Invalid(prefix or None, f"expected a mapping, got {describe(data)}")
        for key in data:
            if not isinstance(key, str):
                raise Invalid(prefix or None, f"keys must be text, got {describe(key)}")
        self.data: Mapping[str, Any] = data
        self.prefix = prefix
        self.warnings = warnings
        self.ignored = ignored
        self.used: set[str] = set()

    def field(self, key: str) -> str:
        return join_field(self.prefix, key)

    def raw(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def opt_str(self, key: str) -> str | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise Invalid(self.field(key), f"expected text, got {describe(value)}")
        return value

    def text(self, key: str, default: str = "") -> str:
        value = self.opt_str(key)
        return default if value is None else value

    def scalar_text(self, key: str) -> str:
        """Text, also accepting a bare number (YAML reads `version: 1.0` as a float)."""
        value = self.raw(key)
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise Invalid(self.field(key), f"expected text, got {describe(value)}")

    def choice(
        self, key: str, choices: tuple[str, ...], default: str, *, upper: bool = False
    ) -> str:
        value = self.raw(key)
        if value is None:
            return default
        normal = value.upper() if upper and isinstance(value, str) else value
        if not isinstance(normal, str) or (normal if upper else normal.lower()) not in choices:
            raise Invalid(
                self.field(key), f"expected one of {', '.join(choices)}; got {describe(value)}"
            )
        return normal if upper else normal.lower()

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise Invalid(self.field(key), f"expected true or false, got {describe(value)}")
        return value

    def positive_int(self, key: str, *, zero_disables: bool = False) -> int | None:
        value = self.raw(key)
        return positive_int(value, self.field(key), zero_disables=zero_disables)

    def str_list(self, key: str) -> list[str]:
        value = self.raw(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            raise Invalid(self.field(key), f"expected a list of text, got {describe(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise Invalid(f"{self.field(key)}[{i}]", f"expected text, got {describe(item)}")
        return list(value)

    def section(self, key: str, *, ignored: frozenset[str] = frozenset()) -> Section | None:
        value = self.raw(key)
        if value is None:
            return None
        return Section(value, self.field(key), self.warnings, ignored=ignored)

    def finish(self) -> None:
        """Warn once per key nobody read: usually a typo that would otherwise do nothing."""
        for key in self.data:
            if key not in self.used and key not in self.ignored:
                self.warnings.append(f"{self.field(key)}: unknown key, ignored")


def positive_int(value: object, field: str, *, zero_disables: bool = False) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(field, f"expected a positive whole number, got {describe(value)}")
    if value == 0 and zero_disables:
        return None
    if value <= 0:
        raise Invalid(field, f"expected a positive whole number, got {value}")
    return value


def parse_runner(value: object, field: str) -> tuple[str | None, dict[str, Any]]:
    """`runner: pi` or `runner: {type: command, command: ..., args: [...]}`."""
    if value is None:
        return None, {}
    if isinstance(value, str):
        return check_runner_name(value, field), {}
    if not isinstance(value, Mapping):
        raise Invalid(field, f"expected a runner name or a mapping, got {describe(value)}")
    options = plain_data(value, field)
    assert isinstance(options, dict), "bug: plain_data changed a mapping's type"
    kind = options.pop("type", None)
    if not isinstance(kind, str):
        raise Invalid(
            f"{field}.type", f"expected one of {', '.join(RUNNERS)}; got {describe(kind)}"
        )
    runner = check_runner_name(kind, f"{field}.type")
    if runner == "command":
        command = options.get("command")
        if not isinstance(command, str) or not command.strip():
            raise Invalid(f"{field}.command", f"expected a command to run, got {describe(command)}")
    args = options.get("args", [])  # extra arguments for the agent's command line
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise Invalid(f"{field}.args", f"expected a list of text, got {describe(args)}")
    return runner, options


def plain_data(value: object, field: str, *, max_nodes: int = 2000, max_depth: int = 16) -> Any:
    """A copy made only of text, numbers, booleans, null, lists and text-keyed mappings.

    Bounded, so YAML aliases cannot smuggle in a cycle or an exponential structure."""
    budget = [max_nodes]

    def copy(item: object, where: str, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > max_depth:
            raise Invalid(field, "too large or too deeply nested")
        if item is None or isinstance(item, str | int | float | bool):
            return item
        if isinstance(item, list):
            return [copy(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item)]
        if isinstance(item, Mapping):
            out = {}
            for key, v in item.items():
                if not isinstance(key, str):
                    raise Invalid(where, f"keys must be text, got {describe(key)}")
                out[key] = copy(v, f"{where}.{key}", depth + 1)
            return out
        raise Invalid(where, f"expected text, a number, a list or a mapping, got {describe(item)}")

    return copy(value, field, 0)


def check_runner_name(value: str, field: str) -> str:
    name = RUNNER_ALIASES.get(value.strip().lower(), value.strip().lower())
    if name not in RUNNERS:
        raise Invalid(field, f"expected one of {', '.join(RUNNERS)}; got {describe(value)}")
    return name


def check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(field, f"expected a name like 'code-reviewer', got {describe(value)}")
    if not NAME_PATTERN.match(value):
        raise Invalid(
            field,
            f"expected letters, digits, '.', '_' or '-' (at most 64, no spaces); got {value!r}",
        )
    return value


def resolve_skill_path(raw: str, base: Path) -> Path:
    """~/ is home, absolute stays, anything else is relative to `base`."""
    expanded = Path(os.path.expanduser(raw))
    return expanded if expanded.is_absolute() else (base / expanded)


def resolve_skill_paths(
    raws: Sequence[str], base: Path, field: str, warnings: list[str]
) -> tuple[Path, ...]:
    resolved = []
    for i, raw in enumerate(raws):
        path = resolve_skill_path(raw, base)
        if not path.exists():
            warnings.append(f"{field}[{i}]: {raw} not found (looked at {path})")
        resolved.append(path)
    return tuple(resolved)


def _parse_scripts(value: object, field: str) -> tuple[ScriptSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Invalid(field, f"expected a list of scripts, got {describe(value)}")
    scripts = []
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        entry = Section(item, where, [])
        run = entry.opt_str("run") or entry.opt_str("path")
        if not run or not run.strip():
            raise Invalid(f"{where}.run", "expected a command or script path")
        phase = entry.choice("phase", ("pre", "post"), "pre")
        inject = entry.flag("inject_output")
        unknown = sorted(set(entry.data) - entry.used)
        if unknown:
            raise Invalid(
                f"{where}.{unknown[0]}", "unknown key (expected run, phase, inject_output)"
            )
        scripts.append(
            ScriptSpec(path=run, phase="post" if phase == "post" else "pre", inject_output=inject)
        )
    return tuple(scripts)


def _parse_variables(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid(field, f"expected a mapping of name: value, got {describe(value)}")
    out = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise Invalid(field, f"variable names must be identifiers, got {describe(key)}")
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Invalid(f"{field}.{key}", f"expected text, got {describe(item)}")
        out[key] = str(item)
    return out


def specialist_from_data(
    data: object,
    *,
    source: Path,
    scope: Scope,
    project_root: Path | None = None,
    default_permission: str = "MEDIUM",
) -> Specialist:
    """Validate a parsed YAML/JSON document. Raises `Invalid` on the first fatal problem."""
    warnings: list[str] = []
    if data is None:
        raise Invalid(None, "file is empty; expected a mapping with metadata, execution, prompt")
    top = Section(data, "", warnings)
    if "specialist" in top.data:
        # The seed format wraps everything in `specialist:`; bare sections are accepted too.
        wrapper = top
        top = Section(top.raw("specialist"), "specialist", warnings, ignored=_IGNORED_TOP)
        wrapper.finish()
    else:
        top.ignored = _IGNORED_TOP

    meta = top.section("metadata", ignored=_IGNORED_METADATA)
    if meta is None:
        raise Invalid(top.field("metadata"), "required section missing (needs at least name)")
    name = check_name(meta.raw("name"), meta.field("name"))
    description = meta.text("description")
    version = meta.scalar_text("version")
    category = meta.text("category")
    tags = tuple(meta.str_list("tags"))
    meta.finish()

    execution = top.section("execution", ignored=_IGNORED_EXECUTION) or Section(
        {}, "execution", warnings
    )
    mode = execution.choice("mode", MODES, "auto")
    model = execution.opt_str("model")
    fallback_model = execution.opt_str("fallback_model")
    timeout_ms = execution.positive_int("timeout_ms", zero_disables=True)
    stall_timeout_ms = execution.positive_int("stall_timeout_ms", zero_disables=True)
    idle_timeout_ms = execution.positive_int("idle_timeout_ms", zero_disables=True)
    stall_kill = execution.flag("stall_kill")
    response_format = (
        execution.choice("response_format", RESPONSE_FORMATS, "text")
        if execution.has("response_format")
        else None
    )
    permission = execution.choice(
        "permission_required", PERMISSIONS, default_permission, upper=True
    )
    thinking_level = (
        execution.choice("thinking_level", THINKING_LEVELS, "off")
        if execution.has("thinking_level")
        else None
    )
    interactive_key = "keep_alive" if execution.has("keep_alive") else "interactive"
    interactive = execution.flag(interactive_key)
    if execution.has("keep_alive") and execution.has("interactive"):
        raise Invalid(execution.field("keep_alive"), "give interactive or keep_alive, not both")
    execution.raw("interactive")
    runner, runner_options = parse_runner(execution.raw("runner"), execution.field("runner"))
    max_turns = execution.positive_int("max_turns")
    max_tokens = execution.positive_int("max_tokens")
    execution.finish()

    prompt = top.section("prompt", ignored=_IGNORED_PROMPT) or Section({}, "prompt", warnings)
    system_prompt = prompt.text("system")
    task_template = prompt.text("task_template", "$prompt")
    if not task_template.strip():
        raise Invalid(prompt.field("task_template"), "is empty; use '$prompt' to pass the task")
    skill_inherit = prompt.opt_str("skill_inherit")
    variables = _parse_variables(prompt.raw("variables"), prompt.field("variables"))
    prompt.finish()

    skills = top.section("skills") or Section({}, "skills", warnings)
    base = project_root if project_root is not None else source.parent
    skill_paths = resolve_skill_paths(
        skills.str_list("paths"), base, skills.field("paths"), warnings
    )
    scripts = _parse_scripts(skills.raw("scripts"), skills.field("scripts"))
    skills.finish()

    beads = top.choice("beads_integration", BEADS_MODES, "auto")
    top.finish()

    stem = definition_stem(source)
    if stem and stem != name:
        warnings.append(f"{meta.field('name')}: {name!r} differs from the file name {stem!r}")

    return Specialist(
        name=name,
        description=description,
        version=version,
        category=category,
        tags=tags,
        mode=mode,
        model=model,
        fallback_model=fallback_model,
        timeout_ms=timeout_ms,
        stall_timeout_ms=stall_timeout_ms,
        stall_kill=stall_kill,
        response_format=response_format,
        permission=permission,
        thinking_level=thinking_level,
        interactive=interactive,
        idle_timeout_ms=idle_timeout_ms,
        runner=runner,
        runner_options=runner_options,
        max_turns=max_turns,
        max_tokens=max_tokens,
        system_prompt=system_prompt,
        task_template=task_template,
        skill_inherit=skill_inherit,
        variables=variables,
        skill_paths=skill_paths,
        scripts=scripts,
        beads_integration="always"
        if beads == "always"
        else "never"
        if beads == "never"
        else "auto",
        source=source,
        scope=scope,
        warnings=tuple(warnings),
    )


def definition_stem(path: Path) -> str:
    """`reviewer.specialist.yaml` -> `reviewer`; other names -> ''."""
    name = path.name
    for suffix in SPEC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


def read_text(path: Path) -> str:
    """File text as UTF-8 (a leading BOM is dropped). Raises `Invalid` with the reason."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise Invalid(None, f"cannot read file: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Invalid(None, f"not UTF-8 text (bad byte at offset {exc.start})") from exc


def parse_yaml(text: str, *, what: str = "YAML", first_line: int = 1) -> Any:
    """yaml.safe_load with any failure turned into one `Invalid` line (with the file's line
    number; `first_line` is where `text` starts in the file)."""
    import yaml  # only catalog reads YAML; keep it off the CLI's import path

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # CSafeLoader/SafeLoader only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark else ""
        reason = exc.problem or exc.context or "syntax error"
        raise Invalid(None, f"invalid {what}{where}: {reason}") from exc
    except yaml.YAMLError as exc:
        raise Invalid(None, f"invalid {what}: {' '.join(str(exc).split())}") from exc
    except (ValueError, OverflowError) as exc:  # e.g. a timestamp like 2024-13-45
        raise Invalid(None, f"invalid {what}: {exc}") from exc
    except RecursionError as exc:
        raise Invalid(None, f"invalid {what}: nested too deeply") from exc


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(
            None, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise Invalid(None, "invalid JSON: nested too deeply") from exc


def load_definition_file(
    path: Path,
    scope: Scope,
    project_root: Path | None = None,
    *,
    default_permission: str = "MEDIUM",
) -> Specialist:
    """Read and validate one `*.specialist.{yaml,yml,json}` file. Raises `Invalid`."""
    text = read_text(path)
    data = parse_json(text) if path.name.endswith(".json") else parse_yaml(text)
    return specialist_from_data(
        data,
        source=path,
        scope=scope,
        project_root=project_root,
        default_permission=default_permission,
    )


def specialist_to_dict(spec: Specialist) -> dict[str, Any]:
    """A JSON-ready view of a resolved definition (paths as text, tuples as lists)."""
    out = asdict(spec)
    out["skill_paths"] = [str(p) for p in spec.skill_paths]
    out["source"] = str(spec.source) if spec.source else None
    out["tags"] = list(spec.tags)
    out["warnings"] = list(spec.warnings)
    out["runner_options"] = _jsonable(dict(spec.runner_options))
    out["variables"] = dict(spec.variables)
    out["scripts"] = [asdict(s) for s in spec.scripts]
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
