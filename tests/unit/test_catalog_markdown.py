"""Markdown agent files (Claude Code / pi format) -> Specialist."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.catalog import load_specialist_file
from specialists.catalog.markdown import permission_for_tools


def agent(tmp_path: Path, text: str, name: str = "agent.md") -> Path:
    path = tmp_path / ".claude" / "agents" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


PI_AGENT = """\
---
name: my-agent
package: code-analysis
description: What this agent does
aliases: developer, coder
model: openai-codex/gpt-5.4
thinking: high
tools: read, grep, find, ls, bash
systemPromptMode: replace
skills: safe-bash, review-checklist
skillPath: ./skills, ../shared-skills
timeoutMs: 60000
turnBudget: {maxTurns: 7}
fallbackModels: anthropic/claude-haiku-4-5, openai/gpt-5-mini
---

Your system prompt here.
"""


def test_pi_agent_file(tmp_path: Path) -> None:
    path = agent(tmp_path, PI_AGENT, "whatever.md")
    (path.parent / "skills").mkdir()
    spec = load_specialist_file(path, "project")
    assert spec.name == "code-analysis.my-agent"  # seed 004's dotted runtime name
    assert spec.aliases == ("developer", "coder")
    assert spec.description == "What this agent does"
    assert spec.model == "openai-codex/gpt-5.4"
    assert spec.fallback_model == "anthropic/claude-haiku-4-5"
    assert spec.thinking_level == "high"
    assert spec.tools == ("read", "grep", "find", "ls", "bash")
    assert spec.permission == "READ_ONLY"
    assert spec.system_prompt == "Your system prompt here."
    assert (spec.timeout_ms, spec.max_turns) == (60000, 7)
    assert spec.skill_paths == (path.parent / "skills", path.parent / "../shared-skills")
    assert len(spec.warnings) == 1 and "skillPath[1]" in spec.warnings[0]


def test_claude_agent_without_name_uses_stem_and_list_tools(tmp_path: Path) -> None:
    text = "---\ndescription: Reviews code\ntools:\n  - Read\n  - Edit\nmodel: inherit\n---\nBody\n"
    spec = load_specialist_file(agent(tmp_path, text, "code-reviewer.md"), "user")
    assert spec.name == "code-reviewer"
    assert spec.scope == "user"
    assert spec.model is None  # inherit = the runner's default
    assert spec.permission == "MEDIUM"


def test_unquoted_colon_in_description_still_loads(tmp_path: Path) -> None:
    text = (
        "---\nname: r\ndescription: Use this agent when: you review\n"
        "tools: Read, Grep\nmaxTurns: 3\ncolor: blue\n---\nReview.\n"
    )
    spec = load_specialist_file(agent(tmp_path, text), "project")
    assert spec.description == "Use this agent when: you review"
    assert spec.permission == "READ_ONLY" and spec.max_turns == 3
    assert len(spec.warnings) == 1
    assert "invalid frontmatter YAML at line 3" in spec.warnings[0]


def test_explicit_permission_and_runner(tmp_path: Path) -> None:
    text = "---\nname: r\ntools: Read\npermission: high\nrunner: codex\n---\nx\n"
    spec = load_specialist_file(agent(tmp_path, text), "project")
    assert spec.permission == "HIGH" and spec.runner == "codex"


def test_unknown_frontmatter_key_and_empty_body_warn(tmp_path: Path) -> None:
    spec = load_specialist_file(agent(tmp_path, "---\nname: r\nmodle: x\n---\n\n"), "project")
    assert sorted(spec.warnings) == [
        "body is empty: the agent gets no system prompt",
        "modle: unknown key, ignored (did you mean 'model'?)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no frontmatter\n", "agent.md: missing frontmatter"),
        ("---\nname: r\n", "agent.md: frontmatter is not closed"),
        ("---\nname: bad name\n---\nx\n", "agent.md: name: expected letters, digits"),
        ("---\nname: r\nthinking: lots\n---\nx\n", "agent.md: thinking: expected one of off"),
        ("---\nname: r\ntools: 5\n---\nx\n", "agent.md: tools: expected tool names"),
        ("---\nname: r\npermission: root\n---\nx\n", "agent.md: permission: expected one of"),
        ("---\n- a\n- b\n---\nx\n", "agent.md: frontmatter: expected key: value lines"),
        ("---\nname: [unclosed\n  - x: y\n---\nx\n", "agent.md: invalid frontmatter YAML at line"),
    ],
)
def test_markdown_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_specialist_file(agent(tmp_path, text), "project")
    assert expected in info.value.one_line()


@pytest.mark.parametrize(
    ("tools", "disallowed", "tier"),
    [
        (None, (), "MEDIUM"),
        (("read", "grep", "find", "ls"), (), "READ_ONLY"),
        (("Read", "Grep", "Glob", "WebSearch"), (), "READ_ONLY"),
        (("read", "bash", "grep", "find", "ls"), (), "READ_ONLY"),
        (("bash",), (), "BASH_ONLY"),
        (("Bash(git:*)",), (), "BASH_ONLY"),
        (("read", "bash", "edit", "write"), (), "MEDIUM"),
        (("Read", "MultiEdit"), (), "MEDIUM"),
        ((), (), "READ_ONLY"),
        (None, ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"), "READ_ONLY"),
    ],
)
def test_tools_map_to_a_tier(
    tools: tuple[str, ...] | None, disallowed: tuple[str, ...], tier: str
) -> None:
    assert permission_for_tools(tools, disallowed) == tier
