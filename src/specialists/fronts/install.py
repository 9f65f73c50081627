"""Register specialists with Claude Code: the MCP servers and the hooks.

Pure merge/unmerge functions on the parsed JSON documents, plus file IO that refuses to
rewrite a file it cannot parse. What we add is recognisable, so uninstall removes exactly
that and nothing a user wrote:

- MCP (project: <root>/.mcp.json; user: ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json):
  "specialists" serves the core tools with `alwaysLoad` (Claude Code offers them from the
  first request and waits for the server up to 5 s before it), "specialists-more" the rest,
  which Claude Code defers behind its tool search (docs/mcp.md, "Tool sets").
- Hooks (project: <root>/.claude/settings.json; user: ~/.claude/settings.json, or
  $CLAUDE_CONFIG_DIR/settings.json): UserPromptSubmit, SessionStart, PreToolUse on Bash and
  the file tools, PostToolUse and Stop, each `<python> -m specialists hook <event>`.

Both name this very interpreter by its absolute path, so they work from a shell whose PATH
lacks the virtualenv. A hook is a shell command: when that interpreter is gone (the
virtualenv moved or was removed), the SessionStart and UserPromptSubmit hooks print one
`systemMessage` that Claude Code shows the person, saying what to do, and every hook exits 0
(a failing hook would show only "hook error"). Entries an older install wrote (a bare
`specialists`, another interpreter) are ours too: install updates them, uninstall removes
them.

A container we emptied by removing our entry (a matcher group, an event list, `hooks`,
`mcpServers`) is removed too; a file left as `{}` is deleted.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.base.reader import Invalid, load_json
from specialists.fronts.cli.health import MAX_JSON_BYTES
from specialists.store.atomic import write_atomic
from specialists.store.files import read_bytes

MCP_NAME = "specialists"  # the core tools: mcp__specialists__run, ...
MCP_MORE_NAME = "specialists-more"  # the rest, deferred by Claude Code's tool search
MCP_SERVERS = ((MCP_NAME, "core"), (MCP_MORE_NAME, "more"))
HOOK_TIMEOUT_S = 10
GONE = (
    "specialists: {python} is gone (a moved or removed virtualenv?), so the specialists hooks "
    "and MCP tools are off here. Reinstall specialists and run `specialists init` in this "
    "project again, or `specialists uninstall` to remove them."
)


@dataclass(frozen=True)
class HookEntry:
    event: str  # Claude Code's hook event
    name: str  # ours: `specialists hook <name>`
    matcher: str | None = None  # tool names for PreToolUse/PostToolUse; None: every tool
    timeout_s: int = HOOK_TIMEOUT_S
    tells_gone: bool = False  # says so when our interpreter is gone (once a prompt, not a tool)


HOOKS: tuple[HookEntry, ...] = (
    HookEntry("UserPromptSubmit", "user-prompt-submit", tells_gone=True),
    HookEntry("SessionStart", "session-start", tells_gone=True),
    # Bash for the bash guard; the file tools for the claims guard (issue 23).
    HookEntry("PreToolUse", "pre-tool-use", matcher="Bash|Write|Edit|MultiEdit|NotebookEdit"),
    HookEntry("PostToolUse", "post-tool-use"),
    # The Stop hook may wait up to 540 s for an event (hooks/stop.py): its timeout is above.
    HookEntry("Stop", "stop", timeout_s=600),
)

Doc = dict[str, Any]


def this_python() -> str:
    """The interpreter that runs us, as the entries name it: absolute, not resolved (a
    virtualenv's `bin/python` is a link whose place says which environment it is)."""
    if not sys.executable:
        raise UserError(
            "cannot tell which Python runs specialists (sys.executable is empty)",
            hint="run specialists with the Python of its environment",
        )
    return os.path.abspath(sys.executable)


def mcp_entry(python: str, toolset: str) -> Doc:
    entry: Doc = {
        "type": "stdio",
        "command": python,
        "args": ["-m", "specialists", "mcp", "--tools", toolset],
        "env": {},
    }
    if toolset == "core":
        entry["alwaysLoad"] = True  # offered from the first request; startup waits for it
    return entry


def hook_command(python: str, entry: HookEntry) -> str:
    """A shell command (Claude Code runs hooks through the shell): our interpreter, quoted;
    when it is gone, one line for the person (a `systemMessage`) or nothing, exit 0."""
    quoted = shlex.quote(python)
    if entry.tells_gone:
        message = json.dumps({"systemMessage": GONE.format(python=python)}, ensure_ascii=False)
        fallback = f"{{ printf '%s\\n' {shlex.quote(message)}; exit 0; }}"
    else:
        fallback = "exit 0"
    return f"[ -x {quoted} ] || {fallback}; exec {quoted} -m specialists hook {entry.name}"


def command_python(command: str) -> str | None:
    """The interpreter one of our hook commands runs (None for a bare `specialists hook`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if "exec" in words and words[-4:-2] == ["-m", "specialists"]:
        return words[words.index("exec") + 1]
    return None


def _is_our_hook(command: object, entry: HookEntry) -> bool:
    if not isinstance(command, str):
        return False
    return command == f"specialists hook {entry.name}" or command.endswith(
        f" -m specialists hook {entry.name}"
    )


# --------------------------------------------------------------------------- pure: MCP


def is_ours_mcp(entry: object) -> bool:
    """An entry we wrote, now or before: `specialists mcp` (an older install), or any
    interpreter's `-m specialists mcp [--tools <set>]`."""
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    if not isinstance(args, list):
        return False
    tail = [] if args == ["mcp"] else args[3:] if args[:3] == ["-m", "specialists", "mcp"] else None
    if tail is None or tail not in ([], ["--tools", "core"], ["--tools", "more"]):
        return False
    return args[0] != "mcp" or entry.get("command") == "specialists"  # exactly what we wrote


def shaped(value: Any, kind: type, name: str, where: str) -> Any:
    """`value` when it is None or a `kind`; else one refusal naming the file and the field."""
    if value is not None and not isinstance(value, kind):
        expected = "an object" if kind is dict else "a list"
        raise UserError(
            f"{where}: `{name}` is a {type(value).__name__}, expected {expected}",
            hint="fix the file by hand; nothing was changed",
        )
    return value


def _servers(doc: Doc, where: str) -> dict[str, Any] | None:
    return shaped(doc.get("mcpServers"), dict, "mcpServers", where)


def merge_mcp(
    doc: Doc, where: str = ".mcp.json", python: str | None = None
) -> tuple[Doc, list[str]]:
    """Add (or update an older install's) two entries; an entry of another's is kept."""
    python = python or this_python()
    out = copy.deepcopy(doc)
    servers = _servers(out, where)
    if servers is None:
        servers = out["mcpServers"] = {}
    notes = []
    for name, toolset in MCP_SERVERS:
        wanted = mcp_entry(python, toolset)
        existing = servers.get(name)
        if existing is None:
            servers[name] = wanted
            notes.append(f"added MCP server '{name}' ({toolset} tools) to {where}")
        elif existing == wanted:
            notes.append(f"MCP server '{name}' already in {where}")
        elif is_ours_mcp(existing):
            servers[name] = wanted
            notes.append(f"updated MCP server '{name}' in {where} to run {python}")
        else:
            notes.append(
                f"kept the existing, different MCP server '{name}' in {where} "
                f"(remove it to get ours: {python} -m specialists mcp --tools {toolset})"
            )
    return out, notes


def unmerge_mcp(doc: Doc, where: str = ".mcp.json") -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    servers = _servers(out, where)
    notes = []
    for name, _ in MCP_SERVERS:
        if not servers or name not in servers:
            notes.append(f"no MCP server '{name}' in {where}")
        elif not is_ours_mcp(servers[name]):
            notes.append(f"left MCP server '{name}' in {where}: it is not the one we add")
        else:
            del servers[name]
            notes.append(f"removed MCP server '{name}' from {where}")
    if servers is not None and not servers and doc.get("mcpServers"):
        del out["mcpServers"]  # we emptied it
    return out, notes


# --------------------------------------------------------------------------- pure: hooks


def _hook_lists(doc: Doc, where: str) -> dict[str, Any] | None:
    hooks = shaped(doc.get("hooks"), dict, "hooks", where)
    for event in {h.event for h in HOOKS} if hooks else ():
        shaped(hooks.get(event), list, f"hooks.{event}", where)
    return hooks


def our_hooks(groups: list[Any], entry: HookEntry) -> list[dict[str, Any]]:
    """Our hook objects for `entry` in an event's groups (this install's or an older one's)."""
    return [
        hook
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if isinstance(hook, dict) and _is_our_hook(hook.get("command"), entry)
    ]


def _widen_matchers(groups: list[Any], entry: HookEntry) -> bool:
    """Bring the matcher of a group holding only our hook up to this install's (an older
    install's PreToolUse matched Bash alone). True when one changed."""
    changed = False
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not inner or entry.matcher is None:
            continue
        only_ours = all(
            isinstance(h, dict) and _is_our_hook(h.get("command"), entry) for h in inner
        )
        if only_ours and group.get("matcher") != entry.matcher:
            group["matcher"] = entry.matcher
            changed = True
    return changed


def merge_hooks(
    doc: Doc, where: str = ".claude/settings.json", python: str | None = None
) -> tuple[Doc, list[str]]:
    """Append one matcher group per hook holding our command, or bring an older install's
    command up to date in place."""
    python = python or this_python()
    out = copy.deepcopy(doc)
    hooks = _hook_lists(out, where)
    if hooks is None:
        hooks = out["hooks"] = {}
    notes = []
    for entry in HOOKS:
        command = hook_command(python, entry)
        groups = hooks.setdefault(entry.event, [])
        ours = our_hooks(groups, entry)
        widened = _widen_matchers(groups, entry)
        if ours and all(h["command"] == command for h in ours):
            what = "matcher updated" if widened else "already"
            notes.append(f"{entry.event} hook {what} in {where}")
            continue
        if ours:
            for hook in ours:
                hook["command"] = command
            notes.append(f"updated {entry.event} hook in {where} to run {python}")
            continue
        group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher else {}
        group["hooks"] = [{"type": "command", "command": command, "timeout": entry.timeout_s}]
        groups.append(group)
        notes.append(f"added {entry.event} hook `specialists hook {entry.name}` to {where}")
    return out, notes


def unmerge_hooks(doc: Doc, where: str = ".claude/settings.json") -> tuple[Doc, list[str]]:
    """Remove hook entries with exactly our commands; drop containers that only held them."""
    out = copy.deepcopy(doc)
    hooks = _hook_lists(out, where)
    notes = []
    for entry in HOOKS:
        event = entry.event
        groups = hooks.get(event) if hooks else None
        if not groups or not our_hooks(groups, entry):
            notes.append(f"no {event} hook of ours in {where}")
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [
                h
                for h in inner
                if not (isinstance(h, dict) and _is_our_hook(h.get("command"), entry))
            ]
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

FIX_HINT = "fix or remove the file, then run again"


def load_json_object(path: Path) -> Doc | None:
    """The file's JSON object; None if the file does not exist; UserError if malformed.
    A link is read through (to a regular file only: a FIFO or a link to /dev/zero is
    refused, StoreError, rather than waited on or read without end)."""
    try:
        text = read_bytes(path, MAX_JSON_BYTES, follow=True).decode("utf-8")
    except FileNotFoundError:
        return None
    except StoreError as exc:
        raise UserError(f"{exc}; refusing to rewrite it", hint=FIX_HINT) from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path} is not UTF-8 text ({exc.reason}); refusing to rewrite it",
            hint=FIX_HINT,
        ) from exc
    if not text.strip():
        return {}
    try:  # a key given twice would lose one of its values on the rewrite
        data = load_json(text, "JSON", max_nodes=None, max_depth=MAX_DEPTH, unique_keys=True)
    except Invalid as exc:
        raise UserError(f"{path}: {exc.problem}; refusing to rewrite it", hint=FIX_HINT) from None
    if not isinstance(data, dict):
        raise UserError(
            f"{path} holds a JSON {type(data).__name__}, not an object; refusing to rewrite it",
            hint=FIX_HINT,
        )
    return data


