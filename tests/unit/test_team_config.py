"""Team config beside the definitions (issue 22 item 4): `specialists/config.toml` is
committed and shared, `specialists/config.local.toml` (gitignored by `init`) and the old
`.specialists/config.toml` override it per key, workflows under `specialists/workflows/` are
found by name and a local one of the same name wins. The same layers reach the tool settings
the hooks read and the pi extension's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.catalog.config import load_config
from specialists.features.workflows.source import find_workflow, list_workflows
from specialists.fronts.cli.main import main
from specialists.fronts.pi.ops import Front
from specialists.native.tool_settings import load_settings


@pytest.fixture
def root() -> Path:
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir()
    (project / ".specialists").mkdir()
    return project


def test_layers_merge_user_team_old_local_then_local(root):
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "specialists"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('default_runner = "pi"\ndefault_model = "a/user"\n')
    (root / "specialists" / "config.toml").write_text(
        'default_model = "b/team"\n[bash]\nguard = "warn"\nsleepLimitSec = 30\n'
    )
    config = load_config(root)
    assert (config.default_runner, config.default_model) == ("pi", "b/team")
    (root / ".specialists" / "config.toml").write_text('default_model = "c/old-local"\n')
    assert load_config(root).default_model == "c/old-local"
    (root / "specialists" / "config.local.toml").write_text(
        'default_model = "d/local"\n[bash]\nsleepLimitSec = 5\n'
    )
    config = load_config(root)
    assert config.default_model == "d/local"
    assert config.raw["bash"] == {"guard": "warn", "sleepLimitSec": 5}  # merged per key
    settings, _, problem = load_settings(root)
    assert problem is None
    assert (settings.bash.guard, settings.bash.sleep_limit_sec) == ("warn", 5)
    assert Front(root / ".specialists", "pi-1", root).settings == settings


def test_a_bad_team_file_is_named_in_one_line(root):
    (root / "specialists" / "config.toml").write_text('default_runner = "nope"\n')
    with pytest.raises(ConfigError, match=r"specialists/config.toml: default_runner"):
        load_config(root)
    (root / "specialists" / "config.toml").write_text("[bash]\nguard = 'maybe'\n")
    settings, _, problem = load_settings(root)
    assert settings.bash.guard == "block" and problem is not None
    assert "specialists/config.toml" in problem and "using the default settings" in problem
    os.unlink(root / "specialists" / "config.toml")
    os.mkfifo(root / "specialists" / "config.toml")  # a FIFO never hangs a hook
    _, _, problem = load_settings(root)
    assert problem is not None and "not a regular file" in problem


def test_team_workflows_are_found_and_a_local_one_wins(root):
    team = root / "specialists" / "workflows"
    team.mkdir()
    (team / "fan.yaml").write_text("steps:\n  - run: {key: a, agent: echo, task: x}\n")
    (team / "review_and_fix.yaml").write_text("steps: []\n")  # shadows the recipe
    assert find_workflow(root, "fan").path == str((team / "fan.yaml").resolve())
    assert dict(list_workflows(root))["review_and_fix"] == str(team / "review_and_fix.yaml")
    local = root / ".specialists" / "workflows"
    local.mkdir()
    (local / "fan.py").write_text("async def main(runs, args):\n    return 1\n")
    assert find_workflow(root, "fan").kind == "python"
    assert dict(list_workflows(root))["fan"] == str(local / "fan.py")


def test_init_gitignores_the_local_file_not_the_team_one(root, capsys):
    assert main(["init", "--no-register"]) == 0
    lines = (root / ".gitignore").read_text().splitlines()
    assert ".specialists/" in lines and "specialists/config.local.toml" in lines
    assert "specialists/" not in lines and "specialists/config.toml" not in lines
    capsys.readouterr()
