"""What `specialists agents` recorded per scope: disabled names, and the files it wrote.

    <root>/.specialists/agents.json                       project scope (this checkout)
    $XDG_CONFIG_HOME/specialists/agents.json              user scope

    {"schema": 1,
     "agents": {"reviewer": {"disabled": true}},
     "written": {"/abs/path/reviewer.specialist.yaml": "<sha256 of the bytes we wrote>"}}

`disabled` hides a name from discovery, reversibly; the project's entry wins over the
user's (`"disabled": false` in the project undoes a user-scope disable). `written` is how
a file a person wrote is told apart from one we wrote: a definition may be changed or removed
by `agents update / delete / reset` only while its bytes still hash to what we recorded, so
a hand-written file, or one edited since, is never clobbered. This module only reads; the
manage room writes (catalog stays at the floor: no atomic writer here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

SETTINGS_FILE = "agents.json"
SCHEMA = 1
MAX_SETTINGS = 1 << 20

WritableScope = Literal["project", "user"]


def settings_path(scope: WritableScope, project_root: Path) -> Path:
    if scope == "project":
        return project_root / ".specialists" / SETTINGS_FILE
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "specialists" / SETTINGS_FILE


class ManagedSettings:
    __slots__ = ("disabled", "problem", "written")

    def __init__(self, problem: str | None = None) -> None:
        self.disabled: dict[str, bool] = {}  # name -> disabled (False: undone)
        self.written: dict[str, str] = {}  # absolute path -> sha256
        self.problem = problem  # why the file could not be read (then it counts as empty)


def read_settings(path: Path) -> ManagedSettings:
    """The settings at `path`; a missing file is empty, a damaged one says why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ManagedSettings()
    except OSError as exc:
        return ManagedSettings(problem=f"cannot read: {exc.strerror or exc}")
    try:
        if not _is_regular(fd):
            return ManagedSettings(problem="not a regular file")
        raw = os.read(fd, MAX_SETTINGS + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_SETTINGS:
        return ManagedSettings(problem=f"larger than {MAX_SETTINGS} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return ManagedSettings(problem=f"not valid JSON ({str(exc)[:80]})")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return ManagedSettings(problem=f"not a schema {SCHEMA} agents file")
    out = ManagedSettings()
    agents, written = data.get("agents", {}), data.get("written", {})
    if isinstance(agents, dict):
        for name, entry in agents.items():
            if isinstance(entry, dict) and isinstance(entry.get("disabled"), bool):
                out.disabled[str(name)] = entry["disabled"]
    if isinstance(written, dict):
        out.written = {str(k): v for k, v in written.items() if isinstance(v, str)}
    return out


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def disabled_names(
    project_root: Path,
) -> tuple[dict[str, WritableScope], list[tuple[Path, str]]]:
    """Name -> the scope whose entry disables it (project over user); and read problems."""
    paths = [settings_path(scope, project_root) for scope in ("project", "user")]
    project, user = (read_settings(path) for path in paths)
    problems = [(p, s.problem) for p, s in zip(paths, (project, user), strict=True) if s.problem]
    found: dict[str, WritableScope] = {}
    for name, off in user.disabled.items():
        if off:
            found[name] = "user"
    for name, off in project.disabled.items():
        if off:
            found[name] = "project"
        else:
            found.pop(name, None)
    return found, problems


def digest(data: bytes) -> str:
    import hashlib  # only for a file `agents` wrote

    return hashlib.sha256(data).hexdigest()


# --- refinement overlays (written by manage/refine.py) ---------------------------------------

REFINEMENTS_DIR = "refinements"
MAX_OVERLAY = 4096
OVERLAY_HEADER = "## Project guidance for this agent (refinement overlay, revision {n})"


def overlay_dir(project_root: Path, name: str) -> Path:
    return project_root / ".specialists" / REFINEMENTS_DIR / name


def read_overlay(project_root: Path, name: str) -> tuple[int, str] | None:
    """The current overlay of `name`: (revision, text), or None. Never raises: a damaged or
    oversized overlay is simply not applied (`agents refine-show` says why)."""
    path = overlay_dir(project_root, name) / "current.md"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not _is_regular(fd):
            return None
        raw = os.read(fd, MAX_OVERLAY + 256)
    finally:
        os.close(fd)
    head, _, body = raw.partition(b"\n")
    try:
        revision = int(head.decode().removeprefix("revision "))
        text = body.decode("utf-8")
    except ValueError:
        return None
    if len(body) > MAX_OVERLAY or not text.strip():
        return None
    return revision, text.strip()


def with_overlay(system_prompt: str, project_root: Path, name: str) -> str:
    """`system_prompt` with the agent's project overlay appended, when there is one."""
    overlay = read_overlay(project_root, name)
    if overlay is None:
        return system_prompt
    revision, text = overlay
    section = f"{OVERLAY_HEADER.format(n=revision)}\n{text}\n"
    return f"{system_prompt.rstrip()}\n\n{section}" if system_prompt.strip() else section
