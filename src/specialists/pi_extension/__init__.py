"""The pi front: a pi extension (TypeScript, shipped here as package data) and its sidecar.

pi loads `index.ts` (`pi -e <path>`, or `specialists install --pi`). The extension starts one
`specialists sidecar` per pi session and speaks JSON lines with it: the sidecar lists the
tools of the agent tool table, runs them for the session's owner, classifies bash commands,
bounds oversized tool results and pushes the owner's inbox events, which the extension
delivers as steer messages and acknowledges once pi accepted them. Everything the rules
need (inboxes, timers, guards, tools) stays in Python; the extension only adapts pi's API.

    index.ts      the pi wiring (tools, handlers, command, status line, renderer)
    core.mjs      the extension's pure logic, testable with plain node (tests/node/)
    delivery.mjs  at-least-once event delivery into pi (pure, beside core.mjs)
    sidecar.py    the sidecar's I/O: framing, dispatch, the push loop
    ops.py        what each request does, on the core rooms
    install.py    `specialists install --pi`: pi's settings.json `extensions` entry
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EXTENSION_DIR = Path(__file__).resolve().parent
EXTENSION_FILE = EXTENSION_DIR / "index.ts"
CMD_ENV = "SPECIALISTS_CMD"  # how the extension starts the sidecar (core.mjs sidecarCommand)
LOG_ENV = "SPECIALISTS_PI_LOG"  # where the extension logs (core.mjs logPath)


def for_pi_job(permission: str, thread: bool) -> tuple[list[str], dict[str, str], list[str]]:
    """What a pi job needs to load us: `-e <index.ts>`, a sidecar command that is this very
    Python (a job must not depend on `specialists` being on PATH), and the names of the tools
    its tier and place are offered (toolset/tiers.py), which pi's `--tools` must list or it
    leaves extension tools inactive (verified on 1.6.0; so pi keeps any other one inactive)."""
    from specialists.toolset.registry import offered

    env = {CMD_ENV: json.dumps([sys.executable, "-m", "specialists"])}
    names = [t.name for t in offered(thread=thread, tier=permission, env={})]
    return ["-e", str(EXTENSION_FILE)], env, names
