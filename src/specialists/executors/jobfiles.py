"""Which of a job directory's files go to its node, and which of them were sent already.

The supervisor's own files (status, events, logs, the records of where the job runs) never
travel; the rest (the system prompt, a session being continued) are sent before each spawn
when they changed since they were last sent.
"""

from __future__ import annotations

from pathlib import Path

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
