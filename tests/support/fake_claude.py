# ruff: noqa: E501 - the recorded transcript lines are kept verbatim
"""A fake `claude` executable replaying transcripts recorded from Claude Code 2.1.197.

Behaves like `claude -p --output-format stream-json --verbose` as far as the runner can tell:
reads the prompt from stdin to EOF (so a runner that never closes stdin hangs here as it
would with the real CLI), takes the session id from --session-id / --resume, and prints the
recorded lines of one scenario with that session id. Chosen by environment:

    FAKE_CLAUDE_SCENARIO  text (default) | tool | max_turns | api_error | crash | hang |
                          no_conversation | usage_limit (a first run meets Claude's usage
                          limit, `Claude AI usage limit reached|<epoch>`, the reset
                          FAKE_CLAUDE_RESET_S (3) seconds ahead; a --resume run answers)
    FAKE_CLAUDE_TEXT      replaces the answer text
    FAKE_CLAUDE_LOG       a file to append {"argv", "stdin", "cwd"} JSON lines to

`install(directory)` writes an executable `claude` wrapper there and returns its path.
Recorded from shared/reference/claude-code/stream-json-{text,tool}.jsonl.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

TEXT_LINES = [
    '{"type":"system","subtype":"init","cwd":"/home/user/cc_work","session_id":"9cd1d296-6dea-45b5-b01c-30d6607e1dd5","tools":["Task","Bash","CronCreate","CronDelete","CronList","Edit","EnterWorktree","ExitWorktree","NotebookEdit","Read","ReportFindings","ScheduleWakeup","SendMessage","Skill","TaskCreate","TaskGet","TaskList","TaskOutput","TaskStop","TaskUpdate","WebFetch","WebSearch","Workflow","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"default","slash_commands":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator","clear","compact","config","context","heapdump","init","reload-skills","review","security-review","usage","insights","goal","team-onboarding"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.197","output_style":"default","agents":["claude","Explore","general-purpose","Plan","statusline-setup"],"skills":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator"],"plugins":[],"analytics_disabled":true,"product_feedback_disabled":true,"uuid":"4fe87278-7cb9-4bba-8a1d-3a84752a5d83","memory_paths":{"auto":"/home/user/claude-home/.claude/projects/-home-user-cc-work/memory/"},"fast_mode_state":"off"}',
    '{"type":"assistant","message":{"id":"msg_3dcb48a1eb15","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello from the mock. Done."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"context_management":null},"parent_tool_use_id":null,"session_id":"9cd1d296-6dea-45b5-b01c-30d6607e1dd5","uuid":"721479fb-bbec-4684-a459-ecd044e877a8"}',
    '{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":286,"duration_api_ms":171,"ttft_ms":281,"ttft_stream_ms":136,"time_to_request_ms":121,"num_turns":1,"result":"Hello from the mock. Done.","stop_reason":"end_turn","session_id":"9cd1d296-6dea-45b5-b01c-30d6607e1dd5","total_cost_usd":0.000141,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":12,"outputTokens":7,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.000141,"contextWindow":200000,"maxOutputTokens":32000}},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"e6010a3b-9e3f-4013-a75c-3624f61100e9"}',
]

TOOL_LINES = [
    '{"type":"system","subtype":"init","cwd":"/home/user/cc_work","session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","tools":["Task","Bash","CronCreate","CronDelete","CronList","Edit","EnterWorktree","ExitWorktree","NotebookEdit","Read","ReportFindings","ScheduleWakeup","SendMessage","Skill","TaskCreate","TaskGet","TaskList","TaskOutput","TaskStop","TaskUpdate","WebFetch","WebSearch","Workflow","Write"],"mcp_servers":[],"model":"claude-tooltest","permissionMode":"default","slash_commands":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator","clear","compact","config","context","heapdump","init","reload-skills","review","security-review","usage","insights","goal","team-onboarding"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.197","output_style":"default","agents":["claude","Explore","general-purpose","Plan","statusline-setup"],"skills":["deep-research","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","loop","claude-api","run","run-skill-generator"],"plugins":[],"analytics_disabled":true,"product_feedback_disabled":true,"uuid":"3a9b9016-20da-4b61-9464-0b0351300adc","memory_paths":{"auto":"/home/user/claude-home/.claude/projects/-home-user-cc-work/memory/"},"fast_mode_state":"off"}',
    '{"type":"system","subtype":"status","status":"requesting","uuid":"ea5e7280-cfd4-4418-9933-14be2ecf711b","session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c"}',
    '{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_29846eeafb7a","type":"message","role":"assistant","model":"claude-tooltest","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"32acd556-dc1e-41cf-bb16-8209016b3b74","ttft_ms":9}',
    '{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_b1","name":"Bash","input":{}}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"6487cfbf-0b59-4a7f-9346-0493d3c022b6"}',
    '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"comman"}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"c8dbc3c1-64bf-41e9-ae11-c86732768798"}',
    '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"d\\": \\"echo hi-from-bash\\", \\"description\\": \\"echo\\"}"}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"07dba96a-4524-455f-a2b1-310011e3d3d0"}',
    '{"type":"assistant","message":{"id":"msg_29846eeafb7a","type":"message","role":"assistant","model":"claude-tooltest","content":[{"type":"tool_use","id":"toolu_b1","name":"Bash","input":{"command":"echo hi-from-bash","description":"echo"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"context_management":null},"parent_tool_use_id":null,"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","uuid":"e0d8afa5-3364-4f85-a0c1-e400d05e726d"}',
    '{"type":"stream_event","event":{"type":"content_block_stop","index":0},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"ceb71cd6-23cd-45f8-965b-13776a3ca988"}',
    '{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"bfc608e4-3070-4806-b1a8-4752f4caea9d"}',
    '{"type":"stream_event","event":{"type":"message_stop"},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"0b8584c3-cc1c-4a44-82e0-098fa480ff25"}',
    '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_b1","type":"tool_result","content":"hi-from-bash","is_error":false}]},"parent_tool_use_id":null,"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","uuid":"2482d7e4-531d-4763-9c1c-3d95136cff3c","timestamp":"2026-11-29T18:42:38.853Z","tool_use_result":{"stdout":"hi-from-bash","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}',
    '{"type":"system","subtype":"status","status":"requesting","uuid":"66c8aac1-0664-4dc5-b6f6-327a82c699b8","session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c"}',
    '{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_ef5cd93b2f82","type":"message","role":"assistant","model":"claude-tooltest","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"d46b9a32-ebe8-4ba3-b60e-d95fed5dc059","ttft_ms":7}',
    '{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"35d384c2-3123-491e-a503-c0903c5b114c"}',
    '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"232fefef-ec73-4d96-a88e-87bf107b628a"}',
    '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"from the mock. "}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"43a48b50-996f-47f9-a5ae-a96603980766"}',
    '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"b498dd45-107b-4e49-a77d-77e905b470f3"}',
    '{"type":"assistant","message":{"id":"msg_ef5cd93b2f82","type":"message","role":"assistant","model":"claude-tooltest","content":[{"type":"text","text":"Hello from the mock. Done."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"context_management":null},"parent_tool_use_id":null,"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","uuid":"5d2fb930-7d20-41ba-816c-383cf2b8b371"}',
    '{"type":"stream_event","event":{"type":"content_block_stop","index":0},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"7d94e0bd-29c9-4850-b2f6-edcc3becdf93"}',
    '{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"748218a2-dae0-43bb-86dc-c1185067511c"}',
    '{"type":"stream_event","event":{"type":"message_stop"},"session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","parent_tool_use_id":null,"uuid":"f8262971-a650-4fcb-a435-68d5e97f5569"}',
    '{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":327,"duration_api_ms":200,"ttft_ms":122,"ttft_stream_ms":115,"time_to_request_ms":107,"num_turns":2,"result":"Hello from the mock. Done.","stop_reason":"end_turn","session_id":"2487c4d5-5a6c-4f95-9d04-7c099028b75c","total_cost_usd":0.00047,"usage":{"input_tokens":24,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":14,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{"claude-tooltest":{"inputTokens":24,"outputTokens":14,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.00047,"contextWindow":200000,"maxOutputTokens":32000}},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"75e024cd-47ba-4837-b442-537b4df20c0d"}',
]

RECORDED_TEXT = "Hello from the mock. Done."
RECORDED_SESSIONS = (
    "9cd1d296-6dea-45b5-b01c-30d6607e1dd5",
    "2487c4d5-5a6c-4f95-9d04-7c099028b75c",
)


def install(directory: Path) -> Path:
    """Write an executable `claude` that runs this module with this interpreter."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "claude"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    path.chmod(0o755)
    return path


