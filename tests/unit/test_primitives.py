"""Atomic replace, file locking, starting a process, loading YAML, writing a durable file,
starting a job and pausing one each live in one module (issue 8 item 6; issue 21 item 4;
issue 20 items 1, 2 and 4).

A second copy of a primitive is where its guarantees quietly stop holding: for a replace, no
torn file, a temp file that cannot be redirected, 0600; for a lock, one that cannot be
planted; for a process, its own session, the registry that keeps a subreaper from stealing
an exit status, and not-found and timeouts as results. Exceptions are listed with the reason
they are not one; an entry that no longer matches fails the test, so the list only shrinks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "specialists"

RULES = {
    "atomic replace": (
        # os.rename stays free: it moves a name aside or claims one, and never replaces.
        re.compile(r"\bos\.replace\(|from os import [^\n]*\breplace\b"),
        {"store/atomic.py"},
    ),
    "file locking": (
        re.compile(r"\bfcntl\.(flock|lockf)\(|\bimport fcntl\b"),
        {"store/locks.py"},
    ),
    "starting a process": (
        re.compile(
            r"\bsubprocess\.(Popen|run|call|check_call|check_output)\("
            r"|\bos\.(fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*|system|popen)\("
            r"|create_subprocess_(exec|shell)\("
        ),
        {"process/spawn.py"},
    ),
    # Every store is a kind of Record (store/kinds.py): no module outside the store room
    # creates a file by its own hand (O_CREAT, O_EXCL, link(2), an atomic replace).
    "writing a file by hand": (
        re.compile(r"\bO_CREAT\b|\bO_EXCL\b|\bos\.link\(|\bwrite_atomic\(|\bcreate_private\("),
        {"store/file_record.py"},
    ),
    # Bounded: aliases, merges, duplicate keys, size and depth (issue 21 item 4).
    "loading YAML": (
        re.compile(
            r"\byaml\.(load|safe_load|full_load|unsafe_load|load_all|safe_load_all|compose"
            r"|compose_all|parse|scan)\(|\bfrom yaml import\b|(Safe|Full|Unsafe|C\w*)Loader\b"
        ),
        {"catalog/files.py"},
    ),
    # The one start (supervise/start.py) over its mechanics (launch.py): plan, create, claim
    # the key, supervise. Nothing else makes a job directory or launches its supervisor.
    "starting a job": (
        re.compile(
            r"(?<!def )\b(create_job|create_job_dir|spawn_supervisor)\("
            r"|import[^\n]*\b(create_job|spawn_supervisor)\b"
        ),
        {"supervise/start.py", "supervise/launch.py"},
    ),
    # One pause (supervise/supervisor.py `pause`): an interrupt and a feature's pause (a usage
    # limit until its reset: features/usage_limits) end what waits on the job's turn alike.
    "pausing a job": (re.compile(r"\bfor hook in HOOKS\.paused\b"), {"supervise/supervisor.py"}),
}

FLOOR = {"writing a file by hand": "store/"}  # the store room: the primitive and the job pen

EXCEPTIONS = {
    "writing a file by hand": {
        # Bytes that are not records: text, logs and copies in other programs' formats.
        "events/spill.py": "bodies too long for a line: text files, spilled whole",
        "features/procs/feed.py": "a background command's output.log, streamed as it comes",
        "process/agent.py": "the agent's stderr.log, handed to the process as its fd",
        "runners/command.py": "the command runner's stdout.log, handed to the process",
        "features/threads/forks.py": "a copy of an agent's own session file, in its format",
        "features/sandbox/handoff.py": "a child's patch, git's bytes",
        "features/workflows/engine.py": "workflow-result.json holds any JSON value, not a record",
        "features/manage/refine.py": "guidance in Markdown a person reads (current.md, revisions)",
        "executors/job.py": "files brought back from a node, as the agent left them",
        "executors/bridge_start.py": "the Ray bridge's pid lock and log, outside any project",
        "fronts/hooks/common.py": "the hooks' caches, written without loading the store",
        "fronts/cli/health.py": "the doctor's cache",
        "supervise/shared_forks.py": "the shared fork server's stderr, handed to it as its fd",
        # Files that belong to the user or to git, with their own modes and places.
        "fronts/install.py": "the user's agent settings files (0644, where the agent wants them)",
        "features/manage/agents.py": "a specialist definition a person edits (0644)",
        "features/manage/settings.py": "agents.json beside the team's definitions (a person's)",
        "features/sandbox/create.py": "git's .git/info/exclude, appended once",
        "features/sandbox/worktree_tree.py": "a file of the user's tree, copied with its bytes",
        "features/workflows/outputs.py": "a workflow's declared output file in the project (0644)",
        # Being replaced by the helpers that own them (issue 20 items 2 and 4).
        "supervise/launch.py": "a job's first files, made by the launcher that holds its lock",
        "supervise/checkpoint.py": "the takeover checkpoint, rewritten each step (a Record next)",
        "runners/external_job.py": "the provider job's record (a document of the job's, next)",
        "supervise/waiting.py": "an owner's subscription marker (an empty file named by the key)",
    },
    "atomic replace": {},
    "file locking": {},
    "loading YAML": {},
    "starting a job": {},
    "pausing a job": {},
    "starting a process": {
        # The detached supervisor is handed the job lock's descriptor and is never waited
        # for by its launcher: neither the agent seam's registry nor its session rules fit.
        "supervise/launch.py": "the detached supervisor (pass_fds, not waited for)",
        # It forks before anything else so that it stays the supervisor's parent: no exec,
        # no registry, no new session (it must be the nearest subreaper above the job).
        "supervise/keeper.py": "the keeper forks the supervisor it waits for (os.fork)",
        # Forked, not exec'd, so that a supervisor starts with the imports the server has.
        "supervise/forks.py": "the fork server forks each supervisor (os.fork, no exec)",
    },
}


def _users(pattern: re.Pattern[str]) -> set[str]:
    return {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    }


@pytest.mark.parametrize("rule", list(RULES))
def test_each_primitive_lives_in_one_module(rule):
    pattern, homes = RULES[rule]
    users = _users(pattern)
    assert homes <= users, f"the pattern for {rule} no longer finds its own home {homes}"
    floor = FLOOR.get(rule)
    strays = {
        u for u in users - homes - set(EXCEPTIONS[rule]) if not floor or not u.startswith(floor)
    }
    assert not strays, f"{rule} outside {sorted(homes)}: {sorted(strays)}; use the one there"
    stale = set(EXCEPTIONS[rule]) - users
    assert not stale, f"remove {sorted(stale)} from EXCEPTIONS[{rule!r}]: they are clean now"
