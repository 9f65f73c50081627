"""Register specialists with Claude Code: the MCP server and the hooks.

Pure merge/unmerge functions on the parsed JSON documents, plus file IO that refuses to
rewrite a file it cannot parse. What we add is recognisable, so uninstall removes exactly
that and nothing a user wrote:

- MCP: the key "specialists" in `mcpServers` with command "specialists" and args ["mcp"]
  (project: <root>/.mcp.json; user: ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json).
- Hooks: hook entries whose command is exactly one of HOOKS' (`specialists hook <event>` for
  UserPromptSubmit, SessionStart, PreToolUse on Bash, PostToolUse and Stop; project:
  <root>/.claude/settings.json; user: ~/.claude/settings.json, or
  $CLAUDE_CONFIG_DIR/settings.json).

A container we emptied by removing our entry (a matcher group, an event list, `hooks`,
`mcpServers`) is removed too; a file left as `{}` is deleted.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import UserError
from specialists.store.atomic import write_atomic

MCP_NAME = "specialists"
MCP_ENTRY: dict[str, Any] = {"type": "stdio", "command": "specialists", "args": ["mcp"], "env": {}}
HOOK_TIMEOUT_S = 10


@dataclass(frozen=True)
class HookEntry:
    event: str  # Claude Code's hook event
    command: str
    matcher: str | None = None  # tool names for PreToolUse/PostToolUse; None: every tool
    timeout_s: int = HOOK_TIMEOUT_S


HOOKS: tuple[HookEntry, ...] = (
    HookEntry("UserPromptSubmit", "specialists hook user-prompt-submit"),
    HookEntry("SessionStart", "specialists hook session-start"),
    HookEntry("PreToolUse", "specialists hook pre-tool-use", matcher="Bash"),
    HookEntry("PostToolUse", "specialists hook post-tool-use"),
    # The Stop hook may wait up to 540 s for an event (hooks/stop.py): its timeout is above.
    HookEntry("Stop", "specialists hook stop", timeout_s=600),
)
HOOK_COMMANDS = {h.event: h.command for h in HOOKS}

Doc = dict[str, Any]


# --------------------------------------------------------------------------- pure: MCP


def _is_ours_mcp(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("command") == MCP_ENTRY["command"]
        and entry.get("args") == MCP_ENTRY["args"]
    )


def _servers(doc: Doc, where: str) -> dict[str, Any] | None:
    servers = doc.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise UserError(
            f"{where}: `mcpServers` is a {type(servers).__name__}, expected an object",
            hint="fix the file by hand; nothing was changed",
        )
    return servers


def merge_mcp(doc: Doc, where: str = ".mcp.json") -> tuple[Doc, list[str]]:
    """Add our MCP server entry unless an entry named "specialists" exists."""
    out = copy.deepcopy(doc)
    servers = _servers(out, where)
    if servers is None:
        servers = out["mcpServers"] = {}
    existing = servers.get(MCP_NAME)
    if existing is None:
        servers[MCP_NAME] = copy.deepcopy(MCP_ENTRY)
        return out, [f"added MCP server '{MCP_NAME}' to {where}"]
    if _is_ours_mcp(existing):
        return out, [f"MCP server '{MCP_NAME}' already in {where}"]
    return out, [
        f"kept the existing, different MCP server '{MCP_NAME}' in {where} "
        "(remove it to get the default: specialists mcp)"
    ]


def unmerge_mcp(doc: Doc, where: str = ".mcp.json") -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    servers = _servers(out, where)
    if not servers or MCP_NAME not in servers:
        return out, [f"no MCP server '{MCP_NAME}' in {where}"]
    if not _is_ours_mcp(servers[MCP_NAME]):
        return out, [f"left MCP server '{MCP_NAME}' in {where}: it is not the one we add"]
    del servers[MCP_NAME]
    if not servers:
        del out["mcpServers"]
    return out, [f"removed MCP server '{MCP_NAME}' from {where}"]


# --------------------------------------------------------------------------- pure: hooks


def _hook_lists(doc: Doc, where: str) -> dict[str, Any] | None:
    hooks = doc.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise UserError(
            f"{where}: `hooks` is a {type(hooks).__name__}, expected an object",
            hint="fix the file by hand; nothing was changed",
        )
    for event in {h.event for h in HOOKS}:
        groups = hooks.get(event)
        if groups is not None and not isinstance(groups, list):
            raise UserError(
                f"{where}: `hooks.{event}` is a {type(groups).__name__}, expected a list",
                hint="fix the file by hand; nothing was changed",
            )
    return hooks


def _has_command(groups: list[Any], command: str) -> bool:
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for hook in group["hooks"]:
                if isinstance(hook, dict) and hook.get("command") == command:
                    return True
    return False


def merge_hooks(doc: Doc, where: str = ".claude/settings.json") -> tuple[Doc, list[str]]:
    """Append one matcher group per hook holding our command, unless it is already there."""
    out = copy.deepcopy(doc)
    hooks = _hook_lists(out, where)
    if hooks is None:
        hooks = out["hooks"] = {}
    notes = []
    for entry in HOOKS:
        groups = hooks.setdefault(entry.event, [])
        if _has_command(groups, entry.command):
            notes.append(f"{entry.event} hook already in {where}")
            continue
        group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher else {}
        group["hooks"] = [{"type": "command", "command": entry.command, "timeout": entry.timeout_s}]
        groups.append(group)
        notes.append(f"added {entry.event} hook `{entry.command}` to {where}")
    return out, notes


def unmerge_hooks(doc: Doc, where: str = ".claude/settings.json") -> tuple[Doc, list[str]]:
    """Remove hook entries with exactly our commands; drop containers that only held them."""
    out = copy.deepcopy(doc)
    hooks = _hook_lists(out, where)
    notes = []
    for event, command in ((h.event, h.command) for h in HOOKS):
        groups = hooks.get(event) if hooks else None
        if not groups or not _has_command(groups, command):
            notes.append(f"no {event} hook of ours in {where}")
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and h.get("command") == command)]
            if len(kept) == len(inner):
                kept_groups.append(group)
            elif kept:
                group["hooks"] = kept
                kept_groups.append(group)
        assert hooks is not None
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
        notes.append(f"removed {event} hook from {where}")
    if hooks is not None and not hooks and "hooks" in doc and doc["hooks"]:
        del out["hooks"]  # we emptied it
    return out, notes


# --------------------------------------------------------------------------- files


def load_json_object(path: Path) -> Doc | None:
    """The file's JSON object; None if the file does not exist; UserError if malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path} is not UTF-8 text ({exc.reason}); refusing to rewrite it",
            hint="fix or remove the file, then run again",
        ) from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(
            f"{path} is not valid JSON ({exc}); refusing to rewrite it",
            hint="fix or remove the file, then run again",
        ) from exc
    if not isinstance(data, dict):
        raise UserError(
            f"{path} holds a JSON {type(data).__name__}, not an object; refusing to rewrite it",
            hint="fix or remove the file, then run again",
        )
    return data


