"""Figures for the native runtime (printed, never asserted):

- loop overhead per turn, excluding model time (ScriptedModel answers instantly; each turn
  runs one cheap `ls` tool call and writes the session), median ms; target <= 5 ms
- RSS of a native job after a run; target <= 60 MB
- `NativeRunner.start` to the first model request with a real SDK client (openai, lazy
  import included) against a local socket that answers nothing useful; target <= 300 ms

Run: .venv/bin/python benchmarks/bench_native.py
"""

from __future__ import annotations

import http.server
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from specialists.catalog.config import Config
from specialists.native.calling import ModelSlot
from specialists.native.events import LoopEvent
from specialists.native.loop import AgentLoop, LoopSettings
from specialists.native.model import ModelInfo
from specialists.native.session import Session
from specialists.native.testing import ScriptedModel, call, reply
from specialists.native.tools import ToolContext, tools_for_permission
from specialists.runners.base import Close, LaunchSpec
from specialists.runners.native import NativeRunner

TURNS = 200


def loop_overhead(root: Path) -> tuple[float, float]:
    work = root / "work"
    work.mkdir()
    (work / "a.txt").write_text("x")
    script = [reply(f"step {n}", calls=[call("ls")]) for n in range(TURNS)] + [reply("done")]
    model = ScriptedModel(script)
    stamps: list[float] = []

    def emit(event: LoopEvent) -> None:
        if getattr(event, "event", None) == "turn_end":
            stamps.append(time.perf_counter())

    loop = AgentLoop(
        session=Session.create(root / "job" / "session.jsonl"),
        models=[ModelSlot(ModelInfo("bench/m", "bench", "m"), lambda: model)],
        tools=tools_for_permission("MEDIUM"),
        tool_context=ToolContext(cwd=work, spill_dir=root / "job" / "spill"),
        settings=LoopSettings(system_prompt="bench"),
        emit=emit,
    )
    start = time.perf_counter()
    finished = loop.run("go")
    assert finished.error is None, finished.error
    per_turn = [b - a for a, b in zip([start, *stamps], stamps, strict=False)]
    return statistics.median(per_turn) * 1000, statistics.quantiles(per_turn, n=20)[18] * 1000


class _Hold(http.server.BaseHTTPRequestHandler):
    seen = threading.Event()

    def do_POST(self) -> None:
        _Hold.seen.set()
        self.send_response(500)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        return


def start_to_first_request(root: Path) -> float:
    root.mkdir(parents=True, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hold)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    spec = LaunchSpec(
        job_id="bench",
        job_dir=root / "job2",
        cwd=root,
        prompt="hi",
        system_prompt="",
        model="openai/bench",
        env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url},
        options={"max_retries": 0},
    )
    runner = NativeRunner(config=Config(), breaker_dir=root / "breakers")
    started = time.perf_counter()
    runner.start(spec)
    _Hold.seen.wait(30)
    elapsed = (time.perf_counter() - started) * 1000
    runner.send(Close())
    runner.join(10)
    server.shutdown()
    return elapsed


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fresh_sdk = "openai" not in sys.modules
        first_request_ms = start_to_first_request(root)
        _Hold.seen.clear()
        warm_request_ms = start_to_first_request(root / "again")
        median_ms, p95_ms = loop_overhead(root)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"native loop overhead per turn: median {median_ms:.2f} ms, p95 {p95_ms:.2f} ms "
        f"({TURNS} turns, one ls call each; target <= 5 ms)"
    )
    print(f"peak RSS of this process after a native job: {rss_mb:.1f} MB (target <= 60 MB)")
    print(
        f"run start -> first model request (openai SDK, "
        f"{'cold import' if fresh_sdk else 'warm'}): {first_request_ms:.0f} ms "
        f"(target <= 300 ms); with the SDK already imported: {warm_request_ms:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
