"""CPU and memory for translating pi's delta stream (prints figures; not a test).

A 10 kB answer streamed in 2,000 chunks: pi 1.6.0 (the shape tests/support/fake_pi.py
writes) sends each delta alone with the usage so far, about 0.5 MB; pi 0.73.1 repeated the
partial message twice in every message_update, ~21.7 MB. Target: < 0.3 s CPU in
PiProtocol.feed.

    .venv/bin/python benchmarks/bench_pi_stream.py [--chars 10000] [--chunks 2000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specialists.runners.base import Activity, AnswerDelta
from specialists.runners.pi_protocol import PiProtocol
from tests.support.fake_pi import long_answer_lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=2_000)
    parser.add_argument("--e2e", action="store_true", help="also run through fake_pi + PiRunner")
    args = parser.parse_args()

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lines = [line.encode() for line in long_answer_lines(args.chars, args.chunks)]
    stream_bytes = sum(len(line) + 1 for line in lines)

    protocol = PiProtocol()
    protocol.prompt("benchmark")
    deltas = logged = status = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for line in lines:
        for event in protocol.feed(line):
            if isinstance(event, AnswerDelta):
                deltas += 1
            elif isinstance(event, Activity):
                logged += event.log
                status += not event.log
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    print(f"stream: {len(lines)} lines, {stream_bytes / 1e6:.1f} MB")
    rate = stream_bytes / 1e6 / max(wall, 1e-9)
    print(f"translate: {cpu:.3f} s CPU, {wall:.3f} s wall ({rate:.0f} MB/s)")
    print(f"events: {deltas} text deltas, {logged} logged activities, {status} status-only")
    print(
        f"peak RSS: {peak / 1024:.1f} MB (before generating the stream: {rss_before / 1024:.1f} MB)"
    )
    print("target < 0.3 s CPU:", "OK" if cpu < 0.3 else "MISSED")
    if args.e2e:
        end_to_end(args.chunks)
    return 0 if cpu < 0.3 else 1


def end_to_end(chunks: int) -> None:
    """The same stream from a real subprocess (tests/support/fake_pi.py) through PiRunner:
    pipe reads, line splitting and translation, in this process's CPU time."""
    import os
    import tempfile

    from specialists.runners.base import AgentExited, Close, LaunchSpec, RunFinished
    from specialists.runners.pi import PiRunner

    fake = Path(__file__).resolve().parents[1] / "tests" / "support" / "fake_pi.py"
    with tempfile.TemporaryDirectory() as tmp:
        spec = LaunchSpec(
            job_id="bench",
            job_dir=Path(tmp) / "job",
            cwd=Path(tmp),
            prompt="go",
            system_prompt="",
            model=None,
            env={"FAKE_PI_SCENARIO": "long", "FAKE_PI_CHUNKS": str(chunks)},
            options={"pi_bin": [sys.executable, str(fake)]},
        )
        runner = PiRunner()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        runner.start(spec)
        text_chars = 0
        while True:
            events = runner.poll(1.0)
            text_chars += sum(len(e.text) for e in events if isinstance(e, AnswerDelta))
            if any(isinstance(e, RunFinished) for e in events):
                break
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        runner.send(Close())
        while not any(isinstance(e, AgentExited) for e in runner.poll(1.0)):
            pass
    child = os.times()
    print(f"end to end: {text_chars} chars streamed, {cpu:.3f} s CPU here, {wall:.3f} s wall")
    print(f"  (fake pi child CPU, for scale: {child.children_user + child.children_system:.2f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
