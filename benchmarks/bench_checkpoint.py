"""What a takeover checkpoint costs the supervisor (supervise/checkpoint.py): the runner's
`adopt_state` plus the JSON of the whole checkpoint, and writing it (atomic, beside the
job), for pi, Claude Code and Codex after a recorded run. A checkpoint is written after each
loop step that read or wrote something, so this is a cost per step with output, not per
event.

Target: the state and its JSON under 100 µs of CPU; the write costs what a status.json
write costs (the same atomic write, which the supervisor makes after every logged event).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import machine
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.codex_events import CodexTranslator
from specialists.runners.pi_adopt import protocol_state
from specialists.runners.pi_protocol import PiProtocol
from specialists.store.atomic import write_atomic
from tests.support import fake_claude, fake_codex

ROUNDS = 7
N = 2_000
PI = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi-1.6.0" / "multiturn.ndjson"
STATUS = {"id": "0123abcd", "status": "running", "events": 40, "tokens": {"input": 900}}


def pi_state() -> Callable[[], dict[str, Any]]:
    protocol = PiProtocol(session_file="/s.jsonl", model="mock/m")
    protocol.prompt("turn 1: run echo hi then say DONE")
    protocol.take_outbox()
    for line in PI.read_bytes().splitlines()[:-5]:  # mid-run: before the last agent_end
        protocol.feed(line)
    return lambda: protocol_state(protocol, time.monotonic())


def one_shot_state(make: Any, lines: list[str]) -> Callable[[], dict[str, Any]]:
    translator = make()
    for n, line in enumerate(lines[:-1]):
        translator.feed(json.loads(line), float(n))
    return lambda: translator.adopt_state(time.monotonic())


def checkpoint(state: dict[str, Any]) -> bytes:
    body = {"v": 2, "adoptable": True, "events": 40, "status": STATUS, "then": "output"}
    cursor = {"proc": "p1", "pid": 4242, "seq": 812, "wseq": 3, "stderr_bytes": 0}
    return json.dumps({**body, "cursor": cursor, "runner": state}).encode()


def best_us(fn: Callable[[], object], n: int) -> float:
    rounds = []
    for _ in range(ROUNDS):
        t0 = time.thread_time_ns()
        for _ in range(n):
            fn()
        rounds.append((time.thread_time_ns() - t0) / n / 1000)
    return min(rounds)  # CPU time of the least disturbed round: the machine is shared


def main() -> None:
    print(machine())
    print(f"{'runner':8} {'bytes':>6} {'state+json µs':>14} {'+ write µs (wall)':>18}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "reattach.json"
        for name, state in (
            ("pi", pi_state()),
            ("claude", one_shot_state(ClaudeTranslator, fake_claude.TOOL_LINES)),
            ("codex", one_shot_state(CodexTranslator, fake_codex.TOOL_LINES)),
        ):
            size = len(checkpoint(state()))
            build = best_us(lambda state=state: checkpoint(state()), N)  # type: ignore[misc]
            t0 = time.perf_counter()
            for _ in range(N // 10):
                write_atomic(path, checkpoint(state()))
            write = (time.perf_counter() - t0) / (N // 10) * 1e6
            print(f"{name:8} {size:>6} {build:>14.1f} {write:>18.1f}")
        status = json.dumps({**STATUS, "pad": "x" * 900}).encode()  # status.json's size
        t0 = time.perf_counter()
        for _ in range(N // 10):
            write_atomic(Path(tmp) / "status.json", status)
        write = (time.perf_counter() - t0) / (N // 10) * 1e6
        print(f"{'status':8} {len(status):>6} {'':>14} {write:>18.1f}")


if __name__ == "__main__":
    main()
