"""Which Node runs a Node CLI (pi): one at least as new as the CLI's package asks for.

pi 1.x needs Node >= 22.19 (its package.json `engines.node`); started through its
`#!/usr/bin/env node` line it gets whatever `node` comes first on PATH, and an older one
fails with a SyntaxError nobody can read. So we choose the Node ourselves and start
`[node, script]`. Candidates, first usable wins:

1. `$SPECIALISTS_NODE` (a person chose it: if it is too old, that is the error);
2. `node` beside the script's launcher (`.tools/node_modules/.bin/node`, where
   scripts/setup puts a Node from the npm registry when the machine's is older);
3. `node` on PATH.

A version is asked once per binary (`node --version`, 4 ms of a run): kept by path, size and
mtime in this process and in the state directory's `cache/nodes.json` (store/kinds.py), so a
run asks only for a Node it has not seen. A cache that cannot be read or written costs the
question, never the run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from specialists.base.errors import AgentUnavailable, StoreError
from specialists.base.tuples import NamedTuple
from specialists.process.lookup import which
from specialists.store.files import read_bytes

NODE_ENV = "SPECIALISTS_NODE"
Version = tuple[int, int, int]
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_MIN_RANGE = re.compile(r">=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_PACKAGE_DEPTH = 6
_cache: dict[tuple[str, int, int], Version | None] = {}
NODES_DOC = "nodes"
_KEPT_NODES = 16  # binaries remembered in nodes.json (a Node moved each day leaves it)


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
        try:  # a regular file only, through a link or not: never a FIFO or /dev/zero
            data = json.loads(read_bytes(directory / "package.json", 1 << 20, follow=True))
        except (OSError, StoreError, ValueError):  # none here: look a directory up
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


def node_version(node: str, state: Path | None = None) -> Version | None:
    """`node --version` of this binary; None when it does not run. Kept by path, size and
    mtime, here and in `state`'s cache (the module docstring)."""
    try:
        st = os.stat(node)
    except OSError:
        return None
    key = (node, st.st_size, st.st_mtime_ns)
    if key not in _cache:
        kept = _kept(state)
        seen = kept.get(node)
        mine = isinstance(seen, list) and len(seen) == 3 and seen[:2] == [*key[1:]]
        version = _version_of(seen[2]) if isinstance(seen, list) and mine else None
        _cache[key] = version or _ask(node, key, kept, state)
    return _cache[key]


def _ask(
    node: str, key: tuple[str, int, int], kept: dict[str, object], state: Path | None
) -> Version | None:
    from specialists.process.short import run_short

    result = run_short([node, "--version"], timeout=30)
    version = parse_version(result.stdout) if result.ok else None
    if version is not None:  # one that did not run (a timeout?) is asked again next time
        others = dict(list(kept.items())[1 - _KEPT_NODES :])
        _keep(state, {**others, node: [*key[1:], list(version)]})
    return version


def _version_of(kept: object) -> Version | None:
    """A kept answer: three ints (None for anything else: asked again)."""
    if isinstance(kept, list) and len(kept) == 3 and all(type(n) is int for n in kept):
        return (kept[0], kept[1], kept[2])
    return None


def _kept(state: Path | None) -> dict[str, object]:
    """nodes.json's binaries ({} when there is none, or it is damaged or planted)."""
    if state is None:
        return {}
    from specialists.base.errors import StoreError
    from specialists.store.kinds import DEFINITIONS

    try:
        doc = DEFINITIONS.record(state / "cache").read(NODES_DOC, schema=1)
    except (OSError, StoreError) as exc:
        _said(f"Node versions not read: {exc}")
        return {}
    nodes = doc.get("nodes") if doc is not None else None
    return nodes if isinstance(nodes, dict) else {}


def _keep(state: Path | None, nodes: dict[str, object]) -> None:
    if state is None or not state.is_dir():  # no state directory yet: nothing is made
        return
    from specialists.base.errors import StoreError
    from specialists.store.kinds import DEFINITIONS

    record = DEFINITIONS.record(state / "cache")
    try:
        record.ensure()
        record.replace(NODES_DOC, {"schema": 1, "nodes": nodes})
    except (OSError, StoreError) as exc:  # a full disk, a planted link: asked again
        _said(f"Node versions not kept: {exc}")


def _said(problem: str) -> None:
    """A cache problem, logged (it costs a `node --version`, never a run)."""
    import logging

    logging.getLogger("specialists.process").info(problem)


def choose_node(script: str, env: Mapping[str, str], who: str, state: Path | None = None) -> str:
    """The Node to run `script` with, or AgentUnavailable naming what was found and needed
    (`state`: the state directory whose cache keeps the versions asked)."""
    package = package_of(script)
    needs = package.needs if package else None
    what = f"{who} {package.version}" if package else who
    configured = env.get(NODE_ENV)
    if configured:
        candidates = [configured]
    else:
        beside = os.path.join(os.path.dirname(script), "node")
        on_path = which("node", env.get("PATH", os.defpath))
        candidates = [c for c in (beside, on_path) if c and os.access(c, os.X_OK)]
    seen: list[str] = []
    for node in dict.fromkeys(candidates):
        version = node_version(node, state)
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