def _arg(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def _emit(line: str, session: str, text: str) -> None:
    for recorded in RECORDED_SESSIONS:
        line = line.replace(recorded, session)
    obj = json.loads(line)
    if obj.get("type") == "result" and "result" in obj:
        obj["result"] = text
    if obj.get("type") == "assistant":
        for block in obj["message"]["content"]:
            if block.get("type") == "text":
                block["text"] = text
    if obj.get("type") == "stream_event":
        return  # the runner does not ask for --include-partial-messages
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _result(session: str, **fields: object) -> str:
    base = json.loads(TEXT_LINES[-1])
    base.update(session_id=session, **fields)
    return json.dumps(base)


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_CLAUDE_SCENARIO") == "hang":
        # Before anything a test can wait for (the call log): an interrupt that comes early
        # must still find the handler, not Python's KeyboardInterrupt mid-write.
        signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    stdin = sys.stdin.read()  # like claude -p: the prompt is all of stdin
    log = os.environ.get("FAKE_CLAUDE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"argv": argv, "stdin": stdin, "cwd": os.getcwd()}) + "\n")
    if "-p" not in argv:
        print("fake claude: only -p is supported", file=sys.stderr)
        return 2
    if not stdin:
        print(
            "Error: Input must be provided either through stdin or as a prompt argument "
            "when using --print",
            file=sys.stderr,
        )
        return 1
    session = _arg(argv, "--resume") or _arg(argv, "--session-id") or RECORDED_SESSIONS[0]
    scenario = os.environ.get("FAKE_CLAUDE_SCENARIO", "text")
    text = os.environ.get("FAKE_CLAUDE_TEXT", RECORDED_TEXT)
    if scenario == "usage_limit" and "--resume" in argv:
        scenario = "text"  # the reset has come: the resumed session answers
    if scenario == "crash":
        print("fake claude: boom", file=sys.stderr)
        return 3
    _emit(TEXT_LINES[0], session, text)  # system/init
    if scenario == "text":
        for line in TEXT_LINES[1:]:
            _emit(line, session, text)
        return 0
    if scenario == "tool":
        for line in TOOL_LINES[1:]:
            _emit(line, session, text)
        return 0
    if scenario == "max_turns":
        errors = ["Reached maximum number of turns (1)"]
        line = _result(session, subtype="error_max_turns", is_error=True, errors=errors)
        obj = json.loads(line)
        obj.pop("result", None)
        _emit(json.dumps(obj), session, text)
        return 1
    if scenario == "api_error":
        message = "API Error: 400 bad thing happened"
        obj = json.loads(_result(session, is_error=True, api_error_status=400, total_cost_usd=0))
        obj["result"] = message
        sys.stdout.write(json.dumps(obj) + "\n")
        return 1
    if scenario == "usage_limit":  # what Claude Code prints at a subscription's limit
        reset = int(time.time() + float(os.environ.get("FAKE_CLAUDE_RESET_S", "3")))
        message = f"Claude AI usage limit reached|{reset}"
        said = json.loads(TEXT_LINES[1])
        said["message"]["model"] = "<synthetic>"
        said["message"]["content"] = [{"type": "text", "text": message}]
        _emit(json.dumps(said), session, message)
        obj = json.loads(_result(session, is_error=True, total_cost_usd=0, num_turns=0))
        obj["result"] = message
        sys.stdout.write(json.dumps(obj) + "\n")
        return 1
    if scenario == "no_conversation":
        message = f"No conversation found with session ID: {session}"
        print(message, file=sys.stderr)
        obj = json.loads(_result(session, subtype="error_during_execution", is_error=True))
        obj.pop("result", None)
        obj["errors"] = [message]
        sys.stdout.write(json.dumps(obj) + "\n")
        return 1
    if scenario == "hang":
        while True:
            time.sleep(0.05)
    print(f"fake claude: unknown scenario {scenario!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
