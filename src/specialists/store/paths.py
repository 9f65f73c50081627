"""Where things live: the project root, the .specialists/ directory, user config dirs.

The root is found as text, with `os.path`: `status` waits on it, and `pathlib` (with
`urllib.parse` and `ipaddress`) costs a third of its CPU over a bare interpreter's."""

from __future__ import annotations

import os

from specialists.base.errors import UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

STATE_DIR_NAME = ".specialists"
SANDBOXES_DIR = "sandboxes"  # the sandbox worktrees and their records (features/sandbox)
CLAIMS_DIR = "claims"  # the file claims (store/claims.py): looked for before it loads


def find_project_root(start: str | os.PathLike[str] | None = None) -> str:
    """The nearest ancestor holding .specialists/ or .git; else the start directory.

    SPECIALISTS_PROJECT_ROOT overrides the search (tests, scripts, odd layouts).
    """
    override = os.environ.get("SPECIALISTS_PROJECT_ROOT")
    if override:
        return os.path.realpath(override)
    here = candidate = os.path.realpath(start or _working_directory())
    while True:
        if os.path.isdir(os.path.join(candidate, STATE_DIR_NAME)) or os.path.exists(
            os.path.join(candidate, ".git")
        ):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return here
        candidate = parent


def _working_directory() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # removed under the shell: say so, not "[Errno 2]" and exit 4
        raise UserError(
            "the working directory no longer exists",
            hint="cd to a directory that exists, or set SPECIALISTS_PROJECT_ROOT",
        ) from None


def state_dir(project_root: Path) -> Path:
    return project_root / STATE_DIR_NAME


TEAM_DIR = "specialists"  # committed: definitions, the team config, workflows
CONFIG_NAME = "config.toml"
LOCAL_CONFIG_NAME = "config.local.toml"


def project_config_files(project_root: str | os.PathLike[str]) -> tuple[str, str, str]:
    """The project's config files, lowest precedence first: the team's (committed beside the
    definitions), the local one's old place in the state dir, and the local one beside the
    team's (`init` gitignores it), as Claude Code has settings.json and settings.local.json."""
    join = os.path.join
    return (
        join(project_root, TEAM_DIR, CONFIG_NAME),
        join(project_root, STATE_DIR_NAME, CONFIG_NAME),
        join(project_root, TEAM_DIR, LOCAL_CONFIG_NAME),
    )


def user_config_dir() -> str:
    """$XDG_CONFIG_HOME/specialists (default ~/.config/specialists)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(base, "specialists")


def user_state_dir() -> str:
    """$XDG_STATE_HOME/specialists (default ~/.local/state/specialists): logs, breakers."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "specialists")
