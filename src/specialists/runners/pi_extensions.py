"""Which pi extensions a specialist's pi loads: none of the user's, except those chosen.

pi always runs with `--no-extensions`: an extension the user installed for their own
sessions could open a dialog nobody answers, or block edits for want of a claim only the
orchestrator's session holds (seed 002, decision 3). Chosen extensions come back with
`-e <path>`, which pi loads even under `--no-extensions` (0.73.1 and 1.6.0).

The choice, from the runner options (`execution.runner.extensions` in the definition, over
`[runners.pi] extensions` in config.toml):

- absent: the seed's policy: `quality-gates` when the tier may write (every tier but
  READ_ONLY) and `service-skills`, each only when installed;
- a list: exactly these. A bare name is looked up in pi's extension directory
  (`$PI_CODING_AGENT_DIR/extensions`, else `~/.pi/agent/extensions`) as `<name>/`,
  `<name>.ts` or `<name>.js`; anything with a `/` (or starting with `~`) is a path, relative
  to the job's working directory. One that is not there is skipped with a notice;
- an empty list: none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specialists.errors import ConfigError

QUALITY_GATES = "quality-gates"
SERVICE_SKILLS = "service-skills"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def pi_agent_dir(env: Mapping[str, str]) -> Path:
    """pi's own config directory, as pi finds it (0.73.1's config.js getAgentDir; 1.6.0 reads
    the same PI_CODING_AGENT_DIR, which every test's models.json relies on)."""
    configured = env.get(AGENT_DIR_ENV)
    home = Path(env.get("HOME") or Path.home())
    if configured:
        if configured == "~" or configured.startswith("~/"):
            return home / configured[2:]
        return Path(configured)
    return home / ".pi" / "agent"


def installed_extension(agent_dir: Path, name: str) -> Path | None:
    base = agent_dir / "extensions"
    for candidate in (base / name, base / f"{name}.ts", base / f"{name}.js"):
        if candidate.exists():
            return candidate
    return None


def chosen_extensions(
    options: Mapping[str, Any], permission: str, env: Mapping[str, str], cwd: Path
) -> tuple[list[Path], list[str]]:
    """(extension paths for `-e`, notices about chosen ones that are missing)."""
    agent_dir = pi_agent_dir(env)
    configured = options.get("extensions")
    if configured is None:
        names = [QUALITY_GATES] if permission != "READ_ONLY" else []
        names.append(SERVICE_SKILLS)
        found = (installed_extension(agent_dir, name) for name in names)
        return [path for path in found if path is not None], []
    paths: list[Path] = []
    notices: list[str] = []
    for entry in _entries(configured):
        if "/" in entry or entry.startswith("~"):
            path = Path(os.path.expanduser(entry))
            path = path if path.is_absolute() else cwd / path
            located = path if path.exists() else None
        else:
            located = installed_extension(agent_dir, entry)
        if located is None:
            notices.append(f"pi extension {entry!r} not found; skipped")
        else:
            paths.append(located)
    return paths, notices


def _entries(configured: object) -> Sequence[str]:
    if isinstance(configured, list | tuple) and all(isinstance(e, str) and e for e in configured):
        return list(configured)
    raise ConfigError(
        "pi runner: extensions must be a list of extension names or paths",
        hint="e.g. runner: {type: pi, extensions: [quality-gates, ./tools/my-ext.ts]}",
    )
