"""YAML/JSON specialist definitions -> Specialist, and one precise line per bad file."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.catalog import load_specialist_file
from specialists.catalog.model import ScriptSpec, specialist_to_dict

FULL = """\
specialist:
  metadata:
    name: full
    version: 1.2
    description: Everything set
    category: testing
    tags: [a, b]
    updated: 2026-03-11
  execution:
    mode: tool
    model: anthropic/claude-sonnet-4-5
    fallback_model: openai/gpt-5
    timeout_ms: 120000
    stall_timeout_ms: 30000
    idle_timeout_ms: 60000
    stall_kill: true
    response_format: json
    permission_required: read_only
    thinking_level: HIGH
    keep_alive: true
    runner: {type: command, command: my-agent, args: [--fast]}
    max_turns: 12
    max_tokens: 4000
    max_retries: 2
  prompt:
    system: You are full.
    task_template: "Do $prompt in $cwd with $pre_script_output and $ticket"
    skill_inherit: base-skill
    variables: {ticket: ABC-1, level: 3}
    output_schema: {type: object}
  skills:
    paths: [./skills/present, ~/skills/absent, /abs/missing]
    scripts:
      - run: ./scripts/check.sh
        phase: pre
        inject_output: true
      - path: echo done
        phase: post
  communication:
    publishes: [x]
  beads_integration: never
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, name: str = "x.specialist.yaml") -> object:
    return load_specialist_file(write(tmp_path / name, text), "project", tmp_path)


def error_of(tmp_path: Path, text: str, name: str = "x.specialist.yaml") -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text, name)
    line = info.value.one_line()
    assert "\n" not in line
    return line


def test_every_field_is_parsed(tmp_path: Path) -> None:
    (tmp_path / "skills" / "present").mkdir(parents=True)
    spec = load_specialist_file(write(tmp_path / "full.specialist.yaml", FULL), "user", tmp_path)
    assert spec.name == "full"
    assert (spec.version, spec.description, spec.category) == ("1.2", "Everything set", "testing")
    assert spec.tags == ("a", "b")
    assert spec.mode == "tool"
    assert spec.model == "anthropic/claude-sonnet-4-5"
    assert spec.fallback_model == "openai/gpt-5"
    assert (spec.timeout_ms, spec.stall_timeout_ms, spec.idle_timeout_ms) == (120000, 30000, 60000)
    assert spec.stall_kill is True
    assert spec.response_format == "json"
    assert spec.permission == "READ_ONLY"
    assert spec.thinking_level == "high"
    assert spec.interactive is True
    assert spec.runner == "command"
    assert spec.runner_options == {"command": "my-agent", "args": ["--fast"]}
    assert (spec.max_turns, spec.max_tokens) == (12, 4000)
    assert spec.system_prompt == "You are full."
    assert spec.task_template == "Do $prompt in $cwd with $pre_script_output and $ticket"
    assert spec.skill_inherit == "base-skill"
    assert spec.variables == {"ticket": "ABC-1", "level": "3"}
    assert spec.skill_paths == (
        tmp_path / "skills" / "present",
        Path.home() / "skills" / "absent",
        Path("/abs/missing"),
    )
    assert spec.scripts == (
        ScriptSpec("./scripts/check.sh", "pre", True),
        ScriptSpec("echo done", "post", False),
    )
    assert spec.pre_scripts == (spec.scripts[0],) and spec.post_scripts == (spec.scripts[1],)
    assert spec.beads_integration == "never"
    assert spec.scope == "user" and spec.source == tmp_path / "full.specialist.yaml"
    # Missing skill paths warn, they do not fail; known foreign keys are silent.
    assert len(spec.warnings) == 2
    assert all("skills.paths[" in w and "not found" in w for w in spec.warnings)
    json.dumps(specialist_to_dict(spec))  # JSON-ready


def test_defaults_for_a_minimal_file(tmp_path: Path) -> None:
    spec = load(tmp_path, "metadata: {name: x}\n")
    assert spec.permission == "MEDIUM"
    assert spec.task_template == "$prompt"
    assert spec.runner is None and spec.model is None and spec.timeout_ms is None
    assert spec.interactive is False and spec.beads_integration == "auto"
    assert spec.warnings == ()


