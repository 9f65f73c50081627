"""Which Node runs a Node CLI (pi): one at least as new as the CLI's package asks for.

pi 1.x needs Node >= 22.19 (its package.json `engines.node`); started through its
`#!/usr/bin/env node` line it gets whatever `node` comes first on PATH, and an older one
fails with a SyntaxError nobody can read. So we choose the Node ourselves and start
`[node, script]`. Candidates, first usable wins:

1. `$SPECIALISTS_NODE` (a person chose it: if it is too old, that is the error);
2. `node` beside the script's launcher (`.tools/node_modules/.bin/node`, where
   scripts/setup puts a Node from the npm registry when the machine's is older);
3. `node` on PATH.

A version is asked once per binary (`node --version`, cached by path, size and mtime).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from specialists.base.errors import AgentUnavailable
from specialists.base.tuples import NamedTuple

NODE_ENV = "SPECIALISTS_NODE"
Version = tuple[int, int, int]
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_MIN_RANGE = re.compile(r">=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_PACKAGE_DEPTH = 6
_cache: dict[tuple[str, int, int], Version | None] = {}


class NodePackage(NamedTuple):
    """The npm package a Node script belongs to, and the oldest Node it accepts."""

    name: str
    version: str
    needs: Version | None


def parse_version(text: str) -> Version | None:
    found = _VERSION.search(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def shown(version: Version) -> str:
    return ".".join(map(str, version))


def package_of(script: str) -> NodePackage | None:
    """The package.json above the script's real path (an npm `.bin` entry is a symlink)."""
    try:
        here = Path(os.path.realpath(script)).parent
    except (OSError, ValueError):
        return None
    for directory in (here, *list(here.parents)[:_PACKAGE_DEPTH]):
        try:
            data = json.loads((directory / "package.json").read_bytes()[: 1 << 20])
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            continue
        engines = data.get("engines")
        wanted = engines.get("node") if isinstance(engines, dict) else None
        return NodePackage(
            name=data["name"], version=str(data.get("version", "?")), needs=_minimum(wanted)
        )
    return None


def _minimum(wanted: object) -> Version | None:
    if not isinstance(wanted, str):
        return None
    found = _MIN_RANGE.search(wanted)
    if not found:
        return None
    return (int(found[1]), int(found[2] or 0), int(found[3] or 0))


def node_version(node: str) -> Version | None:
    """`node --version` of this binary (cached); None when it does not run."""
    try:
        st = os.stat(node)
    except OSError:
        return None
    key = (node, st.st_size, st.st_mtime_ns)
    if key not in _cache:
        from specialists.process.short import run_short

        result = run_short([node, "--version"], timeout=30)
        _cache[key] = parse_version(result.stdout) if result.ok else None
    return _cache[key]


def choose_node(script: str, env: Mapping[str, str], who: str) -> str:
    """The Node to run `script` with, or AgentUnavailable naming what was found and needed."""
    package = package_of(script)
    needs = package.needs if package else None
    what = f"{who} {package.version}" if package else who
    configured = env.get(NODE_ENV)
    if configured:
        candidates = [configured]
    else:
        beside = os.path.join(os.path.dirname(script), "node")
        on_path = shutil.which("node", path=env.get("PATH", os.defpath))
        candidates = [c for c in (beside, on_path) if c and os.access(c, os.X_OK)]
    seen: list[str] = []
    for node in dict.fromkeys(candidates):
        version = node_version(node)
        if version is not None and (needs is None or version >= needs):
            return node
        seen.append(f"{node} ({'v' + shown(version) if version else 'does not run'})")
    need = f"Node >= {shown(needs)}" if needs else "Node.js"
    found = "found " + ", ".join(seen) if seen else "no `node` on PATH"
    hint = f"scripts/setup puts one under .tools/; or install a newer Node, or set {NODE_ENV}"
    raise AgentUnavailable(f"{what} needs {need}; {found}", hint=hint)


def is_node_script(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first
