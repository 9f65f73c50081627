"""`specialists mcp` start: spawn to the `initialize` answer, beside a bare interpreter start.

Headless Claude Code (`claude -p`, the Agent SDK) sends its first model request about 2 s after
starting its MCP servers (5 s for a server it must always load): a server that answers later
is not offered on that turn. Measured side by side, interleaved so all see the same load:

- bare: `python -c pass`, spawn to exit (the floor any Python server pays);
- ours: `python -m specialists mcp`, spawn to the initialize answer, then to the tools/list
  answer (the tool table loads after the first answer);
- sdk (with --sdk): a minimal server on the `mcp` SDK's own stdio transport, spawn to its
  initialize answer: what our server cost before it stopped importing the SDK on stdio.

Target: ours at most 10x bare (medians). Prints the machine's load average at both ends.

    .venv/bin/python -m benchmarks.bench_mcp_start [--rounds 15] [--sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import isolated_project, machine, median_ms, p90_ms

TARGET_RATIO = 10.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
SDK_SERVER = """
import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server

async def main():
    server = Server("bench")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


def bare_start(env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=cwd, check=True)
    return time.perf_counter() - t0


def server_start(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(spawn to initialize answer, spawn to tools/list answer); tools/list is 0 if not asked."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        initialized = time.perf_counter() - t0
        assert answer.get("id") == 1 and "result" in answer, answer
        listed = 0.0
        if "specialists" in argv:
            proc.stdin.write(json.dumps(LIST).encode() + b"\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            listed = time.perf_counter() - t0
            assert answer.get("id") == 2 and answer["result"]["tools"], answer
        return initialized, listed
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sdk", action="store_true", help="also time a minimal SDK server")
    args = parser.parse_args()

    layout = isolated_project()
    env, cwd = layout.env, layout.project
    ours_argv = [sys.executable, "-m", "specialists", "mcp"]
    sdk_argv = [sys.executable, "-c", SDK_SERVER]
    load_before = os.getloadavg()
    server_start(ours_argv, env, cwd)  # warm the bytecode caches once, as any user has them
    if args.sdk:
        server_start(sdk_argv, env, cwd)
    bare: list[float] = []
    ours_init: list[float] = []
    ours_list: list[float] = []
    sdk_init: list[float] = []
    for _ in range(args.rounds):
        bare.append(bare_start(env, cwd))
        initialized, listed = server_start(ours_argv, env, cwd)
        ours_init.append(initialized)
        ours_list.append(listed)
        if args.sdk:
            sdk_init.append(server_start(sdk_argv, env, cwd)[0])
    load_after = os.getloadavg()

    ratio = median_ms(ours_init) / median_ms(bare)
    print(f"machine: {machine()}; load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(f"rounds: {args.rounds}, interleaved (medians, p90)")
    print(f"  bare interpreter (python -c pass)   {median_ms(bare):7.1f} ms  {p90_ms(bare):7.1f}")
    print(
        f"  ours: spawn to initialize answer    {median_ms(ours_init):7.1f} ms  "
        f"{p90_ms(ours_init):7.1f}   {ratio:.1f}x bare (target <= {TARGET_RATIO:g}x)"
    )
    print(
        f"  ours: spawn to tools/list answer    {median_ms(ours_list):7.1f} ms  "
        f"{p90_ms(ours_list):7.1f}   {median_ms(ours_list) / median_ms(bare):.1f}x bare"
    )
    if sdk_init:
        print(
            f"  sdk:  spawn to initialize answer    {median_ms(sdk_init):7.1f} ms  "
            f"{p90_ms(sdk_init):7.1f}   {median_ms(sdk_init) / median_ms(bare):.1f}x bare"
        )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
