"""Fleets of job directories written directly (no supervisor), for view tests and benchmarks.

Active jobs name a live supervisor (this process, with its real start time) so crash
recovery leaves them alone; pass `supervisor_pid=` of a dead process to see recovery act.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specialists.store.jobs import EVENTS_FILE, STATUS_FILE
from specialists.store.liveness import process_start_time
from specialists.store.records import JobStatus

BASE_MS = 1_760_000_000_000  # a fixed clock for snapshots: 2025-10-09T08:53:20Z


def write_status(jobs_dir: Path, job_id: str, **fields: Any) -> Path:
    """Write <jobs_dir>/<job_id>/status.json atomically; returns the job directory."""
    job_dir = jobs_dir / job_id
    job_dir.mkdir(parents=True, exist_ok=True)
    values: dict[str, Any] = {"specialist": "reviewer", "started_at_ms": BASE_MS}
    values.update(fields)
    if values.get("status", "starting") in ("starting", "running", "waiting"):
        values.setdefault("supervisor_pid", os.getpid())
        values.setdefault("supervisor_start_time", process_start_time(os.getpid()))
    data = JobStatus(id=job_id, **values).to_dict()
    tmp = job_dir / f".{STATUS_FILE}.tmp"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, job_dir / STATUS_FILE)
    return job_dir


def append_events(job_dir: Path, *events: dict[str, Any]) -> None:
    """Append whole event lines with the next seq numbers."""
    path = job_dir / EVENTS_FILE
    seq = sum(1 for _ in path.open("rb")) if path.exists() else 0
    with path.open("ab") as f:
        for ev in events:
            seq += 1
            record = {"seq": seq, "ts": BASE_MS + seq * 1000, **ev}
            f.write((json.dumps(record) + "\n").encode())


def fill_fleet(jobs_dir: Path, count: int, *, active: int = 5, now_ms: int = BASE_MS) -> list[str]:
    """`count` jobs: `active` running, the rest finished; every tenth continues the one before.

    Returns the ids, oldest first. Tokens and cost vary so sorting by them means something.
    """
    ids = [f"{i + 1:08x}" for i in range(count)]
    for i, job_id in enumerate(ids):
        running = i >= count - active
        fields: dict[str, Any] = {
            "specialist": ("reviewer", "executor", "explorer", "test-runner")[i % 4],
            "status": "running" if running else ("done", "done", "done", "error")[i % 4],
            "started_at_ms": now_ms - (count - i) * 60_000,
            "elapsed_s": 0.0 if running else 30.0 + i % 90,
            "model": "anthropic/claude-sonnet-4-5",
            "runner": "pi",
            "tokens": {"input": 1000 + 37 * i, "output": 200 + 11 * i, "cache_read": 50 * i},
            "cost_usd": round(0.001 * (i % 50 + 1), 4),
        }
        if running:
            fields["current_event"] = "tool_execution"
            fields["current_tool"] = f"bash(grep -rn pattern{i} src/)"
        elif fields["status"] == "error":
            fields["error"] = "exit code 1"
        if i % 10 == 9:
            fields["parent_id"] = ids[i - 1]
        write_status(jobs_dir, job_id, **fields)
    return ids
