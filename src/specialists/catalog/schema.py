"""The schema of a `*.specialist.yaml` / `*.specialist.json` definition, on the typed reader.

`specialist_from_data` turns a parsed document into a `Specialist`. The first fatal
problem stops the file as one `Invalid` (field, what was expected, what was found); unknown
keys and missing skill paths are warnings kept on the record. Values that reach a command
line or a file name (model, runner command and args, skill paths, scripts) are refused
when they hold a NUL or control characters or are longer than any real one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.reader import (
    Describe,
    Fields,
    Invalid,
    check_text,
    describe,
    integer_value,
    plain_data,
    text_value,
)
from specialists.base.vocab import (
    DEFAULT_PERMISSION,
    PERMISSION_TIERS,
    RUNNER_ALIASES,
    RUNNER_NAMES,
    THINKING_LEVELS,
)
from specialists.catalog.files import definition_stem
from specialists.catalog.model import Scope, ScriptSpec, Specialist
from specialists.catalog.rules import mandatory_rules_block
from specialists.catalog.skills import resolve_skill_paths
from specialists.catalog.tools import allowlist

MODES = ("auto", "tool", "skill")
RESPONSE_FORMATS = ("text", "json", "markdown")
BEADS_MODES = ("auto", "always", "never")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MODEL_MAX_CHARS = 256
MAX_DURATION_MS = 366 * 24 * 3600 * 1000  # a year: longer waits overflow timer arithmetic
MAX_LINE = 4096  # a path, a command, a category: PATH_MAX on Linux

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
        "extensions",
        "preferred_profile",
        "approval_mode",
    }
)
_IGNORED_PROMPT = frozenset({"output_schema", "examples", "normalize_template"})


def check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid.wrong(field, "a name like 'code-reviewer'", describe(value))
    if not NAME_PATTERN.fullmatch(value):
        raise Invalid.wrong(
            field,
            "letters, digits, '.', '_' or '-' (at most 64, no spaces)",
            repr(value[:80]),
        )
    return value


PACKAGE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
MAX_ALIASES = 32


def runtime_name(name: str, package: object, field: str) -> tuple[str, str | None]:
    """(the runtime name, the package): seed 004's `{package}.{name}`, or `name` alone. A
    package is one word (no dot, no path character); the whole name obeys check_name, so it
    is as safe in a path or a command line as any other name."""
    if package is None:
        return name, None
    if not isinstance(package, str) or not PACKAGE_PATTERN.fullmatch(package):
        raise Invalid.wrong(
            field, "a package name: letters, digits, '_' or '-' (no '.', no '/')", describe(package)
        )
    full = f"{package}.{name}"
    if len(full) > 64:
        raise Invalid.wrong(field, "package and name together at most 64 characters", repr(full))
    return full, package


def check_aliases(value: object, field: str, own: str, warnings: list[str]) -> tuple[str, ...]:
    """Alternate names (seed 004 `aliases`): comma-separated or a list, `false` or "" for
    none; each one is a name. Its own name, or one listed twice, is dropped with a warning."""
    if value is None or value is False or value == "":
        return ()
    if isinstance(value, str):
        items = [a.strip() for a in value.split(",")]
    elif isinstance(value, list):
        items = value
    else:
        raise Invalid.wrong(field, "names, comma-separated or a list", describe(value))
    if len(items) > MAX_ALIASES:
        raise Invalid.wrong(field, f"at most {MAX_ALIASES} aliases", f"{len(items)}")
    out: list[str] = []
    for i, item in enumerate(items):
        alias = check_name(item, f"{field}[{i}]")
        if alias == own:
            warnings.append(f"{field}[{i}]: {alias!r} is the agent's own name; ignored")
        elif alias in out:
            warnings.append(f"{field}[{i}]: {alias!r} is listed twice; ignored")
        else:
            out.append(alias)
    return tuple(out)


def check_runner_name(value: object, field: str) -> str:
    if isinstance(value, str):
        name = RUNNER_ALIASES.get(value.strip().lower(), value.strip().lower())
        if name in RUNNER_NAMES:
            return name
    raise Invalid.wrong(field, "one of " + ", ".join(RUNNER_NAMES), describe(value))


def check_model_name(value: object, field: str, *, describe: Describe = describe) -> str:
    """A model name as an agent's command line takes it: one word, e.g. provider/model."""
    text = text_value(
        value, field, form="line", max_chars=MODEL_MAX_CHARS, non_empty=True, describe=describe
    ).strip()
    if len(text.split()) > 1:  # any Unicode space inside
        raise Invalid.wrong(field, "one word, e.g. anthropic/claude-sonnet-4-5", repr(text[:80]))
    return text


def model_name(fields: Fields, key: str) -> str | None:
    value = fields.raw(key)
    return None if value is None else check_model_name(value, fields.field(key))


def duration_ms(fields: Fields, key: str) -> int | None:
    """Milliseconds; 0 turns the limit off (as in the seed files)."""
    value = positive_int(fields.raw(key), fields.field(key), zero_disables=True)
    if value is not None and value > MAX_DURATION_MS:
        raise Invalid.wrong(fields.field(key), "at most a year (31,622,400,000 ms)", str(value))
    return value


