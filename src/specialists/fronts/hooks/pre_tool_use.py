"""PreToolUse: the bash guard (R-B1..R-B5) and default timeout (R-B4) on Bash, and the claims
guard on the file tools (Write, Edit, MultiEdit, NotebookEdit: issue 23).

    block  a command that would hold the turn (a long sleep, a follower, a dev server) is
           refused; the model reads why, which tool to use instead (bg_run, sleep) and how to
           switch the guard to warn if it is a false positive
    warn   it runs; the user sees a notice (Claude Code shows `systemMessage` to the user only)
    off    nothing, not even the timeout

A Bash call without `timeout` (and not `run_in_background`) gets bash.defaultTimeoutSec, in
the milliseconds Claude Code's Bash tool takes, at most its 600,000. Registered with the
matcher "Bash"; any other tool is left alone. See hooks/guarding.py for what Claude Code
2.1.197 lets a hook do. A write of a file another live job claimed is denied with the
holder's name (hooks/guarding.py `claims_decision`); the session writing is not one of our
jobs, so every live job's claim counts.
"""

from __future__ import annotations

from specialists.fronts.hooks.common import write_reply
from specialists.fronts.hooks.guarding import (
    FILE_TOOLS,
    bash_decision,
    claims_decision,
    load_settings,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO


def run(data: dict[str, Any], state_dir: str, out: TextIO) -> None:
    tool_input = data.get("tool_input")
    name = data.get("tool_name")
    if not isinstance(tool_input, dict):
        return
    if name in FILE_TOOLS:
        reply = claims_decision(str(name), tool_input, state_dir, data.get("cwd"))
    elif name == "Bash":
        reply = bash_decision(tool_input, load_settings(state_dir, "pre-tool-use"))
    else:
        return
    if reply is not None:
        write_reply(out, reply)