def write_json_object(path: Path, doc: Doc) -> None:
    """Atomic replace that follows a symlink (dotfile managers) and keeps the file's mode."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    data = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    write_atomic(target, data.encode(), mode=mode if mode is not None else 0o644)


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Targets:
    """Where registration goes: a project, or the user's Claude Code config."""

    scope: str  # "project" | "user"
    mcp_file: Path
    settings_file: Path
    base: Path  # paths in messages are shown relative to this

    def show(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.base))
        except ValueError:
            return str(path)


def project_targets(root: Path) -> Targets:
    return Targets("project", root / ".mcp.json", root / ".claude" / "settings.json", root)


def user_targets() -> Targets:
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    home = Path.home()
    if config_dir:
        base = Path(config_dir)
        return Targets("user", base / ".claude.json", base / "settings.json", home)
    return Targets("user", home / ".claude.json", home / ".claude" / "settings.json", home)


# --------------------------------------------------------------------------- actions


def _plan(targets: Targets, *, remove: bool) -> tuple[list[tuple[Path, Doc | None]], list[str]]:
    """Parse both files first (refusing before any write), then compute the new documents."""
    mcp_doc = load_json_object(targets.mcp_file)
    settings_doc = load_json_object(targets.settings_file)
    writes: list[tuple[Path, Doc | None]] = []
    notes: list[str] = []
    for path, doc, merge, unmerge in (
        (targets.mcp_file, mcp_doc, merge_mcp, unmerge_mcp),
        (targets.settings_file, settings_doc, merge_hooks, unmerge_hooks),
    ):
        where = targets.show(path)
        if remove:
            if doc is None:
                notes.append(f"no {where}")
                continue
            new, said = unmerge(doc, where)
            notes += said
            if new != doc:
                writes.append((path, new or None))  # None: the file is left empty, delete it
        else:
            new, said = merge(doc or {}, where)
            notes += said
            if new != doc:
                writes.append((path, new))
    return writes, notes


def _apply(writes: list[tuple[Path, Doc | None]], targets: Targets, dry_run: bool) -> list[str]:
    notes = []
    for path, doc in writes:
        if dry_run:
            continue
        if doc is None:
            path.unlink()
            notes.append(f"deleted {targets.show(path)} (nothing else was in it)")
        else:
            write_json_object(path, doc)
    return notes


def install(targets: Targets, *, dry_run: bool = False) -> list[str]:
    """Register the MCP server and hooks; idempotent. Returns one line per fact."""
    writes, notes = _plan(targets, remove=False)
    notes += _apply(writes, targets, dry_run)
    if shutil.which("specialists") is None:
        notes.append(
            "note: `specialists` is not on PATH; Claude Code needs it there to run the "
            "hooks and the MCP server"
        )
    return [f"(dry run) {n}" for n in notes] if dry_run else notes


def uninstall(targets: Targets, *, dry_run: bool = False) -> list[str]:
    """Remove exactly what install added. Job data (.specialists/) is never touched."""
    writes, notes = _plan(targets, remove=True)
    notes += _apply(writes, targets, dry_run)
    return [f"(dry run) {n}" for n in notes] if dry_run else notes