MAX_DEPTH = 100  # Claude Code's files nest under 10; copying and writing recurse per level


def write_json_object(path: Path, doc: Doc) -> None:
    """Atomic replace that follows a symlink (dotfile managers) and keeps the file's mode."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    data = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        raw = data.encode()
    except UnicodeEncodeError:
        # A lone surrogate, read from a `\ud83d` escape (JavaScript writes one for text cut
        # in the middle of an emoji): kept as the escape it was, all text as escapes.
        raw = (json.dumps(doc, indent=2) + "\n").encode()
    write_atomic(target, raw, mode=mode if mode is not None else 0o644)


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
        if doc is None and path.is_symlink():
            # A dotfile manager's link: deleting it would leave our entries in its target.
            write_json_object(path, {})
            notes.append(f"emptied {targets.show(path)} to {{}} (a link, kept)")
        elif doc is None:
            path.unlink()
            notes.append(f"deleted {targets.show(path)} (nothing else was in it)")
        else:
            write_json_object(path, doc)
    return notes


def install(targets: Targets, *, dry_run: bool = False) -> list[str]:
    """Register the MCP server and hooks; idempotent. Returns one line per fact."""
    writes, notes = _plan(targets, remove=False)
    notes += _apply(writes, targets, dry_run)
    notes.append(
        f"note: the hooks and MCP servers run {this_python()}; if this environment moves or "
        "goes, run `specialists init` again from the new one"
    )
    return [f"(dry run) {n}" for n in notes] if dry_run else notes


def uninstall(targets: Targets, *, dry_run: bool = False) -> list[str]:
    """Remove exactly what install added. Job data (.specialists/) is never touched."""
    writes, notes = _plan(targets, remove=True)
    notes += _apply(writes, targets, dry_run)
    return [f"(dry run) {n}" for n in notes] if dry_run else notes
