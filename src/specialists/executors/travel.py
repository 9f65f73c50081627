"""What crosses to a node and back, as pure functions: paths, and the agent's environment.

Paths. The runners build command lines and environments with this machine's paths (the job
directory, the working directory, the installed package). `PathMap` rewrites them into the
node's paths on the way out, and rewrites the node's paths in the agent's stdout lines back
into ours, so events, tool arguments and the session file name read as they would locally.
A path is replaced only as a whole path (not inside a longer name), and only when it can be
written in JSON as it is (no quote, backslash or control character), so a JSON line stays
valid after the rewrite.

Environment. The node's agent starts from the node's own environment (its PATH, its HOME),
plus what the job adds to ours (the job mark, the job id, git trailer hooks, the runner's
variables), plus the variables named in `forward_env` (shell patterns; API keys by default).
Nothing else of this machine's environment travels.

Job files. The supervisor's own files of the job directory (status, events, logs, the
records of where the job runs) never travel; the rest (the system prompt, a session being
continued) are sent before each spawn when they changed since they were last sent.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import AnyStr

from specialists.process.jobenv import (
    BEAD_ID_ENV,
    GIT_PARAMETERS_ENV,
    JOB_ID_ENV,
    SAVED_GIT_PARAMETERS_ENV,
)
from specialists.store.proctree import MARK_ENV

# The job's own variables travel even when the supervisor's environment already has them (a
# detached supervisor carries the job mark itself).
JOB_VARIABLES = (MARK_ENV, JOB_ID_ENV, BEAD_ID_ENV, GIT_PARAMETERS_ENV, SAVED_GIT_PARAMETERS_ENV)
DEFAULT_FORWARD_ENV = ("*_API_KEY", "*_AUTH_TOKEN")


def _json_plain(text: str) -> bool:
    return json.dumps(text, ensure_ascii=False)[1:-1] == text


@dataclass(frozen=True)
class PathMap:
    """(local, node) directory pairs; the longest local path is tried first."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> PathMap:
        kept = [
            (local.rstrip("/") or "/", node.rstrip("/") or "/")
            for local, node in pairs
            if local and node and local != node
        ]
        kept.sort(key=lambda pair: -len(pair[0]))
        return cls(tuple(kept))

    def to_node(self, text: str) -> str:
        return _replace(text, self.pairs)

    def to_node_all(self, items: Sequence[str]) -> list[str]:
        return [self.to_node(item) for item in items]

    def line_to_local(self, line: bytes) -> bytes:
        """A stdout line with the node's paths made ours (JSON-safe pairs only)."""
        pairs = tuple(
            (node.encode(), local.encode())
            for local, node in self.pairs
            if _json_plain(local) and _json_plain(node)
        )
        return _replace(line, pairs)


def _replace(text: AnyStr, pairs: tuple[tuple[AnyStr, AnyStr], ...]) -> AnyStr:
    if not any(old in text for old, _ in pairs):
        return text
    pattern, table = _compiled(pairs)
    return pattern.sub(lambda m: table[m.group(0)], text)


# One pass over every pair, longest first, so a replacement is never replaced again; the
# same pattern for text and for the bytes of a stdout line.
@functools.lru_cache(maxsize=64)
def _compiled(pairs: tuple[tuple[AnyStr, AnyStr], ...]) -> tuple[re.Pattern[AnyStr], dict]:
    olds = sorted((old for old, _ in pairs), key=len, reverse=True)
    edges = (r"(?<![\w.\-])(?:", r")(?![\w.\-])", "|")
    start, end, bar = (e.encode() for e in edges) if isinstance(olds[0], bytes) else edges
    body = bar.join(re.escape(old) for old in olds)
    return re.compile(start + body + end), dict(pairs)


@dataclass(frozen=True)
class RemoteEnv:
    """What the node's agent gets on top of the node's environment."""

    set: dict[str, str]
    unset: tuple[str, ...]

    def names(self) -> list[str]:
        return sorted(self.set)


def remote_env(
    job_env: Mapping[str, str],
    ours: Mapping[str, str],
    forward: Sequence[str],
    paths: PathMap,
) -> RemoteEnv:
    """The job's additions to `ours`, the forwarded variables, with paths made the node's;
    `unset`: variables of ours that the job removed (an outer job's bead id)."""
    chosen: dict[str, str] = {}
    for key, value in job_env.items():
        if key in JOB_VARIABLES or ours.get(key) != value or _matches(key, forward):
            chosen[key] = paths.to_node(value)
    unset = tuple(sorted(key for key in ours if key not in job_env))
    return RemoteEnv(chosen, unset)


def _matches(key: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


# Job-directory files that are the supervisor's own, never sent to a node.
LOCAL_ONLY = frozenset(
    {
        "status.json",
        "events.jsonl",
        "lock",
        "supervisor.log",
        "stderr.log",
        "stdout.log",
        "processes.json",
        "executor.json",
        "reattach.json",
        "result.txt",
    }
)
LOCAL_DIRS = frozenset({"control", "answers", "spill", "git-hooks"})
SYNC_FILE_MAX = 64 * 1024 * 1024


Changed = list[tuple[str, Path, tuple[int, int]]]  # (name, path, (size, mtime_ns))


class SentFiles:
    def __init__(self, job_dir: Path | None) -> None:
        self.job_dir = job_dir  # None: a shared filesystem, nothing is sent
        self._sent: dict[str, tuple[int, int]] = {}

    def changed(self) -> Changed:
        """The files not sent as they are now."""
        if self.job_dir is None or not self.job_dir.is_dir():
            return []
        out: Changed = []
        for path in sorted(self.job_dir.rglob("*")):
            rel = path.relative_to(self.job_dir)
            if rel.parts[0] in LOCAL_DIRS or rel.name in LOCAL_ONLY or rel.name.startswith("."):
                continue
            if path.is_symlink() or not path.is_file():
                continue
            st = path.stat()
            key, stamp = rel.as_posix(), (st.st_size, st.st_mtime_ns)
            if self._sent.get(key) != stamp and st.st_size <= SYNC_FILE_MAX:
                out.append((key, path, stamp))
        return out

    def mark(self, changed: Changed) -> None:
        self._sent.update((key, stamp) for key, _, stamp in changed)
