"""The health line `status` starts with reads files that anyone may have planted: a project's
.mcp.json (a link in a cloned repository can point anywhere), ~/.claude.json, the package.json
beside an agent CLI. Each is read only when it is a regular file, through a link or not, and
a FIFO or a device reads as "not there": `status` neither hangs nor reads without end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.fronts.cli.health import agent_version, health, health_line

REGISTERED = json.dumps({"mcpServers": {"specialists": {"command": "x"}}})


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    return project


@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "directory", "dangling"])
def test_a_planted_mcp_json_reads_as_not_registered(root: Path, planted: str) -> None:
    target = root / ".mcp.json"
    if planted == "fifo":
        os.mkfifo(target)
    elif planted == "dev-zero":
        target.symlink_to("/dev/zero")
    elif planted == "directory":
        target.mkdir()
    else:
        target.symlink_to(root / "nowhere")
    assert health(root)["mcp"] is None


def test_a_linked_mcp_json_or_claude_json_is_read_through_its_link(
    root: Path, tmp_path: Path
) -> None:
    kept = tmp_path / "dotfiles"
    kept.mkdir()
    (kept / "mcp.json").write_text(REGISTERED)
    (root / ".mcp.json").symlink_to(kept / "mcp.json")
    assert health(root)["mcp"] == "project"
    (root / ".mcp.json").unlink()
    (tmp_path / "claude").mkdir()
    (tmp_path / "claude" / ".claude.json").symlink_to(kept / "mcp.json")
    assert health(root)["mcp"] == "user"
    (tmp_path / "claude" / ".claude.json").unlink()
    os.mkfifo(tmp_path / "claude" / ".claude.json")
    assert health(root)["mcp"] is None


def test_an_agent_beside_a_planted_package_json_is_found_without_a_version(
    root: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pi = bin_dir / "pi"
    pi.write_text("#!/bin/sh\n")
    pi.chmod(0o755)
    os.mkfifo(bin_dir / "package.json")
    facts = health(root)
    assert facts["agents"]["pi"] == {"path": str(pi), "version": None}  # type: ignore[index]
    assert "pi found" in health_line(facts)
    os.unlink(bin_dir / "package.json")
    (bin_dir / "package.json").write_text(json.dumps({"version": "1.6.0"}))
    assert agent_version(str(pi)) == "1.6.0"


def test_versions_and_beads_are_looked_for_above_as_far_as_they_should_be(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """npm links `bin/pi` to `lib/node_modules/<pkg>/dist/cli.js`: the package.json is up to
    three directories above the real file's; `.beads/` may be in any directory above."""
    package = tmp_path / "lib" / "node_modules" / "pkg"
    (package / "dist" / "bin" / "deep").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"version": "2.0.1"}))
    (tmp_path / "bin").mkdir()
    for depth, place in enumerate(("dist", "dist/bin", "dist/bin/deep")):
        (package / place / "cli.js").write_text("")
        os.chmod(package / place / "cli.js", 0o755)
        (tmp_path / "bin" / f"cli{depth}").symlink_to(package / place / "cli.js")
    assert agent_version(str(tmp_path / "bin" / "cli0")) == "2.0.1"
    assert agent_version(str(tmp_path / "bin" / "cli1")) == "2.0.1"
    assert agent_version(str(tmp_path / "bin" / "cli2")) == "2.0.1"
    (package / "dist" / "bin" / "deep" / "more").mkdir()
    (package / "dist" / "bin" / "deep" / "more" / "cli.js").write_text("")
    assert agent_version(str(package / "dist" / "bin" / "deep" / "more" / "cli.js")) is None

    (tmp_path / "bin" / "bd").symlink_to(package / "dist" / "cli.js")
    nested = root / "src" / "pkg"
    nested.mkdir(parents=True)
    assert health(str(nested))["beads"] == "no-project"
    (tmp_path / ".beads").mkdir()
    assert health(str(nested))["beads"] == "on"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert health(str(nested))["beads"] == "off"
