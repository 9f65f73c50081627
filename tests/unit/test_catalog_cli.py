"""`specialists list` and `specialists show` through their argparse seams."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from specialists.base.errors import NotFound
from specialists.base.ops import noun
from specialists.fronts.cli import cmd_list
from specialists.fronts.cli.generated import add_noun
from specialists.project import Project


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specialists")
    sub = parser.add_subparsers(required=True)
    cmd_list.add_parser(sub)
    add_noun(sub, noun("show"), "specialists.fronts.cli.cmd_show")  # generated from its op
    args = parser.parse_args(argv)
    return int(args.run(args, Project()))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    monkeypatch.setenv("SPECIALISTS_PROJECT_ROOT", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / "cfg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / "claude"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "home" / "pi"))
    specs = root / "specialists"
    specs.mkdir(parents=True)
    (specs / "bad.specialist.yaml").write_text("metadata: {name: bad}\nexecution: {mode: fast}\n")
    (specs / "reviewer.specialist.yaml").write_text(
        "metadata: {name: reviewer, description: Project reviewer}\n"
        "execution: {runner: pi, model: m1, permission_required: low, timeout_ms: 1000}\n"
        "prompt: {system: Be strict.}\n"
        "skills: {scripts: [{run: ./pre.sh, inject_output: true}]}\n"
    )
    return root


def test_list_table_and_problems(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["list"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "SCOPE", "RUNNER/MODEL", "PERMISSION", "DESCRIPTION"]
    reviewer = next(line for line in lines if line.startswith("reviewer"))
    assert reviewer.split()[:4] == ["reviewer", "project", "pi/m1", "LOW"]
    assert any(line.startswith("explorer ") and "builtin" in line for line in lines)
    assert err.strip() == (
        f"{project / 'specialists' / 'bad.specialist.yaml'}: execution.mode:"
        " expected one of auto, tool, skill; got text ('fast')"
    )


def test_list_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = [s["name"] for s in data["specialists"]]
    assert names == sorted(names) and "reviewer" in names and "bad" not in names
    assert data["problems"][0]["field"] == "execution.mode"
    assert {"name": "reviewer"}.items() <= data["shadowed"][0].items()


def test_show_text(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["show", "reviewer"]) == 0
    out = capsys.readouterr().out
    assert f"source:         {project / 'specialists' / 'reviewer.specialist.yaml'}" in out
    assert "shadows:        " in out and "builtin/reviewer.specialist.yaml" in out
    assert "permission:     LOW" in out and "timeout:        1000 ms (1 s)" in out
    assert "script:         [pre, inject output] ./pre.sh" in out
    assert out.rstrip().endswith("Be strict.")


def test_show_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["show", "explorer", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "explorer" and data["scope"] == "builtin"
    assert data["permission"] == "READ_ONLY" and data["shadowed"] == []


def test_show_unknown(project: Path) -> None:
    with pytest.raises(NotFound, match="unknown specialist 'reviewr'") as info:
        run(["show", "reviewr"])
    assert info.value.hint == "did you mean: reviewer, resolver?"
    assert info.value.exit_code == 2
