"""`specialists install --pi` / `uninstall --pi`: one entry in pi's settings.json, reversibly."""

from __future__ import annotations

import json

import pytest

from specialists.base.errors import UserError
from specialists.fronts.cli.main import main
from specialists.fronts.install import this_python
from specialists.fronts.pi.install import merge, unmerge, user_settings
from specialists.runners.pi_extension import EXTENSION_FILE
from tests.support.agent_env import AgentEnv

OLD = "/old/venv/lib/python3.11/site-packages/specialists/pi_extension/index.ts"
SIDECAR = {"sidecar": [this_python(), "-m", "specialists"]}


def test_merge_adds_our_path_once_replaces_an_older_install_and_keeps_the_rest() -> None:
    doc = {
        "theme": "dark",
        "extensions": ["/mine.ts", OLD],
        "specialists": {"sidecar": ["/old/venv/bin/python", "-m", "specialists"], "x": 1},
    }
    new, notes = merge(doc, "s.json")
    assert new == {
        "theme": "dark",
        "extensions": ["/mine.ts", str(EXTENSION_FILE)],
        "specialists": {**SIDECAR, "x": 1},
    }
    assert notes[0].startswith("replaced an older specialists entry")
    assert notes[1].startswith(f"the extension starts its sidecar with {this_python()}")
    again, notes = merge(new, "s.json")
    assert again == new and notes == ["pi extension already in s.json"]
    assert doc["extensions"] == ["/mine.ts", OLD]  # the input is not changed


def test_unmerge_removes_only_ours_and_the_list_it_emptied() -> None:
    new, _ = unmerge({"theme": "dark", "extensions": ["/mine.ts", str(EXTENSION_FILE), OLD]}, "s")
    assert new == {"theme": "dark", "extensions": ["/mine.ts"]}
    new, _ = unmerge(
        {"theme": "dark", "extensions": [str(EXTENSION_FILE)], "specialists": SIDECAR}, "s"
    )
    assert new == {"theme": "dark"}
    same, notes = unmerge({"extensions": ["/mine.ts"]}, "s")
    assert same == {"extensions": ["/mine.ts"]} and notes == ["no specialists extension in s"]


def test_a_malformed_extensions_value_is_refused() -> None:
    with pytest.raises(UserError, match="`extensions` is a str, expected a list"):
        merge({"extensions": "/x.ts"}, "s.json")
    with pytest.raises(UserError, match="`specialists` is a list, expected an object"):
        merge({"specialists": []}, "s.json")


def test_install_then_uninstall_in_a_project_leaves_nothing_behind(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = isolated_env.project / ".pi" / "settings.json"
    assert main(["install", "--pi", "--dry-run"]) == 0
    assert not settings.exists() and "(dry run) added" in capsys.readouterr().out
    assert main(["install", "--pi"]) == 0
    assert json.loads(settings.read_text()) == {
        "extensions": [str(EXTENSION_FILE)],
        "specialists": SIDECAR,
    }
    assert main(["install", "--pi"]) == 0
    assert "already in .pi/settings.json" in capsys.readouterr().out
    assert main(["uninstall", "--pi"]) == 0
    assert not settings.exists()
    assert "deleted .pi/settings.json (nothing else was in it)" in capsys.readouterr().out
    assert main(["uninstall", "--pi"]) == 0
    assert "no .pi/settings.json" in capsys.readouterr().out


def test_uninstall_keeps_a_linked_settings_file(isolated_env: AgentEnv, tmp_path) -> None:
    """The link stays and its target loses our entry (the link was deleted, the target kept
    ours)."""
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    settings = isolated_env.project / ".pi" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(real)
    assert main(["install", "--pi"]) == 0
    assert main(["uninstall", "--pi"]) == 0
    assert settings.is_symlink() and json.loads(real.read_text()) == {}


def test_user_scope_follows_pi_coding_agent_dir(isolated_env: AgentEnv) -> None:
    path = user_settings()
    assert path == isolated_env.pi_agent_dir / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"defaultProvider": "mock"}\n')
    assert main(["install", "--pi", "--user"]) == 0
    assert json.loads(path.read_text())["extensions"] == [str(EXTENSION_FILE)]
    assert main(["uninstall", "--pi", "--user"]) == 0
    assert json.loads(path.read_text()) == {"defaultProvider": "mock"}


def test_a_settings_file_that_is_not_json_is_left_alone(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = isolated_env.project / ".pi" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    assert main(["install", "--pi"]) == 2
    assert "settings.json: invalid JSON at line 1, column " in capsys.readouterr().err
    assert settings.read_text() == "{ not json"


def test_plain_install_still_means_claude_code(isolated_env: AgentEnv) -> None:
    assert main(["install"]) == 0
    assert (isolated_env.project / ".mcp.json").exists()
    assert not (isolated_env.project / ".pi").exists()