def positive_int(
    value: object, field: str, *, zero_disables: bool = False, high: int = 2**31 - 1
) -> int | None:
    if value is None:
        return None
    number = integer_value(value, field, what="a positive whole number")
    if number == 0 and zero_disables:
        return None
    if number <= 0:
        raise Invalid.wrong(field, "a positive whole number", str(number))
    if number > high:
        raise Invalid.wrong(field, f"at most {high:,}", describe(value))
    return number


def parse_runner(value: object, field: str) -> tuple[str | None, dict[str, Any]]:
    """`runner: pi` or `runner: {type: command, command: ..., args: [...]}`."""
    if value is None:
        return None, {}
    if isinstance(value, str):
        return check_runner_name(value, field), {}
    if not isinstance(value, Mapping):
        raise Invalid.wrong(field, "a runner name or a mapping", describe(value))
    options = plain_data(value, field)
    assert isinstance(options, dict), "bug: plain_data changed a mapping's type"
    runner = check_runner_name(options.pop("type", None), f"{field}.type")
    if runner == "external-job":  # seed 004: a registered provider runs the job elsewhere
        provider = options.get("provider")
        if not isinstance(provider, str) or not NAME_PATTERN.fullmatch(provider):
            raise Invalid.wrong(f"{field}.provider", "a provider name", describe(provider))
        if not isinstance(options.get("options", {}), Mapping):
            raise Invalid.wrong(f"{field}.options", "a mapping", describe(options.get("options")))
    if runner == "command":
        command = options.get("command")
        if not isinstance(command, str) or not command.strip():
            raise Invalid.wrong(f"{field}.command", "a command to run", describe(command))
        check_text(command, f"{field}.command", form="line", max_chars=MAX_LINE)
    args = options.get("args", [])  # extra arguments for the agent's command line
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise Invalid.wrong(f"{field}.args", "a list of text", describe(args))
    return runner, options


