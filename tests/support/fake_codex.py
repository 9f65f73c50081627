# ruff: noqa: E501 - the recorded transcript lines are kept verbatim
"""A fake `codex` executable replaying transcripts recorded from codex-cli 0.17x.

Behaves like `codex exec --json [resume <id>] ... -` as far as the runner can tell: refuses
to run unless the prompt argument is `-`, reads stdin to EOF (a runner that leaves stdin
open hangs here, as with the real CLI), then prints one scenario's recorded lines. Chosen by
environment:

    FAKE_CODEX_SCENARIO  text (default) | tool | turn_failed | reconnect | crash | hang
    FAKE_CODEX_TEXT      replaces the answer text
    FAKE_CODEX_LOG       a file to append {"argv", "stdin", "cwd"} JSON lines to

On `exec resume <id>` the thread id printed is <id>. `install(directory)` writes an
executable `codex` wrapper there. Recorded from shared/reference/codex/exec-json-*.jsonl.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

TEXT_LINES = [
    '{"type":"thread.started","thread_id":"01a2289d-d946-7492-8f0f-1fa58ff0e1a0"}',
    '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mock-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}',
    '{"type":"turn.started"}',
    '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Hello from the mock. Done."}}',
    '{"type":"turn.completed","usage":{"input_tokens":12,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":7,"reasoning_output_tokens":0}}',
]

TOOL_LINES = [
    '{"type":"thread.started","thread_id":"01a2289d-f328-7f21-a888-6169a6737707"}',
    '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mock-tooltest` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}',
    '{"type":"turn.started"}',
    '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \'echo hi-from-codex\'","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
    '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \'echo hi-from-codex\'","aggregated_output":"hi-from-codex\\n","exit_code":0,"status":"completed"}}',
    '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Hello from the mock. Done."}}',
    '{"type":"turn.completed","usage":{"input_tokens":24,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":14,"reasoning_output_tokens":0}}',
]

RECORDED_TEXT = "Hello from the mock. Done."
FRESH_THREAD = "01a2289d-d946-7492-8f0f-1fa58ff0e1a0"
BAD_REQUEST = json.dumps(
    {"error": {"message": "bad thing happened", "type": "invalid_request_error"}}
)


def install(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "codex"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    path.chmod(0o755)
    return path


def _print(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _replay(lines: list[str], thread: str, text: str) -> None:
    for line in lines:
        obj = json.loads(line)
        if obj["type"] == "thread.started":
            obj["thread_id"] = thread
        item = obj.get("item")
        if isinstance(item, dict) and item.get("type") == "agent_message":
            item["text"] = text
        _print(obj)


def main(argv: list[str]) -> int:
    if argv[:1] != ["exec"] or "--json" not in argv:
        print("fake codex: only `exec --json` is supported", file=sys.stderr)
        return 2
    if argv[-1] != "-":
        print("fake codex: expected the prompt on stdin (`-`)", file=sys.stderr)
        return 2
    stdin = sys.stdin.read()
    log = os.environ.get("FAKE_CODEX_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"argv": argv, "stdin": stdin, "cwd": os.getcwd()}) + "\n")
    thread = argv[-2] if "resume" in argv[:3] else FRESH_THREAD
    scenario = os.environ.get("FAKE_CODEX_SCENARIO", "text")
    text = os.environ.get("FAKE_CODEX_TEXT", RECORDED_TEXT)
    if scenario == "crash":
        print("fake codex: boom", file=sys.stderr)
        return 3
    if scenario == "text":
        _replay(TEXT_LINES, thread, text)
        return 0
    if scenario == "tool":
        _replay(TOOL_LINES, thread, text)
        return 0
    _replay(
        TEXT_LINES[:3], thread, text
    )  # thread.started, the model-metadata error item, turn.started
    if scenario == "turn_failed":
        _print({"type": "error", "message": BAD_REQUEST})
        _print({"type": "turn.failed", "error": {"message": BAD_REQUEST}})
        return 1
    if scenario == "reconnect":
        busy = "We are currently experiencing high demand."
        _print({"type": "error", "message": f"Reconnecting... 1/5 ({busy})"})
        _replay(TEXT_LINES[3:], thread, text)
        return 0
    if scenario == "hang":
        signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
        while True:
            time.sleep(0.05)
    print(f"fake codex: unknown scenario {scenario!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