def test_runner_as_a_plain_name_and_zero_timeout(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        "metadata: {name: x}\nexecution: {runner: Claude, timeout_ms: 0, interactive: true}\n",
    )
    assert spec.runner == "claude" and spec.runner_options == {}
    assert spec.timeout_ms is None  # 0 disables, as in the seed files
    assert spec.interactive is True


def test_json_definition(tmp_path: Path) -> None:
    data = {"specialist": {"metadata": {"name": "x"}, "execution": {"runner": "pi"}}}
    spec = load(tmp_path, json.dumps(data), "x.specialist.json")
    assert spec.runner == "pi"


def test_unknown_keys_are_warnings(tmp_path: Path) -> None:
    spec = load(tmp_path, "metadata: {name: x}\nexection: {model: m}\nprompt: {sytem: hi}\n")
    assert sorted(spec.warnings) == [
        "exection: unknown key, ignored (did you mean 'execution'?)",
        "prompt.sytem: unknown key, ignored (did you mean 'system'?)",
    ]


def test_name_differing_from_file_name_warns(tmp_path: Path) -> None:
    spec = load(tmp_path, "metadata: {name: other}\n", "x.specialist.yaml")
    assert any("differs from the file name 'x'" in w for w in spec.warnings)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "metadata: {name: x}\nexecution: {timeout_ms: -5}\n",
            "execution.timeout_ms: expected a positive whole number, got -5",
        ),
        (
            "metadata: {name: x}\nexecution: {stall_timeout_ms: soon}\n",
            "execution.stall_timeout_ms: expected a positive whole number, got text ('soon')",
        ),
        (
            "metadata: {name: x}\nexecution: {max_turns: true}\n",
            "execution.max_turns: expected a positive whole number, got true/false (true)",
        ),
        (
            "metadata: {name: x}\nexecution: {permission_required: ADMIN}\n",
            "execution.permission_required: expected one of READ_ONLY, BASH_ONLY, LOW, MEDIUM,"
            " HIGH; got text ('ADMIN')",
        ),
        (
            "metadata: {name: x}\nexecution: {runner: docker}\n",
            "execution.runner: expected one of pi, claude, codex, command, native, external-job;"
            " got text ('docker')",
        ),
        (
            "metadata: {name: x}\nexecution: {runner: {type: command}}\n",
            "execution.runner.command: expected a command to run",
        ),
        (
            "metadata: {name: x}\nexecution: {runner: {type: command, command: a, args: x}}\n",
            "execution.runner.args: expected a list of text",
        ),
        (
            "metadata: {name: x}\nexecution: {interactive: yes please}\n",
            "execution.interactive: expected true or false",
        ),
        (
            "metadata: {name: x}\nexecution: {thinking_level: extreme}\n",
            "execution.thinking_level: expected one of off, minimal",
        ),
        (
            "metadata: {name: x}\nexecution: {response_format: xml}\n",
            "execution.response_format: expected one of text, json, markdown",
        ),
        (
            "metadata: {name: x}\nexecution: {model: 5}\n",
            "execution.model: expected text, got a number (5)",
        ),
        ("metadata: {name: x}\nexecution: [1, 2]\n", "execution: expected a mapping, got a list"),
        (
            "metadata: {description: no name}\n",
            "metadata.name: expected a name like 'code-reviewer', got nothing (null)",
        ),
        ("metadata: {name: has space}\n", "metadata.name: expected letters, digits"),
        ("execution: {model: m}\n", "metadata: required section missing"),
        ("metadata: {name: x}\nprompt: {task_template: '  '}\n", "prompt.task_template: is empty"),
        (
            "metadata: {name: x}\nprompt: {variables: {1x: a}}\n",
            "prompt.variables: variable names must be identifiers",
        ),
        (
            "metadata: {name: x}\nskills: {paths: [1]}\n",
            "skills.paths[0]: expected text, got a number (1)",
        ),
        (
            "metadata: {name: x}\nskills: {scripts: [{phase: pre}]}\n",
            "skills.scripts[0].run: expected a command or script path",
        ),
        (
            "metadata: {name: x}\nskills: {scripts: [{run: a, phase: during}]}\n",
            "skills.scripts[0].phase: expected one of pre, post",
        ),
        (
            "metadata: {name: x}\nskills: {scripts: [{run: a, inject: true}]}\n",
            "skills.scripts[0].inject: unknown key",
        ),
        (
            "metadata: {name: x}\nbeads_integration: sometimes\n",
            "beads_integration: expected one of auto, always, never",
        ),
        ("specialist: [1]\n", "specialist: expected a mapping, got a list"),
        ("- just\n- a list\n", "x.specialist.yaml: expected a mapping, got a list"),
        ("", "x.specialist.yaml: file is empty"),
        ("metadata: {name: x}\n  bad: indent\n", "x.specialist.yaml: invalid YAML at line 2"),
        ("metadata: {name: x}\nupdated: 2024-13-45\n", "x.specialist.yaml: invalid YAML"),
        ("metadata: !!python/object:os.system {name: x}\n", "x.specialist.yaml: invalid YAML"),
        ("{1: 2}\n", "x.specialist.yaml: keys must be text"),
    ],
)
def test_each_error_names_path_field_and_problem(tmp_path: Path, text: str, expected: str) -> None:
    line = error_of(tmp_path, text)
    assert line.startswith(str(tmp_path / "x.specialist.yaml") + ": ")
    assert expected in line