def _parse_scripts(value: object, field: str) -> tuple[ScriptSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Invalid.wrong(field, "a list of scripts", describe(value))
    scripts = []
    for i, item in enumerate(value):
        entry = Fields(item, f"{field}[{i}]")
        # a shell command line, maybe several lines; `path` is the older name of `run`
        run = entry.text("run", form="arg") or entry.text("path", form="arg")
        if not run or not run.strip():
            raise Invalid(entry.field("run"), "expected a command or script path")
        phase = entry.choice("phase", ("pre", "post")) or "pre"
        inject = bool(entry.flag("inject_output"))
        required = bool(entry.flag("required"))  # the Node original's (3.17): pre only
        entry.finish_strict()
        scripts.append(
            ScriptSpec(
                path=run,
                phase="post" if phase == "post" else "pre",
                inject_output=inject,
                required=required and phase != "post",
            )
        )
    return tuple(scripts)


AUTO_COMMITS = ("never", "checkpoint_on_waiting", "checkpoint_on_terminal")


def _auto_commit(execution: Fields) -> tuple[bool, bool]:
    """(commit at the end, commit at each answer it waits after). `true`/`false` are ours;
    the Node original's (3.17) words: `never`; `checkpoint_on_terminal`, at the end (ours
    by default, R-S3); `checkpoint_on_waiting`, at each answer, and at the end too, so a
    thread's close still leaves its sandbox final (R-S3)."""
    value = execution.raw("auto_commit")
    if value is None or isinstance(value, bool):
        return value is not False, False
    if isinstance(value, str) and value.strip().lower() in AUTO_COMMITS:
        word = value.strip().lower()
        return word != "never", word == "checkpoint_on_waiting"
    raise Invalid.wrong(
        execution.field("auto_commit"), "true, false, or one of " + ", ".join(AUTO_COMMITS),
        describe(value),
    )  # fmt: skip


def _parse_variables(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid.wrong(field, "a mapping of name: value", describe(value))
    out = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.isidentifier() or not key.isascii():
            raise Invalid(field, f"variable names must be identifiers, got {describe(key)}")
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Invalid.wrong(f"{field}.{key}", "text", describe(item))
        out[key] = text_value(str(item), f"{field}.{key}")
    return out


def specialist_from_data(
    data: object,
    *,
    source: Path,
    scope: Scope,
    project_root: Path | None = None,
    default_permission: str = DEFAULT_PERMISSION,
) -> Specialist:
    """Validate a parsed YAML/JSON document. Raises `Invalid` on the first fatal problem."""
    warnings: list[str] = []
    if data is None:
        raise Invalid(None, "file is empty; expected a mapping with metadata, execution, prompt")
    top = Fields(data, "", warnings)
    if "specialist" in top.data:
        # The seed format wraps everything in `specialist:`; bare sections are accepted too.
        wrapper = top
        top = Fields(top.raw("specialist"), "specialist", warnings, ignored=_IGNORED_TOP)
        wrapper.finish()
    else:
        top.ignored = _IGNORED_TOP

    meta = top.section("metadata", ignored=_IGNORED_METADATA)
    if meta is None:
        raise Invalid(top.field("metadata"), "required section missing (needs at least name)")
    local = check_name(meta.raw("name"), meta.field("name"))
    name, package = runtime_name(local, meta.raw("package"), meta.field("package"))
    aliases = check_aliases(meta.raw("aliases"), meta.field("aliases"), name, warnings)
    description = meta.text("description") or ""
    version = meta.scalar_text("version") or ""
    category = meta.text("category", form="line", max_chars=MAX_LINE) or ""
    tags = tuple(meta.text_list("tags", max_chars=256))
    meta.finish()

    execution = top.section("execution", ignored=_IGNORED_EXECUTION) or Fields(
        {}, "execution", warnings
    )
    mode = execution.choice("mode", MODES) or "auto"
    model = model_name(execution, "model")
    fallback_model = model_name(execution, "fallback_model")
    timeout_ms = duration_ms(execution, "timeout_ms")
    stall_timeout_ms = duration_ms(execution, "stall_timeout_ms")
    idle_timeout_ms = duration_ms(execution, "idle_timeout_ms")
    stall_kill = bool(execution.flag("stall_kill"))
    response_format = execution.choice("response_format", RESPONSE_FORMATS)
    permission = (
        execution.choice("permission_required", PERMISSION_TIERS, upper=True) or default_permission
    )
    thinking_level = execution.choice("thinking_level", THINKING_LEVELS)
    if execution.has("keep_alive") and execution.has("interactive"):
        raise Invalid(execution.field("keep_alive"), "give interactive or keep_alive, not both")
    keep_alive, plain_interactive = execution.flag("keep_alive"), execution.flag("interactive")
    interactive = bool(keep_alive or plain_interactive)
    runner, runner_options = parse_runner(execution.raw("runner"), execution.field("runner"))
    tools = None  # a strict allowlist, as an agent file's `tools:` (catalog/tools.py)
    if execution.has("tools"):
        written = execution.text_list("tools", max_chars=MAX_LINE)
        names = [t.strip() for item in written for t in item.split(",") if t.strip()]
        tools = allowlist(names, field=execution.field("tools"))
    max_turns = positive_int(execution.raw("max_turns"), execution.field("max_turns"))
    max_tokens = positive_int(execution.raw("max_tokens"), execution.field("max_tokens"))
    executor = execution.raw("executor")
    if isinstance(executor, str):
        executor = {"kind": executor}
    if executor is not None and not isinstance(executor, dict):
        raise Invalid(execution.field("executor"), "must be local, ray or a mapping")
    requires_worktree = bool(execution.flag("requires_worktree"))  # run it in a sandbox
    auto_commit, commit_on_waiting = _auto_commit(execution)
    bare = bool(execution.flag("bare"))
    attention, watchdog = execution.raw("attention"), execution.raw("watchdog")  # plan checks
    execution.finish()

    prompt = top.section("prompt", ignored=_IGNORED_PROMPT) or Fields({}, "prompt", warnings)
    system_prompt = prompt.text("system") or ""
    prompt_mode = prompt.choice("system_prompt_mode", ("append", "replace")) or "append"
    task_template = prompt.text("task_template")
    if task_template is not None and not task_template.strip():
        raise Invalid(prompt.field("task_template"), "is empty; use '$prompt' to pass the task")
    skill_inherit = prompt.text("skill_inherit", form="line", max_chars=MAX_LINE)
    variables = _parse_variables(prompt.raw("variables"), prompt.field("variables"))
    prompt.finish()

    skills = top.section("skills") or Fields({}, "skills", warnings)
    base = project_root if project_root is not None else source.parent
    skill_paths, missing_skills = resolve_skill_paths(
        skills.text_list("paths", max_chars=MAX_LINE), base, skills.field("paths")
    )
    warnings.extend(m.one_line() for m in missing_skills)
    scripts = _parse_scripts(skills.raw("scripts"), skills.field("scripts"))
    skills.finish()

    beads = top.choice("beads_integration", BEADS_MODES) or "auto"
    rules = mandatory_rules_block(top.section("mandatory_rules"), project_root, warnings)
    top.finish()
    if rules:
        system_prompt = f"{system_prompt.rstrip()}\n\n{rules}" if system_prompt.strip() else rules

    stem = definition_stem(source)
    if stem and stem not in (name, local):
        warnings.append(f"{meta.field('name')}: {local!r} differs from the file name {stem!r}")

    return Specialist(
        name=name,
        description=description,
        version=version,
        category=category,
        tags=tags,
        package=package,
        aliases=aliases,
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
        tools=tools,
        executor=executor or {},
        max_turns=max_turns,
        max_tokens=max_tokens,
        requires_worktree=requires_worktree,
        auto_commit=auto_commit,
        commit_on_waiting=commit_on_waiting,
        bare=bare,
        system_prompt_mode="replace" if prompt_mode == "replace" else "append",
        attention=attention,
        watchdog=watchdog,
        system_prompt=system_prompt,
        task_template="$prompt" if task_template is None else task_template,
        skill_inherit=skill_inherit,
        variables=variables,
        skill_paths=skill_paths,
        missing_skills=missing_skills,
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
