"""`specialists mcp`: status call latency, and the bytes an orchestrator reads per job.

1. Latency of the `status` tool (all jobs, and one job) with 100 jobs on disk, through the
   SDK client: in-process (no transport) and over stdio (a real `specialists mcp` process).
2. Bytes over one job's lifecycle: dispatch (`run`), the completion banner (the
   UserPromptSubmit hook's line), one `status` check and `result`, beyond the result text
   itself. Counted three ways: the text blocks (what clients show the model), the
   structuredContent, and the whole CallToolResult on the wire. Target: <= 600 bytes.

    .venv/bin/python -m benchmarks.bench_mcp [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from benchmarks.bench_status import fill
from benchmarks.common import isolated_project, machine, median_ms, p90_ms
from specialists.events import notices
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.http import build_server
from specialists.store.jobs import JobStore
from specialists.store.paths import state_dir

TARGET_BYTES = 600
ANSWER = "The answer. " * 100  # 1,200 characters of result
SPEC = """\
metadata:
  name: quick
  description: answers at once
execution:
  runner:
    type: command
    command: python3
    args: ["-c", "import sys; sys.stdin.read(); print({answer!r}, end='')"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="status calls per measurement")
    args = parser.parse_args()

    layout = isolated_project()
    os.environ.clear()
    os.environ.update(layout.env)  # the in-process server and its supervisors use this env
    root = layout.project
    (root / "specialists").mkdir()
    (root / "specialists" / "quick.specialist.yaml").write_text(SPEC.format(answer=ANSWER))
    fill(str(state_dir(root) / "jobs"), 100)
    stdio = StdioServerParameters(
        command=sys.executable, args=["-m", "specialists", "mcp"], env=layout.env, cwd=str(root)
    )

    print(f"# specialists mcp — {machine()}")
    for label, server in (("in-process", build_server(ServerContext())), ("stdio", stdio)):
        all_jobs, one_job = anyio.run(latency, server, args.calls)
        print(
            f"status latency, {label:<10} 100 jobs: all {median_ms(all_jobs):5.2f} ms median "
            f"({p90_ms(all_jobs):5.2f} p90); one job {median_ms(one_job):5.2f} ms median "
            f"({p90_ms(one_job):5.2f} p90)"
        )
    figures = anyio.run(lifecycle_bytes, stdio, JobStore(state_dir(root), news=notices))
    text_bytes = figures["text"]
    print("bytes beyond the result over one job (run + banner + status + result):")
    for key in ("text", "structured", "wire"):
        detail = ", ".join(f"{k} {v}" for k, v in figures[f"{key}_parts"].items())
        print(f"  {key:<10} {figures[key]:4d} bytes ({detail})")
    verdict = "OK" if text_bytes <= TARGET_BYTES else "MISSED"
    print(f"target <= {TARGET_BYTES} bytes (text the model reads): {verdict}")
    return 0 if text_bytes <= TARGET_BYTES else 1


async def latency(server: Any, calls: int) -> tuple[list[float], list[float]]:
    async with Client(server) as client:
        listing = await client.call_tool("status", {})
        job_id = listing.structured_content["active"][0]["id"]  # type: ignore[index]
        for _ in range(10):  # warm up
            await client.call_tool("status", {})
        all_jobs = [await _timed(client, "status", {}) for _ in range(calls)]
        one_job = [await _timed(client, "status", {"job_id": job_id}) for _ in range(calls)]
    return all_jobs, one_job


async def _timed(client: Client, name: str, arguments: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    result = await client.call_tool(name, arguments)
    elapsed = time.perf_counter() - t0
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content}")
    return elapsed


async def lifecycle_bytes(server: StdioServerParameters, store: JobStore) -> dict[str, Any]:
    async with Client(server) as client:
        run = await client.call_tool("run", {"specialist": "quick", "prompt": "answer"})
        job_id = run.structured_content["job_id"]  # type: ignore[index]
        await anyio.to_thread.run_sync(_wait_done, store, job_id)
        status = await client.call_tool("status", {"job_id": job_id})
        result = await client.call_tool("result", {"job_id": job_id})
    answer = result.structured_content["result"]  # type: ignore[index]
    if answer != ANSWER:
        raise RuntimeError(f"unexpected result {answer[:80]!r}")
    banner = _banner(store, job_id)
    calls = {"run": run, "status": status, "result": result}
    encoded_answer = len(json.dumps(answer, ensure_ascii=False).encode())
    text = {k: len(c.content[0].text.encode()) for k, c in calls.items()}  # type: ignore[union-attr]
    text["result"] -= len(answer.encode())
    structured = {
        k: len(json.dumps(c.structured_content, separators=(",", ":")).encode())
        for k, c in calls.items()
    }
    structured["result"] -= encoded_answer
    wire = {
        k: len(c.model_dump_json(by_alias=True, exclude_none=True).encode())
        for k, c in calls.items()
    }
    wire["result"] -= len(answer.encode()) + encoded_answer
    out: dict[str, Any] = {}
    for key, parts in (("text", text), ("structured", structured), ("wire", wire)):
        parts["banner"] = len(banner.encode())
        out[key] = sum(parts.values())
        out[f"{key}_parts"] = parts
    return out


def _wait_done(store: JobStore, job_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = store.read_status(job_id)
        if st is not None and not st.active:
            if st.status != "done":
                raise RuntimeError(f"job {job_id} ended {st.status}: {st.error}")
            return
        time.sleep(0.02)
    raise RuntimeError(f"job {job_id} did not finish")


def _banner(store: JobStore, job_id: str) -> str:
    """The hook's completion banner for the job (an estimate if the hook is not built)."""
    try:
        from specialists.fronts.hooks.user_prompt_submit import banner
    except ImportError:
        return f"[specialists] job {job_id} (quick) done in 0m01s — specialists result {job_id}"
    status = json.loads((store.job_dir(job_id) / "status.json").read_text())
    return banner(job_id, status) or ""


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
