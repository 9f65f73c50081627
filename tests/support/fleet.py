"""Fleets of job directories written directly (no supervisor), for view tests and benchmarks.

Active jobs name a live supervisor (this process, with its real start time) so crash
recovery leaves them alone; pass `supervisor_pid=` of a dead process to see recovery act.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specialists.jobs.liveness import process_start_time
from specialists.jobs.records import JobStatus
from specialists.jobs.store import EVENTS_FILE, STATUS_FILE

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


WORKFLOW = "000000a0"


def workflow_fleet(jobs_dir: Path) -> str:
    """A workflow under way (parallel_review-like) and one plain job, as the views see them:
    progress and its children's spending in the workflow's status, keyed children (one done,
    one failed on a blocked tool, one writing, one running a tool), their events, and the
    journal its stages are drawn from. Returns the workflow's id."""
    spent = {
        "tokens": {"input": 9_000, "output": 700, "cache_read": 1_000, "cache_write": 0},
        "cost_usd": 0.0456,
        "jobs": 4,
    }
    progress = {
        "total": 8,
        "done": 1,
        "failed": 1,
        "running": 2,
        "queued": 4,
        "phase": "review and verify",
        "concurrency": 2,
        "children": spent,
    }
    write_status(
        jobs_dir,
        WORKFLOW,
        status="running",
        specialist="workflow",
        runner="workflow",
        title="parallel_review",
        current_event="running",
        progress=progress,
    )
    children = [
        ("000000a1", "review-correctness", "done", {}),
        ("000000a2", "review-tests", "error", {"error": "the answer does not satisfy the schema"}),
        ("000000a3", "review-security", "running", {"current_event": "text"}),
        ("000000a4", "verify-correctness", "running", {"current_tool": "bash(git diff HEAD)"}),
    ]
    for n, (job_id, key, status, extra) in enumerate(children):
        write_status(
            jobs_dir,
            job_id,
            status=status,
            specialist="reviewer",
            runner="native",
            parent_id=WORKFLOW,
            workflow_key=key,
            title=f"Review the uncommitted changes for {key.split('-')[1]} only.",
            started_at_ms=BASE_MS + 2_000 + n * 1_000,
            elapsed_s=12.0 if status in ("done", "error") else 0.0,
            tokens={"input": 2_000 + n, "output": 150},
            cost_usd=0.01,
            last_text="I'll read the diff first, \x1b[31mthen\x1b[0m the tests.",
            **extra,
        )
    append_events(
        jobs_dir / "000000a3",
        {"event": "starting", "runner": "native", "model": "replay/x"},
        {
            "event": "text",
            "text": "I'll read the diff first, \x1b[31mthen\x1b[0m the tests.",
            "chars": 43,
        },
        {"event": "toolcall", "tool": "bash", "args": "sleep 120"},
        {
            "event": "tool_execution_end",
            "tool": "bash",
            "duration_ms": 3,
            "is_error": True,
            "error": "Blocked: `sleep 120` would hold this turn until it ends.",
        },
    )
    write_status(
        jobs_dir,
        "000000b0",
        status="done",
        specialist="reviewer",
        title="Review the last commit for error handling",
        started_at_ms=BASE_MS - 60_000,
        elapsed_s=11.0,
        tokens={"input": 12_600, "output": 550},
        cost_usd=0.0461,
    )
    journal = [
        {"e": "phase", "name": "review and verify"},
        *(
            {"e": "node", "id": f"n{i}", "kind": "stage", "label": label, "count": 4,
             "after": after, "phase": "review and verify"}
            for i, label, after in ((1, "review", []), (2, "verify", ["n1"]))
        ),
        {"e": "launch", "key": "review-correctness", "job": "000000a1", "node": "n1",
         "agent": "reviewer"},
        {"e": "end", "key": "review-correctness", "job": "000000a1", "status": "done"},
        {"e": "launch", "key": "review-tests", "job": "000000a2", "node": "n1"},
        {"e": "end", "key": "review-tests", "job": "000000a2", "status": "error"},
        {"e": "launch", "key": "review-security", "job": "000000a3", "node": "n1"},
        {"e": "launch", "key": "verify-correctness", "job": "000000a4", "node": "n2"},
    ]  # fmt: skip
    with (jobs_dir / WORKFLOW / "workflow-journal.jsonl").open("w") as f:
        f.writelines(json.dumps(e) + "\n" for e in journal)
    return WORKFLOW
