"""Record the real Claude Code against the mock LLM: stream-json runs, hook inputs, Stop wakes.

    .venv/bin/python -m tests.support.record_claude OUT_DIR [--claude PATH]

Run isolated as the reference README says (HOME, CLAUDE_CONFIG_DIR and the agents' dirs in a
temp tree, ANTHROPIC_BASE_URL at the mock, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, stdin
/dev/null). Writes:

- stream-json-text.jsonl, stream-json-tool.jsonl, stream-json-api-error.jsonl: `claude -p
  --output-format stream-json --verbose` for a text answer, a Bash round trip, and a provider
  that refuses every request (HTTP 400);
- hook-inputs.json: what each of the five hooks reads on stdin (SessionStart,
  UserPromptSubmit, PreToolUse, PostToolUse, Stop), keyed as tests/support's file is;
- stop-block.jsonl, stop-context.jsonl, stop-async-rewake.jsonl: a Stop hook that wakes the
  session once, three ways (`decision: block`; `hookSpecificOutput.additionalContext`; an
  `asyncRewake` hook that exits 2), each with the model requests' last message appended as
  `{"type": "mock_request", ...}` lines so what the model read is on record too.

Temp paths become PROJECT and CLAUDE_CONFIG_DIR, the mock's port 18080.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.agent_env import CLAUDE_MOCK_MODEL, build_agent_env, find_agent_bin
from tests.support.mock_llm import MockLLM, Reply, ToolCall

WAKE = "[specialists event] notice from run (a1b2c3d4)"


class Recorder:
    def __init__(self, claude: Path, out: Path, root: Path) -> None:
        self.claude, self.out, self.root = claude, out, root
        self.n = 0

    def run(
        self, mock: MockLLM, prompt: str, *, allowed: str = "", settings: dict | None = None
    ) -> tuple[str, Any]:
        self.n += 1
        env = build_agent_env(self.root / f"run{self.n}", base_url=mock.base_url)
        if settings is not None:
            (env.project / ".claude").mkdir()
            (env.project / ".claude" / "settings.json").write_text(json.dumps(settings))
        argv = [str(self.claude), "-p", prompt, "--output-format", "stream-json", "--verbose"]
        argv += ["--model", CLAUDE_MOCK_MODEL]
        if allowed:
            argv += ["--allowedTools", allowed]
        out = subprocess.run(
            argv,
            cwd=env.project,
            env=env.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        return self.scrub(out.stdout, env), env

    def scrub(self, text: str, env: Any) -> str:
        text = text.replace(str(env.claude_config_dir), "CLAUDE_CONFIG_DIR")
        text = text.replace(str(env.project), "PROJECT")
        text = text.replace(str(env.root), "ROOT")
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:18080", text)

    def save(self, name: str, text: str) -> None:
        (self.out / name).write_text(text)

    def streams(self) -> None:
        with MockLLM() as mock:
            mock.enqueue(Reply("The answer is 42."))
            self.save("stream-json-text.jsonl", self.run(mock, "say hello")[0])
        with MockLLM() as mock:
            call = ToolCall("Bash", {"command": "echo hi-from-bash"})
            mock.enqueue(Reply(tool_calls=[call]), Reply("DONE"))
            self.save("stream-json-tool.jsonl", self.run(mock, "run echo", allowed="Bash")[0])
        with MockLLM(Reply.bad_request("the mock refuses")) as mock:
            self.save("stream-json-api-error.jsonl", self.run(mock, "say hello")[0])

    def hook_inputs(self) -> None:
        dump = self.root / "hook-inputs.jsonl"
        script = self.root / "dump_hook.py"
        line = "json.dumps(json.load(sys.stdin)) + '\\n'"
        script.write_text(
            f"import json, sys\nwith open({str(dump)!r}, 'a') as f: f.write({line})\n"
        )
        command = f"{sys.executable} {script}"
        hook = [{"hooks": [{"type": "command", "command": command}]}]
        each_tool = [{"matcher": "*", **hook[0]}]
        settings = {
            "hooks": {
                "SessionStart": hook,
                "UserPromptSubmit": hook,
                "PreToolUse": each_tool,
                "PostToolUse": each_tool,
                "Stop": hook,
            }
        }
        with MockLLM() as mock:
            mock.enqueue(
                Reply(tool_calls=[ToolCall("Bash", {"command": "echo hi"})]), Reply("DONE")
            )
            _, env = self.run(mock, "go", allowed="Bash", settings=settings)
        inputs: dict[str, Any] = {}
        for line in dump.read_text().splitlines():
            data = json.loads(self.scrub(line, env))
            key = data["hook_event_name"]
            if "tool_name" in data:
                key += f":{data['tool_name']}"
            inputs.setdefault(key, data)
        self.save("hook-inputs.json", json.dumps(inputs, indent=1) + "\n")

    def stop_wakes(self) -> None:
        once = "if [ -e {flag} ]; then exit 0; fi; touch {flag}; "
        reply = {
            "stop-block.jsonl": json.dumps({"decision": "block", "reason": WAKE}),
            "stop-context.jsonl": json.dumps(
                {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": WAKE}}
            ),
        }
        for name in ("stop-block.jsonl", "stop-context.jsonl", "stop-async-rewake.jsonl"):
            flag = self.root / f"{name}.once"
            if name in reply:
                body = once.format(flag=flag) + f"echo '{reply[name]}'"
                hook: dict[str, Any] = {"type": "command", "command": body}
            else:
                body = once.format(flag=flag) + f"sleep 1; echo '{WAKE}' >&2; exit 2"
                hook = {"type": "command", "command": body, "asyncRewake": True}
            with MockLLM() as mock:
                mock.enqueue(Reply("FIRST"), Reply("SECOND"))
                stdout, env = self.run(
                    mock, "hello", settings={"hooks": {"Stop": [{"hooks": [hook]}]}}
                )
                asked = [
                    {"type": "mock_request", "last_message": r.messages()[-1]}
                    for r in mock.model_requests
                ]
            lines = "".join(json.dumps(a) + "\n" for a in asked)
            self.save(name, stdout + self.scrub(lines, env))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--claude", type=Path, default=None)
    args = parser.parse_args(argv)
    claude = args.claude or find_agent_bin("claude")
    if claude is None:
        print("record_claude: no claude found (run scripts/setup)", file=sys.stderr)
        return 3
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        recorder = Recorder(claude, args.out, Path(tmp))
        recorder.streams()
        recorder.hook_inputs()
        recorder.stop_wakes()
    version = subprocess.run([str(claude), "--version"], capture_output=True, text=True)
    print(f"record_claude: {version.stdout.strip()} -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
