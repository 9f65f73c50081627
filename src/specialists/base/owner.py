"""Who asked for a job: the owner its completion notice is addressed to.

An owner is a small set of keys, plain strings that compare as they are. They are owner
keys of the events room (events/owners.py: `job-<id>` or `<kind>-<id>`, safe as directory
names), so wave 2's per-owner inboxes can take them as they are:

    job-<id>             a specialists job: the launcher runs under that job's agent
                         (the supervisor puts SPECIALISTS_JOB_ID in every agent's environment)
    claude-<session id>  a Claude Code session. Claude Code (verified on 2.1.197) exports
                         CLAUDE_CODE_SESSION_ID to its Bash tool, its hooks and its MCP
                         servers, and sends the same id as `session_id` in hook input;
                         `--resume` keeps it
    agent-<pid>.<start>  the nearest agent CLI process above the launcher (claude, codex, pi,
                         ...), by pid and kernel start time so a reused pid never matches.
                         It survives /clear, which gives the same process a new session id

A launcher (`specialists run`, the MCP server) records every key that applies in job.json
(`owner`); a reader (the prompt hook) matches a notice when any of its own keys is among
them. SPECIALISTS_OWNER, when set, is the launcher's one key and wins over the rest (a pi
extension or a script naming its session; `none` for no owner); SPECIALISTS_JOB_ID wins
over the session variables, which a job's agent inherits from the orchestrator that
started it. A job with
no key was started by a person at a terminal: no session is told of it, and reading its
result clears its notice.

This is the owner that wave 2's per-owner inboxes address events to. Standard library only
and cheap (a few /proc reads): the hooks call it on every prompt. Process ancestry is read
from /proc (Linux); elsewhere only the variables count.
"""

from __future__ import annotations

import os

from specialists.base.procstat import proc_stat

OWNER_ENV = "SPECIALISTS_OWNER"
PERSON_KIND = "cli"  # `cli-<login name>`: a person at a terminal (person_key)
NO_OWNER = "none"  # SPECIALISTS_OWNER=none: jobs started here have no owner, post no notice
JOB_ENV = "SPECIALISTS_JOB_ID"
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
# Process names (/proc/<pid>/comm) of the agent CLIs that can start jobs. pi sets its
# process title to "pi"; Codex's npm wrapper runs the native `codex` binary.
AGENT_NAMES = frozenset({"claude", "codex", "pi", "cursor-agent", "gemini", "opencode"})
MAX_ANCESTRY = 40  # a deeper chain is not ours to walk
_HEX = frozenset("0123456789abcdef")
_KIND_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_ID_CHARS = 128  # as events.owners


class Owner:
    """The keys of one launcher or reader (a plain class: hooks must not import dataclasses)."""

    __slots__ = ("keys",)

    def __init__(self, keys: tuple[str, ...] = ()) -> None:
        self.keys = keys

    def matches(self, keys: object) -> bool:
        """Whether a notice addressed to `keys` (a job's owner) is for this reader."""
        return isinstance(keys, list | tuple) and any(k in self.keys for k in keys)

    def __repr__(self) -> str:
        return f"Owner({self.keys!r})"


def is_key(text: object) -> bool:
    """An owner key as events.owners.is_owner accepts it (without importing `re`, which the
    hooks cannot afford): `<kind>-<id>`, kind 1-16 lowercase letters or digits starting with
    a letter, id 1-128 of [A-Za-z0-9._-] not starting with '.' or '-', never '..'."""
    if not isinstance(text, str):
        return False
    kind, sep, rest = text.partition("-")
    return (
        bool(sep)
        and 0 < len(kind) <= 16
        and kind[0].isalpha()
        and _KIND_CHARS.issuperset(kind)
        and 0 < len(rest) <= MAX_ID_CHARS
        and rest[0] not in ".-"
        and _ID_CHARS.issuperset(rest)
        and ".." not in rest
    )


def job_key(job_id: str) -> str:
    return f"job-{job_id}"


def session_key(session_id: object, kind: str = "claude") -> str | None:
    """`claude-<id>` for a Claude Code session id; characters outside the safe alphabet
    become '_' (as events.owners.session_owner does)."""
    if not isinstance(session_id, str) or not session_id:
        return None
    safe = "".join(ch if ch in _ID_CHARS else "_" for ch in session_id[:MAX_ID_CHARS])
    while ".." in safe:
        safe = safe.replace("..", ".")
    key = f"{kind}-{safe.strip('.-') or 'unknown'}"
    return key if is_key(key) else None


def _job_from_env(env: dict[str, str] | os._Environ[str]) -> str | None:
    job_id = env.get(JOB_ENV, "")
    return job_key(job_id) if len(job_id) == 8 and _HEX.issuperset(job_id) else None


def launching_owner(env: dict[str, str] | None = None, pid: int | None = None) -> Owner:
    """The owner of jobs this process starts (see the module docstring for the order)."""
    env_map = os.environ if env is None else env
    explicit = env_map.get(OWNER_ENV, "")
    if explicit == NO_OWNER:
        return Owner(())
    if is_key(explicit):
        return Owner((explicit,))
    job = _job_from_env(env_map)
    if job:
        return Owner((job,))
    keys = [k for k in (session_key(env_map.get(SESSION_ENV)), agent_ancestor(pid)) if k]
    return Owner(tuple(keys))


def person_key(env: dict[str, str] | None = None) -> str:
    """`cli-<login name>`: the owner of what a person starts at a terminal with no session
    around it (`specialists bg run`), and the inbox `specialists events` reads for them.
    One per user, not per terminal: a job started in one terminal is heard in another."""
    env_map = os.environ if env is None else env
    name = env_map.get("LOGNAME") or env_map.get("USER") or ""
    if not name:
        try:
            import pwd

            name = pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            name = f"uid{os.getuid()}"
    return session_key(name, PERSON_KIND) or f"{PERSON_KIND}-uid{os.getuid()}"


def reading_owner(
    session_id: object = None, env: dict[str, str] | None = None, pid: int | None = None
) -> Owner:
    """The keys of a reader: a hook (its input's session_id), with the same variables and
    process ancestry a launcher in that session would have recorded."""
    env_map = os.environ if env is None else env
    explicit = env_map.get(OWNER_ENV)
    keys = [
        session_key(session_id),
        session_key(env_map.get(SESSION_ENV)),
        _job_from_env(env_map),
        explicit if is_key(explicit) else None,
        agent_ancestor(pid),
    ]
    return Owner(tuple(dict.fromkeys(k for k in keys if k)))


def process_key(kind: str, pid: int) -> str | None:
    """`<kind>-<pid>.<start time>` for a live process (a reused pid never matches), or None
    when /proc cannot tell: the MCP server names a client it knows nothing else about so."""
    info = _stat(pid)
    key = f"{kind}-{pid}.{info[2]}" if info else None
    return key if key and is_key(key) else None


def agent_ancestor(pid: int | None = None) -> str | None:
    """`agent-<pid>.<start>` of the nearest agent CLI process above `pid` (default: this
    process), or None when there is none or /proc cannot tell."""
    current = os.getpid() if pid is None else pid
    for _ in range(MAX_ANCESTRY):
        info = _stat(current)
        if info is None:
            return None
        name, parent, start = info
        if current != (os.getpid() if pid is None else pid) and name in AGENT_NAMES:
            return f"agent-{current}.{start}"
        if parent <= 1:
            return None
        current = parent
    return None


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(command name, parent pid, start time in clock ticks) from /proc/<pid>/stat."""
    try:
        info = proc_stat(pid)
    except OSError:
        return None
    return None if info is None else (info[0], info[2], info[4])
