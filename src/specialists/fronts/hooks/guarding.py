"""The two guards (native/guards.py) in Claude Code's PreToolUse and PostToolUse hooks.

What Claude Code 2.1.197 lets a hook do, checked against the binary and by running it:

- PreToolUse `permissionDecision: "deny"` refuses the call; the model reads
  `permissionDecisionReason` as the tool's error result. `updatedInput` without a
  permission decision replaces the tool's input and leaves the permission check as it was
  (so setting a timeout never grants a Bash call the user would have been asked about).
  `systemMessage` is shown to the user, never to the model.
- PostToolUse `updatedToolOutput` replaces a result before the model sees it: for MCP tools
  as MCP content blocks; for built-in tools only in that tool's own output shape (Bash:
  `{stdout, stderr, interrupted, ...}`), otherwise Claude Code keeps the original.

So the bash guard covers the Bash tool, the claims guard the file tools (a `deny` naming the
claim's holder), and the result guard covers every MCP tool (any server's) and Bash. Other
built-in tools are bounded by Claude Code itself (Bash output, for one, is cut at 30,000
characters and the rest saved to a file before a hook sees it).
"""

from __future__ import annotations

import os

from specialists.fronts.hooks.common import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from specialists.native.tool_settings import Settings

DEFAULT_MAX_CHARS = 40_000  # overflow.maxChars unless config.toml says otherwise
MAX_BASH_TIMEOUT_MS = 600_000  # Claude Code's Bash tool refuses more (BASH_MAX_TIMEOUT_MS)
# Claude Code's tools that write one file, and the input field naming it.
FILE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}


def has_config(state_dir: str) -> bool:
    """A config file that may change a setting: the user's or one of the project's (the
    layers catalog/config.py `config_paths` reads)."""
    from specialists.store.paths import CONFIG_NAME, project_config_files, user_config_dir

    project = project_config_files(os.path.dirname(state_dir))
    return any(map(os.path.lexists, (os.path.join(user_config_dir(), CONFIG_NAME), *project)))


def load_settings(state_dir: str, event: str) -> Settings:
    """The [bash] and [overflow] knobs (native.tool_settings.load_settings: the user's and the
    project's config.toml). A wrong value is logged and the defaults apply; unknown keys
    are not logged here: a hook runs at every tool call, and the fronts a person reads
    (`run`, the MCP server, the pi sidecar) name them once."""
    from specialists.native.tool_settings import Settings

    if not has_config(state_dir):
        return Settings()  # no file could change a default: nothing to read or parse
    from pathlib import Path

    from specialists.native.tool_settings import load_settings as read_settings

    settings, _, problem = read_settings(Path(state_dir).parent)
    if problem:
        log(event, problem)
    return settings


# --- PreToolUse: the bash guard (R-B1..R-B5) -------------------------------------------------


def bash_decision(tool_input: dict[str, Any], settings: Settings) -> dict[str, Any] | None:
    """The PreToolUse reply for a Bash call, or None to say nothing."""
    bash = settings.bash
    command = tool_input.get("command")
    if bash.guard == "off" or not isinstance(command, str):
        return None
    from specialists.native.bash_guard import classify_bash

    verdict = classify_bash(command, sleep_limit_s=bash.sleep_limit_sec)
    if verdict.flagged and bash.guard == "block":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": verdict.reason,
            }
        }
    reply: dict[str, Any] = {}
    if verdict.flagged:  # warn: it runs, and the user sees why it may hold the turn
        reply["systemMessage"] = (
            f"specialists: `{verdict.pattern}` may hold this turn until it ends "
            "(bash.guard is warn; bg_run or sleep would not)"
        )
    if "timeout" not in tool_input and not tool_input.get("run_in_background"):
        timeout_ms = min(bash.default_timeout_sec * 1000, MAX_BASH_TIMEOUT_MS)  # R-B4
        if timeout_ms > 0:
            reply["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "updatedInput": {**tool_input, "timeout": timeout_ms},
            }
    return reply or None


# --- PreToolUse: the claims guard (issue 23) ---------------------------------------------------


def claims_decision(
    tool_name: str, tool_input: dict[str, Any], state_dir: str, cwd: object
) -> dict[str, Any] | None:
    """The PreToolUse reply denying a file tool's write of a file another live job claimed
    (native/guards.py `claim_refusal`), or None. Nothing is imported unless something was
    ever claimed in this project."""
    from specialists.store.paths import CLAIMS_DIR

    raw = tool_input.get(FILE_TOOLS[tool_name])
    if (
        not isinstance(raw, str)
        or not raw
        or not os.path.lexists(os.path.join(state_dir, CLAIMS_DIR))
    ):
        return None
    from pathlib import Path

    from specialists.base.owner import JOB_ENV
    from specialists.native.guards import claim_refusal

    path = Path(raw)
    if not path.is_absolute():
        path = Path(cwd if isinstance(cwd, str) and cwd else os.getcwd()) / path
    refused = claim_refusal(Path(state_dir), path, os.environ.get(JOB_ENV) or None)
    if refused is None:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": refused,
        }
    }


# --- PostToolUse: the oversized-result guard (R-O1..R-O3) ------------------------------------


def response_chars(tool_name: str, response: object) -> int:
    """How much text of a result the guard would look at (0: a tool it leaves alone)."""
    if tool_name.startswith("mcp__"):
        return sum(len(t) for t in _mcp_texts(response))
    if tool_name == "Bash" and isinstance(response, dict):
        return sum(
            len(v) for v in (response.get("stdout"), response.get("stderr")) if isinstance(v, str)
        )
    return 0


def bounded_response(
    tool_name: str, response: object, settings: Settings, spill_to: str
) -> object | None:
    """The replacement result when `response` is over overflow.maxChars, else None.

    All the result's text is spilled as one file and replaced by head, the path and tail;
    images and other non-text blocks stay as they are (R-O2). A spill marker already in the
    text does not exempt it (R-O3)."""
    from pathlib import Path

    from specialists.events.spill import SpillLimits
    from specialists.native.guards import guard_result

    spill_dir = Path(spill_to)
    o = settings.overflow
    if response_chars(tool_name, response) <= o.max_chars:
        return None
    limits = SpillLimits(o.max_chars, o.head_chars, o.tail_chars)
    if tool_name == "Bash":
        assert isinstance(response, dict)
        stdout, stderr = response.get("stdout") or "", response.get("stderr") or ""
        text = f"{stdout}\n[stderr]\n{stderr}" if stderr else stdout
        return {
            **response,
            "stdout": guard_result(tool_name, text, spill_dir, limits=limits),
            "stderr": "",
        }
    text = "\n".join(_mcp_texts(response))
    others = [b for b in _mcp_blocks(response) if not _is_text_block(b)]
    return [
        {"type": "text", "text": guard_result(tool_name, text, spill_dir, limits=limits)},
        *others,
    ]


def _mcp_blocks(response: object) -> list[object]:
    if isinstance(response, str):
        return [{"type": "text", "text": response}]
    if isinstance(response, dict) and isinstance(response.get("content"), list):
        return list(response["content"])
    return list(response) if isinstance(response, list) else []


def _is_text_block(block: object) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def _mcp_texts(response: object) -> list[str]:
    return [b["text"] for b in _mcp_blocks(response) if _is_text_block(b)]  # type: ignore[index]
