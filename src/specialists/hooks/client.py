"""Which Claude Code runs this hook, as far as the Stop hook's reply depends on it.

Claude Code 2.1.332 takes `hookSpecificOutput.additionalContext` from a Stop hook as
non-error feedback: the conversation goes on and the person sees no "Stop hook error"
(verified on the real binary, tests/integration/test_claude_wake.py). 2.1.197 does not know
it: it would end the turn, and the events handed over would be acknowledged yet never read.
So the reply depends on the version, which the hook finds without starting anything:
Claude Code gives its hooks CLAUDE_PID; /proc/<pid>/exe is its binary; the npm
package.json above the binary's real path (or a `versions/<x.y.z>` directory, the native
installer's layout) says its version. Unknown means the old way (`decision: block`), which
every version reads.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

PID_ENV = "CLAUDE_PID"
STOP_CONTEXT_SINCE = (2, 1, 332)  # the first version verified to take it (2.1.197 does not)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_NATIVE = re.compile(r"/claude[^/]*/versions/(\d+)\.(\d+)\.(\d+)$")  # native installer
_PACKAGE_LEVELS = 3


def claude_version(env: Mapping[str, str] | None = None) -> tuple[int, ...] | None:
    pid = (os.environ if env is None else env).get(PID_ENV, "")
    if not pid.isdigit():
        return None
    try:
        exe = os.path.realpath(f"/proc/{pid}/exe")
    except (OSError, ValueError):
        return None
    here = os.path.dirname(exe)
    for _ in range(_PACKAGE_LEVELS):
        version = _package_version(os.path.join(here, "package.json"))
        if version is not None:
            return version
        here = os.path.dirname(here)
    found = _NATIVE.search(exe)
    return tuple(int(part) for part in found.groups()) if found else None


def _package_version(path: str) -> tuple[int, ...] | None:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(64 * 1024))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("name") != "@anthropic-ai/claude-code":
        return None
    found = _VERSION.search(str(data.get("version", "")))
    return tuple(int(part) for part in found.groups()) if found else None


def stop_wake_reply(text: str, version: tuple[int, ...] | None) -> dict[str, object]:
    """How a Stop hook hands the model `text` and keeps the session going."""
    if version is not None and version >= STOP_CONTEXT_SINCE:
        return {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": text}}
    return {"decision": "block", "reason": text}
