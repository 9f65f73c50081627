"""The agent's words in events.jsonl: what a streamed answer costs the log and the supervisor.

A scripted agent (no process, a fake clock) narrates 200 short blocks between 200 tool calls,
then streams a 200 kB answer in 8-character deltas, as pi and Claude Code do. Printed: what
the agent said beside the log's size (and the part of it that is its words). Then the cutting
alone (supervise/words.py) over a 1 MB answer: time per 1,000 deltas, beside the time the
supervisor spends on one step. Target: the log a small fraction of what was said; the
cutting far below a step.
    .venv/bin/python -m benchmarks.bench_words
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine
from specialists import notices
from specialists.jobs.store import JobStore
from specialists.runners.base import Activity, AnswerDelta, RunFinished, tool_end
from specialists.runners.testing import ScriptedRunner, Step
from specialists.supervise.supervisor import Supervisor
from specialists.supervise.words import Words
from specialists.testing import FakeClock
from tests.support.jobs import new_job

ANSWER_CHARS = 200_000
DELTA = 8
BLOCKS = 200


def script() -> tuple[list[Step], int, int]:
    steps: list[Step] = []
    said = 0
    for n in range(BLOCKS):
        words = f"Step {n}: checking the next file for the pattern the task names, then moving on."
        steps += [
            Activity("text"),
            *(AnswerDelta(words[i : i + DELTA]) for i in range(0, len(words), DELTA)),
        ]
        steps += [
            Activity("toolcall", {"tool": "bash", "args": f"grep -n x f{n}.py"}),
            tool_end("bash", 5, failed=n % 10 == 0, error="grep: f.py: No such file" * 3),
        ]
        said += len(words)
    answer = ("The answer, line by line. " * (ANSWER_CHARS // 26 + 1))[:ANSWER_CHARS]
    steps += [
        Activity("text"),
        *(AnswerDelta(answer[i : i + DELTA]) for i in range(0, len(answer), DELTA)),
    ]
    steps.append(RunFinished(text=answer))
    return steps, said + len(answer), sum(1 for s in steps if isinstance(s, AnswerDelta))


def main() -> None:
    print(f"# the agent's words in events.jsonl — {machine()}")
    root = Path(tempfile.mkdtemp(prefix="sp-bench-words-"))
    store = JobStore(root / ".specialists", news=notices)
    steps, said, deltas = script()
    clock = FakeClock()
    record, lock = new_job(store, root)
    runner = ScriptedRunner(steps, clock=clock)
    sup = Supervisor(
        store, record, runner, clock=clock, sleep=clock.sleep, wall=clock, handle_signals=False
    )
    t0 = time.perf_counter()
    status = sup.run()
    wall = time.perf_counter() - t0
    lock.release()
    assert status.status == "done", status.error
    log = store.job_dir(record.id) / "events.jsonl"
    events = [json.loads(line) for line in log.open()]
    words = sum(len(json.dumps(e.get("text", ""))) for e in events if e["event"] == "text")
    size = log.stat().st_size
    print(
        f"agent said {said:,} chars ({deltas:,} deltas of {DELTA}); events.jsonl {size:,} bytes "
        f"in {len(events):,} events; the words in it {words:,} bytes = {words / said:.3f} of "
        f"what was said (without them, as before: {size - words:,} bytes)"
    )
    step_ms = wall * 1000 / len(steps)
    print(f"supervisor: {step_ms:.3f} ms per step of the scripted runner (one event each)")
    big = ("The answer, line by line. " * 40_000)[:1_000_000]
    pieces = [big[i : i + DELTA] for i in range(0, len(big), DELTA)]
    words = Words()
    t0 = time.perf_counter()
    for piece in pieces:
        words.add(piece)
    words.end()
    cut_ms = (time.perf_counter() - t0) * 1000 / len(pieces) * 1000
    print(
        f"cutting alone, 1 MB in {len(pieces):,} deltas: {cut_ms:.2f} ms per 1,000 deltas "
        f"({cut_ms / 1000 / step_ms * 100:.2f}% of a supervisor step per delta)"
    )


if __name__ == "__main__":
    main()
