"""The one health line `specialists status` starts with (seed 000, section 3.2):

    specialists: 12 found · pi 0.73.1 · claude 2.1.197 · codex missing · beads off · MCP: project

`status` must stay fast, so nothing here starts a process, imports the catalog (YAML) or
even `shutil`: specialists are counted by definition file name (as the session-start hook
does), agent CLIs are found on PATH by process/lookup.py's `which` and their versions read
from the package.json beside the binary, and the one slow read, the user's ~/.claude.json
(often megabytes), is cached by size and modification time in
$XDG_STATE_HOME/specialists/health.json.
`specialists doctor` is the thorough check; this line is a glance. Every file it reads may
be planted (a project's .mcp.json may be a link to /dev/zero): only regular files are read,
and none past its size limit. Paths are text (`os.path`): `pathlib` would cost `status` a
fifth of its time.
"""

from __future__ import annotations

import json
import os

from specialists.base.errors import StoreError
from specialists.fronts.hooks.names import specialist_names
from specialists.process.lookup import which
from specialists.store.atomic import write_atomic
from specialists.store.files import read_bytes
from specialists.store.paths import user_state_dir

AGENTS = ("pi", "claude", "codex")
BIN_ENVS = {n: f"SPECIALISTS_{n.upper()}_BIN" for n in AGENTS}  # as each runner's BIN_ENV
BD_ENV = "SPECIALISTS_BD_BIN"  # as beads.BD_ENV
CACHE_NAME = "health.json"
MCP_NAME = "specialists"  # as install.MCP_NAME; a test keeps them equal
MAX_JSON_BYTES = 64 * 1024 * 1024  # ~/.claude.json runs to megabytes (install reads it too)


def agent_version(binary: str) -> str | None:
    """The npm package version of an agent CLI, from the package.json above its real path."""
    try:
        directory = os.path.realpath(binary)
    except (OSError, ValueError):
        return None
    for _ in range(4):  # the binary's directory and three above it
        directory = os.path.dirname(directory)
        data = _read_json(os.path.join(directory, "package.json"), 256 * 1024)
        if data is None:
            continue
        version = data.get("version") if isinstance(data, dict) else None
        return version if isinstance(version, str) and len(version) < 40 else None
    return None


def _agents() -> dict[str, dict[str, str | None]]:
    """Each agent CLI as `doctor --json` names it: its path and version (None: not found)."""
    found: dict[str, dict[str, str | None]] = {}
    for name in AGENTS:
        path = which(os.environ.get(BIN_ENVS[name]) or name)
        found[name] = {"path": path, "version": agent_version(path) if path else None}
    return found


def _beads(root: str) -> str:
    """off (no bd), on, or no-project (bd, but no .beads/ here)."""
    # As beads.client.bd_path, without importing the beads package.
    if which(os.environ.get(BD_ENV) or "bd") is None:
        return "off"
    return "on" if os.environ.get("BEADS_DIR") or _beads_above(root) else "no-project"


def _beads_above(directory: str) -> bool:
    while not os.path.isdir(os.path.join(directory, ".beads")):
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent
    return True


def _read_json(path: str, limit: int) -> object:
    """A small JSON file, or None when it is missing, damaged, too large or not a regular
    file (not ours to judge here: `doctor` and `install` say more). A FIFO planted at a
    project's .mcp.json once hung `status`; a link, as a dotfile manager makes, is read."""
    try:
        return json.loads(read_bytes(path, limit, follow=True))
    except (OSError, StoreError, ValueError, RecursionError):  # "[[[[..." too deep
        return None


def _registered(path: str) -> bool:
    data = _read_json(path, MAX_JSON_BYTES)
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return isinstance(servers, dict) and MCP_NAME in servers


def user_claude_json() -> str:
    """As install.user_targets(): $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json."""
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~")
    return os.path.join(config, ".claude.json")


def _user_registered() -> bool:
    """Whether ~/.claude.json names our server; cached by the file's size and mtime."""
    path = user_claude_json()
    try:
        st = os.stat(path)
    except OSError:
        return False
    stamp = [st.st_size, st.st_mtime_ns]
    cache_dir = user_state_dir()
    cache = os.path.join(cache_dir, CACHE_NAME)
    cached = _read_json(cache, 4096)
    if isinstance(cached, dict) and cached.get("claude_json") == [path, *stamp]:
        return cached.get("registered") is True
    registered = _registered(path)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        doc = {"claude_json": [path, *stamp], "registered": registered}
        write_atomic(cache, json.dumps(doc).encode())
    except OSError:
        return registered  # a read-only state dir only costs the next status the same read
    return registered


def _mcp(root: str) -> str | None:
    """Where our MCP server is registered: project, user, or None."""
    if _registered(os.path.join(root, ".mcp.json")):
        return "project"
    return "user" if _user_registered() else None


def health(root: str) -> dict[str, object]:
    """The facts of the health line, for `status --json`: specialists found, the agent CLIs,
    beads, where the MCP server is registered."""
    return {
        "specialists": len(specialist_names(root)),
        "agents": _agents(),
        "beads": _beads(root),
        "mcp": _mcp(root),
    }


def health_line(facts: dict[str, object]) -> str:
    """`specialists: 8 found · pi 0.73.1 · claude missing · ... · MCP: project`."""
    agents = facts["agents"]
    assert isinstance(agents, dict), "bug: health facts without agents"
    parts = [f"specialists: {facts['specialists']} found"]
    for name, found in agents.items():
        parts.append(
            f"{name} {found['version'] or 'found'}" if found["path"] else f"{name} missing"
        )
    beads = {"off": "beads off", "on": "beads on"}.get(str(facts["beads"]), "beads: no .beads/")
    mcp = facts["mcp"]
    parts += [beads, f"MCP: {mcp}" if mcp else "MCP: not registered (specialists install)"]
    return " · ".join(parts)
