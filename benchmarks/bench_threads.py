"""Threads: spawn_thread until the child runs, and 50 children of one parent reporting at once.

- spawn: the tool call's own time (it returns at once, R-H0..R-H7a checks included) and the
  time until the child's own supervisor has written `running` (a Python start and the agent
  process), for children on the command runner (`sleep`), without and with a sandbox.
- reports: 50 child processes each call report_to_parent at the same moment; every report
  must be delivered exactly once; then the parent's cost of reading its inbox (pending) with
  50 and with 1,000 events in it.

- the job-scoped MCP server (`specialists mcp --job <id>`, what a Claude Code or Codex child
  gets): start until its tools/list answer, the wait its agent adds before the first model
  request.

Sandbox creation and squash on 10,000 files: benchmarks/bench_sandbox.py.
    .venv/bin/python -m benchmarks.bench_threads
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import statistics
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.features.threads.closing import report
from specialists.features.threads.records import ThreadRecord, ThreadStore, new_thread_id
from specialists.features.threads.state import Position
from specialists.native.agent_table import tool_named
from specialists.native.agent_tools import Caller, ToolCall, call_tool
from specialists.store.jobs import JobStore
from tests.support.jobs import make_record
from tests.support.threads import shell_spec

ROUNDS = 9
CHILDREN = 50
OWNER = "claude-bench"
PARENT = "claude-bench-parent"  # the reporting children's parent: no other events


def _spawn(project: Path, sandbox: bool) -> tuple[float, float, str]:
    tool = tool_named("spawn_thread")
    assert tool is not None
    caller = Caller(project / ".specialists", OWNER, project)
    args = {"instructions": "wait", "child_of": ["root"], "fresh_context": True}
    args |= {"specialist": "waiter", "sandbox": sandbox}
    t0 = time.perf_counter()
    reply = call_tool(tool, ToolCall(args, caller, "bench"))
    returned = time.perf_counter() - t0
    assert not reply.is_error, reply.text
    store = JobStore(project / ".specialists", news=None)
    job_id = reply.data["job_id"]
    while True:
        st = store.read_status(job_id)
        if st and st.status == "running" and st.supervisor_pid != os.getpid():
            break
        time.sleep(0.002)
    running = time.perf_counter() - t0
    assert st.supervisor_pid
    os.kill(st.supervisor_pid, signal.SIGTERM)
    return returned, running, job_id


def _report_once(state_root: str, record: dict[str, object], start_at: float) -> None:
    root = Path(state_root)
    rec = ThreadRecord(**{**record, "stack": tuple(record["stack"])})  # type: ignore[arg-type]
    job = make_record(root.parent, id=rec.job_id, thread={"id": rec.id})
    while time.time() < start_at:  # all fifty at the same moment
        time.sleep(0.0005)
    report(root, Position(rec.id, rec.stack, job, None), {"report": f"from {rec.id}"}, 0)


def _children(state_root: Path, n: int) -> list[ThreadRecord]:
    threads = ThreadStore(state_root)
    out = []
    for i in range(n):
        tid = new_thread_id()
        threads.reserve_id(tid)
        rec = ThreadRecord(tid, PARENT, ("root", tid), f"{i:08x}", "x", True, "command", 1)
        threads.write(rec)
        out.append(rec)
    return out


def _job_server_ready(project: Path, job_id: str) -> tuple[float, int]:
    """Seconds from the server's start to its tools/list answer, and the tools it served."""
    import json
    import subprocess
    import sys

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "mcp", "--job", job_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=project,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
    proc.stdin.flush()
    tools = -1
    for line in proc.stdout:
        reply = json.loads(line)
        if reply.get("id") == 2:
            tools = len(reply["result"]["tools"])
            break
    ready = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(30)
    return ready, tools


def main() -> None:
    layout = isolated_project()
    os.environ.update(layout.env)
    project = layout.project
    (project / "specialists").mkdir(exist_ok=True)
    (project / "specialists" / "waiter.specialist.yaml").write_text(
        shell_spec("waiter", "sleep 30")
    )
    print(f"threads benchmark ({machine()})")
    for sandbox in (False, True):
        returned, running = [], []
        for _ in range(ROUNDS):
            r, u, _ = _spawn(project, sandbox)
            returned.append(r)
            running.append(u)
        what = "with a sandbox" if sandbox else "no sandbox"
        print(
            f"spawn_thread ({what}): returns in {statistics.median(returned) * 1000:.0f} ms, "
            f"child running after {statistics.median(running) * 1000:.0f} ms (medians of "
            f"{ROUNDS}; min {min(running) * 1000:.0f} ms)"
        )

    state_root = project / ".specialists"
    for rounds in range(3):
        owner_dir = state_root / "owners" / PARENT
        if owner_dir.exists():
            shutil.rmtree(owner_dir)
        children = _children(state_root, CHILDREN)
        ctx = multiprocessing.get_context("fork")
        start_at = time.time() + 2.0  # every process forked and waiting by then
        procs = [
            ctx.Process(target=_report_once, args=(str(state_root), c.to_dict(), start_at))
            for c in children
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        wall = time.time() - start_at
        inbox = Inbox(state_root, PARENT)
        t0 = time.perf_counter()
        batch = inbox.pending(max_events=10_000)
        read = time.perf_counter() - t0
        ids = [e.id for e in batch.events]
        assert len(ids) == CHILDREN == len(set(ids)), (len(ids), len(set(ids)))
        print(
            f"{CHILDREN} children reporting at once: all {len(ids)} delivered once, "
            f"{wall * 1000:.0f} ms until the last was written; parent reads them in "
            f"{read * 1000:.1f} ms (round {rounds + 1})"
        )
    children = _children(state_root, 1)
    for i in range(1000):
        ThreadStore(state_root).append_report(children[0].id, "x", i)
        Inbox(state_root, PARENT).append(
            "child_report",
            EventSource("bench"),
            f"report {i}",
            source_id=children[0].id,
            seq=i + 1,
        )
    samples = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        Inbox(state_root, PARENT).pending(max_events=10_000)
        samples.append(time.perf_counter() - t0)
    print(f"parent inbox read with ~1,050 events: {statistics.median(samples) * 1000:.1f} ms")

    record = JobStore(state_root, news=None).read_record(_spawn(project, False)[2])
    served = [_job_server_ready(project, record.id) for _ in range(5)]
    print(
        f"specialists mcp --job (a Claude Code / Codex child's tools): tools/list answered "
        f"{statistics.median(s for s, _ in served) * 1000:.0f} ms after the start (median of "
        f"5, min {min(s for s, _ in served) * 1000:.0f} ms), {served[0][1]} tools"
    )


if __name__ == "__main__":
    main()
