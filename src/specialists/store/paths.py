"""Where things live: the project root, the .specialists/ directory, user config dirs."""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR_NAME = ".specialists"
SANDBOXES_DIR = "sandboxes"  # the sandbox worktrees and their records (features/sandbox)
CLAIMS_DIR = "claims"  # the file claims (store/claims.py): looked for before it loads


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding .specialists/ or .git; else the start directory.

    SPECIALISTS_PROJECT_ROOT overrides the search (tests, scripts, odd layouts).
    """
    override = os.environ.get("SPECIALISTS_PROJECT_ROOT")
    if override:
        return Path(override).resolve()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / STATE_DIR_NAME).is_dir() or (candidate / ".git").exists():
            return candidate
    return here


def state_dir(project_root: Path) -> Path:
    return project_root / STATE_DIR_NAME


TEAM_DIR = "specialists"  # committed: definitions, the team config, workflows
CONFIG_NAME = "config.toml"
LOCAL_CONFIG_NAME = "config.local.toml"


def project_config_files(project_root: Path) -> tuple[Path, Path, Path]:
    """The project's config files, lowest precedence first: the team's (committed beside the
    definitions), the local one's old place in the state dir, and the local one beside the
    team's (`init` gitignores it), as Claude Code has settings.json and settings.local.json."""
    return (
        project_root / TEAM_DIR / CONFIG_NAME,
        state_dir(project_root) / CONFIG_NAME,
        project_root / TEAM_DIR / LOCAL_CONFIG_NAME,
    )


def user_config_dir() -> Path:
    """$XDG_CONFIG_HOME/specialists (default ~/.config/specialists)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "specialists"


def user_state_dir() -> Path:
    """$XDG_STATE_HOME/specialists (default ~/.local/state/specialists): logs, breakers."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "specialists"
