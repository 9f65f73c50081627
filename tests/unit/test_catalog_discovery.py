"""Scopes, precedence, duplicates, and a bad file not stopping the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import NotFound
from specialists.catalog import load_catalog, source_dirs
from specialists.catalog.discovery import BUILTIN_DIR

REQUIRED_BUILTINS = {
    "explorer",
    "planner",
    "executor",
    "reviewer",
    "debugger",
    "test-runner",
    "overthinker",
    "oracle",
}


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "pi"))
    return {"project": tmp_path / "proj", "home": home}


def yaml_def(path: Path, name: str, description: str = "", extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"metadata: {{name: {name}, description: '{description}'}}\n{extra}")
    return path


def md_def(path: Path, name: str | None, description: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = f"name: {name}\n" if name else ""
    path.write_text(f"---\n{head}description: {description}\n---\nPrompt\n")
    return path


def test_directories_are_documented_ones(dirs: dict[str, Path]) -> None:
    project, home = dirs["project"], dirs["home"]
    found = [(d.scope, d.path) for d in source_dirs(project)]
    assert found == [
        ("project", project / "specialists"),
        ("project", project / ".agents" / "specialists"),
        ("project", project / ".claude" / "agents"),
        ("project", project / ".pi" / "agents"),
        ("user", home / "cfg" / "specialists" / "specialists"),
        ("user", home / ".agents" / "specialists"),
        ("user", home / "claude" / "agents"),
        ("user", home / "pi" / "agents"),
        ("builtin", BUILTIN_DIR),
    ]
    doc = (Path(__file__).parents[2] / "docs" / "specialists.md").read_text()
    for needle in (
        "<root>/specialists/",
        "<root>/.agents/specialists/",
        "<root>/.claude/agents/",
        "<root>/.pi/agents/",
        "$XDG_CONFIG_HOME/specialists/specialists/",
        "~/.agents/specialists/",
        "$CLAUDE_CONFIG_DIR/agents/",
        "$PI_CODING_AGENT_DIR/agents/",
    ):
        assert needle in doc


def test_builtins_load_cleanly(dirs: dict[str, Path]) -> None:
    cat = load_catalog(dirs["project"])
    assert cat.problems == []
    builtins = {s.name: s for s in cat.all() if s.scope == "builtin"}
    assert set(builtins) >= REQUIRED_BUILTINS
    for spec in builtins.values():
        assert spec.warnings == (), spec.name
        assert spec.runner is None and spec.model is None  # runner-neutral
        assert "$prompt" in spec.task_template
        assert "final" in spec.system_prompt and spec.description
    for name in ("explorer", "reviewer", "planner", "overthinker", "oracle"):
        assert builtins[name].permission == "READ_ONLY"


def test_precedence_project_over_user_over_builtin(dirs: dict[str, Path]) -> None:
    project, home = dirs["project"], dirs["home"]
    yaml_def(project / "specialists" / "reviewer.specialist.yaml", "reviewer", "project one")
    md_def(home / "claude" / "agents" / "reviewer.md", None, "user one")
    md_def(home / "pi" / "agents" / "explorer.md", "explorer", "user explorer")
    cat = load_catalog(project)
    assert cat.problems == []
    assert cat.get("reviewer").description == "project one"
    assert cat.get("reviewer").scope == "project"
    assert cat.get("explorer").scope == "user"
    assert cat.get("planner").scope == "builtin"
    losers = {(w.name, w.scope, lo.scope) for w, lo in cat.shadowed}
    assert losers == {
        ("reviewer", "project", "user"),
        ("reviewer", "project", "builtin"),
        ("explorer", "user", "builtin"),
    }
    assert [s.scope for s in cat.shadowed_by("reviewer")] == ["user", "builtin"]
    assert [s.name for s in cat.all()] == sorted(s.name for s in cat.all())


def test_bad_file_gives_one_problem_and_others_load(dirs: dict[str, Path]) -> None:
    project = dirs["project"]
    yaml_def(project / "specialists" / "good.specialist.yaml", "good")
    bad = yaml_def(
        project / ".agents" / "specialists" / "bad.specialist.yaml",
        "bad",
        extra="execution: {timeout_ms: -1}\n",
    )
    broken = project / ".pi" / "agents" / "broken.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("not an agent file")
    cat = load_catalog(project)
    assert "good" in cat and "bad" not in cat
    lines = sorted(p.one_line() for p in cat.problems)
    assert lines == sorted(
        [
            f"{bad}: execution.timeout_ms: expected a positive whole number, got -1",
            f"{broken}: missing frontmatter: expected a first line '---', then name, ...",
        ]
    )
    with pytest.raises(NotFound) as info:
        cat.get("bad")
    assert "failed to load" in (info.value.hint or "")


def test_duplicate_in_one_scope_is_a_problem(dirs: dict[str, Path]) -> None:
    project = dirs["project"]
    first = yaml_def(project / "specialists" / "dup.specialist.yaml", "dup", "first")
    second = md_def(project / ".claude" / "agents" / "dup.md", "dup", "second")
    cat = load_catalog(project)
    assert cat.get("dup").description == "first"
    assert [p.path for p in cat.problems] == [second]
    assert f"duplicate specialist 'dup' in project scope; {first}" in cat.problems[0].problem


def test_subdirectories_hidden_files_and_other_files(dirs: dict[str, Path]) -> None:
    project = dirs["project"]
    yaml_def(project / "specialists" / "group" / "nested.specialist.yaml", "nested")
    yaml_def(project / "specialists" / ".hidden" / "h.specialist.yaml", "h")
    (project / "specialists" / "README.md").write_text("# not a definition")
    yaml_def(project / ".claude" / "agents" / "ignored.specialist.yaml", "ignored")
    cat = load_catalog(project)
    assert "nested" in cat and "h" not in cat and "ignored" not in cat
    assert cat.problems == []


def test_home_as_project_root_is_not_loaded_twice(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = dirs["home"]
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    md_def(home / ".claude" / "agents" / "mine.md", "mine")
    cat = load_catalog(home)
    assert cat.get("mine").scope == "project"
    assert cat.shadowed == [] and cat.problems == []


def test_unknown_name_suggests_close_matches(dirs: dict[str, Path]) -> None:
    cat = load_catalog(dirs["project"])
    with pytest.raises(NotFound) as info:
        cat.get("revewer")
    assert (
        info.value.one_line() == "unknown specialist 'revewer' (did you mean: reviewer, resolver?)"
    )
    with pytest.raises(NotFound) as info:
        cat.get("zzzzzz")
    assert "specialists list" in (info.value.hint or "")