def test_json_syntax_error_has_line_number(tmp_path: Path) -> None:
    line = error_of(tmp_path, '{\n  "specialist": {,}\n}', "x.specialist.json")
    assert "invalid JSON at line 2" in line


def test_not_utf8_and_wrong_suffix(tmp_path: Path) -> None:
    path = tmp_path / "x.specialist.yaml"
    path.write_bytes(b"metadata: {name: \xff}\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_specialist_file(path)
    with pytest.raises(ConfigError, match=r"expected a file named \*\.specialist\.yaml"):
        load_specialist_file(write(tmp_path / "x.yaml", "metadata: {name: x}\n"))
    with pytest.raises(ConfigError, match="cannot read file"):
        load_specialist_file(tmp_path / "gone.specialist.yaml")


def test_an_alias_cycle_is_refused_as_too_deep(tmp_path: Path) -> None:
    line = error_of(
        tmp_path, "metadata: {name: x}\nexecution:\n  runner: &r {type: pi, self: *r}\n"
    )
    assert "nested too deeply" in line


@pytest.mark.parametrize(
    "runner",
    [
        "{type: pi, when: 2024-01-01}",
        "{type: pi, 5: x}",
    ],
)
def test_runner_options_must_be_plain_data(tmp_path: Path, runner: str) -> None:
    line = error_of(tmp_path, f"metadata: {{name: x}}\nexecution:\n  runner: {runner}\n")
    assert "execution.runner" in line


def test_runner_options_are_kept(tmp_path: Path) -> None:
    spec = load(
        tmp_path, "metadata: {name: x}\nexecution: {runner: {type: pi, extra: [1, {a: b}]}}\n"
    )
    assert spec.runner == "pi" and spec.runner_options == {"extra": [1, {"a": "b"}]}


def test_the_sandbox_fields_of_the_node_original_mean_what_they_say(tmp_path: Path) -> None:
    """requires_worktree and auto_commit are read (no longer ignored); a wrong type is one
    clear error naming the field."""
    spec = load(
        tmp_path, "metadata: {name: x}\nexecution: {requires_worktree: true, auto_commit: false}\n"
    )
    assert spec.requires_worktree is True and spec.auto_commit is False  # type: ignore[attr-defined]
    plain = load(tmp_path, "metadata: {name: x}\n")
    assert plain.requires_worktree is False and plain.auto_commit is True  # type: ignore[attr-defined]
    line = error_of(tmp_path, "metadata: {name: x}\nexecution: {requires_worktree: 'yes'}\n")
    assert "requires_worktree" in line and "true or false" in line
