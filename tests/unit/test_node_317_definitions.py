"""Definitions of the Node original's release 3.17 load and mean there what they meant there
(issue 21 item 16): auto_commit's three words, execution.bare, prompt.system_prompt_mode,
mandatory_rules, a required pre-script."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.catalog import load_specialist_file
from specialists.catalog.model import Specialist
from specialists.runners.base import LaunchSpec

# The shape 3.17's own executor.specialist.json has (names changed), every new field set.
NODE_317 = {
    "specialist": {
        "metadata": {
            "name": "executor",
            "version": "3.17.0",
            "description": "writes code",
            "category": "codegen",
        },
        "execution": {
            "mode": "tool",
            "model": "anthropic/claude-sonnet-4-5",
            "fallback_models": ["openai/gpt-5"],
            "timeout_ms": 0,
            "permission_required": "HIGH",
            "requires_worktree": True,
            "bare": False,
            "auto_commit": "checkpoint_on_waiting",
            "output_type": "codegen",
            "extensions": {"gitnexus": False},
            "expected_output_keys": ["summary"],
        },
        "prompt": {
            "system": "You are an execution specialist.",
            "system_prompt_mode": "append",
            "task_template": "$prompt",
        },
        "skills": {
            "scripts": [{"run": "true", "phase": "pre", "inject_output": False, "required": True}]
        },
        "mandatory_rules": {
            "template_sets": ["git-safe", "not-here"],
            "disable_default_globals": True,
            "inline_rules": [
                {"id": "no-force", "level": "error", "text": "Never  force-push."},
                {"level": "warn", "text": "Keep diffs small.", "when": "phase == 'edit'"},
            ],
        },
        "notes_mode": "full-trail",
        "output_file": ".xtrm/out.md",
    }
}

GIT_SAFE = """---
rules:
  - id: git-1
    level: required
    text: "Commit with explicit paths only."
  - text: Never rewrite published history.
---
"""


def load(root: Path, data: dict, name: str = "executor") -> Specialist:
    path = root / "specialists" / f"{name}.specialist.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return load_specialist_file(path, "project", root)


def with_execution(**fields: object) -> dict:
    data = json.loads(json.dumps(NODE_317))
    data["specialist"]["execution"].update(fields)
    del data["specialist"]["mandatory_rules"]
    return data


def test_a_317_definition_loads_with_each_field_meaning_what_it_meant(tmp_path: Path) -> None:
    rules = tmp_path / ".specialists" / "mandatory-rules"
    rules.mkdir(parents=True)
    (rules / "git-safe.md").write_text(GIT_SAFE)
    spec = load(tmp_path, NODE_317)
    assert spec.auto_commit is True and spec.commit_on_waiting is True
    assert spec.bare is False and spec.system_prompt_mode == "append"
    assert spec.pre_scripts[0].required is True
    assert spec.system_prompt == textwrap.dedent(
        """\
        You are an execution specialist.

        ## MANDATORY_RULES
        ### git-safe
        - [required] Commit with explicit paths only.
        - [error] Never rewrite published history.

        ### specialist-inline-rules
        - [error] Never force-push. (id: no-force)
        - [warn] Keep diffs small. (id: inline-2)"""
    )
    joined = "\n".join(spec.warnings)
    assert "'not-here' not found" in joined and "skipped" in joined
    assert "when: not judged here" in joined


@pytest.mark.parametrize(
    ("word", "at_end", "at_waiting"),
    [
        ("never", False, False),
        ("checkpoint_on_terminal", True, False),
        ("checkpoint_on_waiting", True, True),
        (True, True, False),
        (False, False, False),
    ],
)
def test_auto_commit_words(tmp_path: Path, word: object, at_end: bool, at_waiting: bool) -> None:
    spec = load(tmp_path, with_execution(auto_commit=word))
    assert (spec.auto_commit, spec.commit_on_waiting) == (at_end, at_waiting)


def test_a_wrong_auto_commit_is_one_line_naming_the_words(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, with_execution(auto_commit="sometimes"))
    line = refused.value.one_line()
    assert "auto_commit" in line and "checkpoint_on_waiting" in line and "\n" not in line


def test_bare_and_replace(tmp_path: Path) -> None:
    data = with_execution(bare=True)
    data["specialist"]["prompt"]["system_prompt_mode"] = "replace"
    spec = load(tmp_path, data)
    assert spec.bare is True and spec.system_prompt_mode == "replace"


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ({"inline_rules": [{"level": "error"}]}, "a rule needs its text"),
        ({"inline_rules": "be good"}, "a list of rules"),
        ({"template_sets": ["../../etc/passwd"]}, "kebab-case"),
        ({"inline_rules": [{"text": "x", "level": "fatal"}]}, "level"),
    ],
)
def test_a_bad_mandatory_rule_is_one_line(tmp_path: Path, rules: dict, says: str) -> None:
    data = with_execution()
    data["specialist"]["mandatory_rules"] = rules
    with pytest.raises(ConfigError, match=says):
        load(tmp_path, data)


def test_a_rule_set_that_is_a_fifo_is_skipped_not_hung(tmp_path: Path) -> None:
    import os

    rules = tmp_path / ".specialists" / "mandatory-rules"
    rules.mkdir(parents=True)
    os.mkfifo(rules / "git-safe.md")
    data = with_execution()
    data["specialist"]["mandatory_rules"] = {"template_sets": ["git-safe"]}
    spec = load(tmp_path, data)
    assert "MANDATORY_RULES" not in spec.system_prompt
    assert any("FIFO" in w for w in spec.warnings)


# --- what the runners do with bare and replace -------------------------------------------


def launch(tmp_path: Path, **kw: object) -> LaunchSpec:
    return LaunchSpec(
        job_id="j1", job_dir=tmp_path, cwd=tmp_path, prompt="go", system_prompt="BE BRIEF",
        model="mock/mock-model", response_format="json", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_pi_replaces_its_own_prompt_only_when_asked(tmp_path: Path) -> None:
    from specialists.runners.pi import PiRunner, build_argv

    for mode, flag in (("append", "--append-system-prompt"), ("replace", "--system-prompt")):
        spec = launch(tmp_path, system_prompt_mode=mode)
        argv = build_argv(
            ["pi"], spec, session_file=tmp_path / "s", system_prompt_file=tmp_path / "p",
            skill_paths=(),
        )  # fmt: skip
        assert argv[argv.index(str(tmp_path / "p")) - 1] == flag
    written = PiRunner()._write_system_prompt(launch(tmp_path))
    assert written is not None and "JSON" in written.read_text()  # our format rule
    bare = PiRunner()._write_system_prompt(launch(tmp_path, bare=True))
    assert bare is not None and bare.read_text() == "BE BRIEF"


def test_claude_replaces_its_own_prompt_only_when_asked(tmp_path: Path) -> None:
    from specialists.runners.claude import claude_argv

    def argv(**kw: object) -> list[str]:
        return claude_argv(launch(tmp_path, **kw), session_id="s", resume=False, as_root=False)

    replaced = argv(system_prompt_mode="replace")
    assert replaced[replaced.index("BE BRIEF") - 1] == "--system-prompt"
    appended = argv()
    assert appended[appended.index("BE BRIEF") - 1] == "--append-system-prompt"


def test_codex_bare_adds_no_json_rule(tmp_path: Path) -> None:
    from specialists.runners.codex import developer_instructions

    assert developer_instructions(launch(tmp_path), with_schema=False) != "BE BRIEF"
    assert developer_instructions(launch(tmp_path, bare=True), with_schema=False) == "BE BRIEF"
