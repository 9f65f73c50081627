"""`specialists doctor`: do the entry points `init` and `install` wrote still run?

.mcp.json, Claude Code's hooks and pi's settings name the interpreter that ran `install`
(install.py). A virtualenv moved or removed since leaves them pointing at nothing: Claude
Code then shows "hook error" and a failed MCP server, pi a sidecar that does not start. This
reads what the project's and the user's files name and says, for each interpreter, whether
it is there and can import specialists; an older install's bare `specialists` depends on
PATH and is reported too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists import install
from specialists.pi_extension import install as pi_install


@dataclass(frozen=True)
class EntryPoint:
    where: str  # the file, shown to the person
    what: str  # "MCP server specialists", "Stop hook", "pi sidecar", ...
    python: str | None  # None: a bare `specialists`, found on PATH when it runs


@dataclass(frozen=True)
class Finding:
    python: str | None
    used_by: list[str]  # "where: what" of each entry point that runs it
    problem: str | None  # None: it runs

    def line(self) -> str:
        if self.problem is not None:
            return self.problem
        return f"{self.python} ({', '.join(self.used_by)})"


def entry_points(root: Path) -> tuple[list[EntryPoint], list[str]]:
    """What the project's and the user's files name; problems reading them."""
    found: list[EntryPoint] = []
    problems: list[str] = []
    for targets in (install.project_targets(root), install.user_targets()):
        for path, read in ((targets.mcp_file, _mcp), (targets.settings_file, _hooks)):
            _collect(path, targets.show(path), read, found, problems)
    for path, shown in (
        (pi_install.project_settings(root), ".pi/settings.json"),
        (pi_install.user_settings(), str(pi_install.user_settings())),
    ):
        _collect(path, shown, _pi, found, problems)
    return found, problems


def _collect(
    path: Path,
    shown: str,
    read: Callable[[dict[str, Any], str], list[EntryPoint]],
    found: list[EntryPoint],
    problems: list[str],
) -> None:
    from specialists.errors import UserError

    try:
        doc = install.load_json_object(path)
    except UserError as exc:
        problems.append(exc.one_line())
        return
    if doc is not None:
        found.extend(read(doc, shown))


def _mcp(doc: dict[str, Any], shown: str) -> list[EntryPoint]:
    servers = doc.get("mcpServers")
    if not isinstance(servers, dict):
        return []
    return [
        EntryPoint(shown, f"MCP server {name}", _python_of(entry))
        for name, entry in servers.items()
        if install.is_ours_mcp(entry)
    ]


def _python_of(entry: dict[str, Any]) -> str | None:
    return None if entry.get("args") == ["mcp"] else str(entry.get("command"))


def _hooks(doc: dict[str, Any], shown: str) -> list[EntryPoint]:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return []
    out = []
    for hook in install.HOOKS:
        groups = hooks.get(hook.event)
        if isinstance(groups, list):
            out += [
                EntryPoint(shown, f"{hook.event} hook", install.command_python(h["command"]))
                for h in install.our_hooks(groups, hook)
            ]
    return out


def _pi(doc: dict[str, Any], shown: str) -> list[EntryPoint]:
    ours = doc.get(pi_install.KEY)
    argv = ours.get("sidecar") if isinstance(ours, dict) else None
    extensions = doc.get("extensions")
    out = []
    if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
        out.append(EntryPoint(shown, "pi sidecar", argv[0]))
    elif isinstance(extensions, list) and any(pi_install.is_ours(e) for e in extensions):
        out.append(EntryPoint(shown, "pi sidecar", None))  # an older install: PATH
    return out


def check(points: list[EntryPoint]) -> list[Finding]:
    """One finding per interpreter named (a bare `specialists` counts as one)."""
    by_python: dict[str | None, list[str]] = {}
    for point in points:
        by_python.setdefault(point.python, []).append(f"{point.where}: {point.what}")
    return [
        Finding(python, used_by, _problem(python, used_by)) for python, used_by in by_python.items()
    ]


def _problem(python: str | None, used_by: list[str]) -> str | None:
    what = ", ".join(used_by)
    again = (
        "run `specialists init` (and `specialists install --pi` for pi) again from the "
        "specialists you use"
    )
    if python is None:
        return (
            f"{what} run a bare `specialists`, found only if the client's PATH has it "
            f"(an older install): {again}"
        )
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return f"{what}: {python} is gone (a moved or removed virtualenv?): {again}"
    if python == install.this_python():
        return None
    from specialists.process.short import run_short

    out = run_short([python, "-c", "import specialists"], timeout=30)
    if out.error is not None:
        return f"{what}: {python} does not start ({out.error}): {again}"
    if out.code != 0:
        return f"{what}: {python} cannot import specialists: {again}"
    return None
