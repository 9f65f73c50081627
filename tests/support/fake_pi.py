#!/usr/bin/env python3
"""A fake `pi --mode rpc` for fast runner tests (stdlib only; run it as a script).

It speaks pi 1.6.0's RPC protocol on stdin/stdout and writes events in the exact shape of
the recorded transcripts (tests/fixtures/pi-1.6.0): a `system` message opens each run, every
message_update carries the usage so far and the event alone, agent_end says `willRetry`, and
`agent_settled` closes the run.

- `prompt` is acked at once with its id (`disposition`: started, or queued while streaming),
  then the scenario's events stream.
- `get_state`, `get_last_assistant_text` (`{}` when there is no text), `steer`, `follow_up`,
  `abort` (aborted message, agent_end, then the ack) and `extension_ui_response` work;
  unknown or malformed commands get an error response without an id.
- stdin EOF: exit 0 at once (a run in progress is lost). SIGTERM: exit 143.

Environment:
  FAKE_PI_SCENARIO   basic (default) | text | think | retry | retry_fail | error | crash |
                     hang | slow | garbage | huge | huge_end | long | ext | reject | transcript
  FAKE_PI_TEXT       answer text (text, slow; default "DONE")
  FAKE_PI_DELAY      seconds between chunks (slow; default 0.05)
  FAKE_PI_CHUNKS     chunk count (slow: 200, long: 2000)
  FAKE_PI_HUGE_MB    size of the huge line (huge, huge_end; default 100)
  FAKE_PI_TRANSCRIPT a recorded .ndjson whose event lines are replayed (transcript)
  FAKE_PI_LOG        append every received command here (JSON lines)
  FAKE_PI_ARGV_FILE  write argv here (JSON)
  FAKE_PI_STARTUP_S  sleep before reading stdin (like Node's start-up)

`set_model` switches the model (its answer repeats it, like pi); any scenario then answers
"answered by <provider>/<model>", so a fallback to another model can be seen.
`FAKE_PI_MODELS` (comma-separated provider/model) limits the models set_model knows.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MODEL = "fake-model"
_out_lock = threading.Lock()
_stdout = sys.stdout.buffer


# --- event shapes (pure; also used by tests and benchmarks) ----------------------------------


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _usage(inp: int = 0, out: int = 0) -> dict[str, Any]:
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


class AssistantMessage:
    """Builds one assistant message's lines the way pi streams them."""

    def __init__(self, model: str = MODEL) -> None:
        self.content: list[dict[str, Any]] = []
        self.model = model
        self.stop_reason = "stop"
        self.error: str | None = None
        self.usage = _usage()

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": self.content,
            "api": "openai-completions",
            "provider": "fake",
            "model": self.model,
            "usage": self.usage,
            "stopReason": self.stop_reason,
            "timestamp": 1795977713354,
        }
        if self.error:
            msg["errorMessage"] = self.error
        return msg

    def start(self) -> str:
        return dumps({"type": "message_start", "message": self.message()})

    def update(self, kind: str, index: int, **extra: Any) -> str:
        ev = {"type": kind, "contentIndex": index, **extra}
        return dumps({"type": "message_update", "usage": self.usage, "assistantMessageEvent": ev})

    def end(self) -> str:
        return dumps({"type": "message_end", "message": self.message()})

    def turn_end(self) -> str:
        return dumps({"type": "turn_end", "message": self.message(), "toolResults": []})

    # -- content blocks --
    def text(self, text: str, chunks: int = 2) -> Iterator[str]:
        index = len(self.content)
        block = {"type": "text", "text": ""}
        self.content.append(block)
        pieces = split(text, chunks)
        block["text"] = pieces[0] if pieces else ""
        yield self.update("text_start", index)
        block["text"] = ""
        for piece in pieces:
            block["text"] += piece
            yield self.update("text_delta", index, delta=piece)
        yield self.update("text_end", index, content=text)

    def thinking(self, text: str, chunks: int = 3) -> Iterator[str]:
        index = len(self.content)
        block = {"type": "thinking", "thinking": "", "thinkingSignature": "reasoning_content"}
        self.content.append(block)
        yield self.update("thinking_start", index)
        for piece in split(text, chunks):
            block["thinking"] += piece
            yield self.update("thinking_delta", index, delta=piece)
        yield self.update("thinking_end", index, content=text)

    def toolcall(self, call_id: str, name: str, args: dict[str, Any]) -> Iterator[str]:
        index = len(self.content)
        raw = json.dumps(args)
        block: dict[str, Any] = {
            "type": "toolCall",
            "id": call_id,
            "name": name,
            "arguments": {},
            "partialArgs": "",
        }
        self.content.append(block)
        yield self.update("toolcall_start", index, id=call_id, toolName=name)
        for piece in split(raw, 3):
            block["partialArgs"] += piece
            yield self.update("toolcall_delta", index, delta=piece)
        final = {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
        self.content[index] = final
        yield self.update("toolcall_end", index, toolCall=final)
        self.stop_reason = "toolUse"


def split(text: str, chunks: int) -> list[str]:
    if not text:
        return []
    chunks = max(1, min(chunks, len(text)))
    size, rest = divmod(len(text), chunks)
    out, pos = [], 0
    for i in range(chunks):
        step = size + (1 if i < rest else 0)
        out.append(text[pos : pos + step])
        pos += step
    return out


SYSTEM_MESSAGE = {"role": "system", "content": "", "sections": {"preamble": "You are pi."}}


def user_message_lines(text: str, *, first: bool = True) -> list[str]:
    """The run's opening messages: pi 1.x sends its system message first, then the user's."""
    msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    system = [SYSTEM_MESSAGE] if first else []
    return [
        dumps({"type": kind, "message": m})
        for m in (*system, msg)
        for kind in ("message_start", "message_end")
    ]


def agent_end(*, will_retry: bool = False) -> str:
    return dumps({"type": "agent_end", "messages": [], "willRetry": will_retry})


def agent_settled(*, aborted: bool = False) -> str:
    return dumps({"type": "agent_settled", "aborted": aborted})


def tool_lines(
    call_id: str, name: str, args: dict[str, Any], output: str, error: bool = False
) -> list[str]:
    base = {"toolCallId": call_id, "toolName": name, "args": args}
    result = {"content": [{"type": "text", "text": output}]}
    tr = {"role": "toolResult", "toolCallId": call_id, "toolName": name, **result, "isError": error}
    return [
        dumps({"type": "tool_execution_start", **base}),
        dumps({"type": "tool_execution_update", **base, "partialResult": {"content": []}}),
        dumps(
            {
                "type": "tool_execution_end",
                "toolCallId": call_id,
                "toolName": name,
                "result": result,
                "isError": error,
            }
        ),
        dumps({"type": "message_start", "message": tr}),
        dumps({"type": "message_end", "message": tr}),
    ]


def text_answer_lines(text: str, chunks: int, usage: tuple[int, int] = (100, 2)) -> list[str]:
    """One assistant message answering `text` in `chunks` deltas, message_start..turn_end."""
    msg = AssistantMessage()
    lines = [msg.start(), *msg.text(text, chunks)]
    msg.usage = _usage(*usage)
    return [*lines, msg.end(), msg.turn_end()]


def long_answer_lines(chars: int = 10_000, chunks: int = 2_000) -> list[str]:
    """The benchmark stream: a `chars` answer in `chunks` deltas."""
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " * 200
    return text_answer_lines(words[:chars], chunks)


# --- the process -------------------------------------------------------------------------


def emit(line: str | bytes) -> None:
    data = line.encode() if isinstance(line, str) else line
    with _out_lock:
        _stdout.write(data + b"\n")
        _stdout.flush()


def respond(rid: Any, command: str, success: bool = True, **extra: Any) -> None:
    obj: dict[str, Any] = {}
    if rid is not None:
        obj["id"] = rid
    obj.update({"type": "response", "command": command, "success": success, **extra})
    emit(dumps(obj))


class Aborted(Exception):
    pass


class FakePi:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.session = _flag(argv, "--session")
        self.scenario = os.environ.get("FAKE_PI_SCENARIO", "basic")
        self.commands: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.streaming = False
        self.abort_ids: list[Any] = []
        self.aborting = False
        self.steers: list[str] = []
        self.follow_ups: list[str] = []
        self.ui_answers: dict[str, dict[str, Any]] = {}
        self.last_text: str | None = self._session_last_text()
        self.log_path = os.environ.get("FAKE_PI_LOG")
        self.call_n = 0
        self.switched_to: str | None = None  # the model set_model chose

    # -- session file: a tiny stand-in so --session reuse can be observed --
    def _session_last_text(self) -> str | None:
        if not self.session or not Path(self.session).exists():
            return None
        last = None
        for line in Path(self.session).read_text().splitlines():
            entry = json.loads(line)
            if entry.get("role") == "assistant":
                last = entry.get("text")
        return last

    def _remember(self, role: str, text: str) -> None:
        if self.session:
            with open(self.session, "a") as fh:
                fh.write(dumps({"role": role, "text": text}) + "\n")

    # -- commands --
    def reader(self) -> None:
        buf = b""
        stdin = sys.stdin.buffer
        while True:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:
                with _out_lock:
                    _stdout.flush()
                os._exit(0)  # like pi: EOF ends the process at once, run or not
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    cmd = json.loads(line)
                except ValueError as exc:
                    respond(None, "parse", False, error=f"Failed to parse command: {exc}")
                    continue
                if self.log_path:
                    with open(self.log_path, "a") as fh:
                        fh.write(dumps(cmd) + "\n")
                self.commands.put(cmd)

    def handle(self, cmd: dict[str, Any]) -> None:
        """Commands that never wait (called between events, too)."""
        rid, kind = cmd.get("id"), cmd.get("type")
        if kind == "prompt" and self.streaming:
            behavior = cmd.get("streamingBehavior")
            if behavior == "followUp":
                self.follow_ups.append(str(cmd.get("message")))
            elif behavior == "steer":
                self.steers.append(str(cmd.get("message")))
            else:
                respond(rid, "prompt", False, error="Agent is already processing.")
                return
            respond(rid, "prompt", data={"disposition": "queued"})
        elif kind == "prompt":
            if self.scenario == "reject":
                respond(rid, "prompt", False, error="No API key found for fake")
                return
            # Acked at once, like pi; the run starts in the main loop.
            respond(rid, "prompt", data={"disposition": "started"})
            self.streaming = True
            self.commands.put({**cmd, "_start": True})
        elif kind == "steer":
            self.steers.append(str(cmd.get("message")))
            respond(rid, "steer", data={"disposition": "queued"})
        elif kind == "follow_up":
            self.follow_ups.append(str(cmd.get("message")))
            respond(rid, "follow_up", data={"disposition": "queued"})
        elif kind == "abort":
            if self.streaming:
                self.aborting = True
                self.abort_ids.append(rid)
            else:
                respond(rid, "abort")
        elif kind == "get_state":
            data = {
                "sessionFile": self.session,
                "sessionId": "fake-session",
                "isStreaming": self.streaming,
                "isCompacting": False,
                "messageCount": 0,
                "pendingMessageCount": len(self.steers) + len(self.follow_ups),
            }
            respond(rid, "get_state", data=data)
        elif kind == "get_last_assistant_text":
            respond(
                rid,
                "get_last_assistant_text",
                data={} if self.last_text is None else {"text": self.last_text},
            )
        elif kind == "extension_ui_response":
            self.ui_answers[str(cmd.get("id"))] = cmd
        elif kind == "set_model":
            model = f"{cmd.get('provider')}/{cmd.get('modelId')}"
            known = os.environ.get("FAKE_PI_MODELS")
            if known is not None and model not in known.split(","):
                respond(rid, "set_model", False, error=f"Model not found: {model}")
                return
            self.switched_to = model
            respond(
                rid, "set_model", data={"provider": cmd.get("provider"), "id": cmd.get("modelId")}
            )
        else:
            respond(None, str(kind), False, error=f"Unknown command: {kind}")

    def pump(self, wait: float = 0.0) -> None:
        """Handle queued commands; sleep up to `wait` while doing so. Raise on abort."""
        deadline = time.monotonic() + wait
        while True:
            try:
                cmd = self.commands.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                cmd = None
            if cmd is not None:
                if cmd.get("_start"):
                    self.commands.put(cmd)  # a new prompt: leave it for the main loop
                    time.sleep(0.001)
                else:
                    self.handle(cmd)
            if self.aborting:
                raise Aborted
            if time.monotonic() >= deadline:
                return

    def main(self) -> None:
        threading.Thread(target=self.reader, daemon=True).start()
        while True:
            cmd = self.commands.get()
            if cmd is None:
                return
            if not cmd.get("_start"):
                self.handle(cmd)
                continue
            if cmd.get("type") == "prompt":
                self.run(cmd)

    # -- one prompt --
    def run(self, cmd: dict[str, Any]) -> None:
        message = str(cmd.get("message") or "")
        self.streaming = True
        emitted_end = False
        self.msg: AssistantMessage | None = None
        try:
            if self.scenario == "transcript":
                for line in self.transcript_lines():
                    emit(line)
                    self.pump()
                emitted_end = True
                return
            emit('{"type":"agent_start"}')
            prompt, lines, first = message, self.scenario_lines(message), True
            while True:
                self._remember("user", prompt)
                for line in user_message_lines(prompt, first=first):
                    emit(line)
                first = False
                for line in lines:
                    emit(line)
                    self.pump()
                if not (self.follow_ups or self.steers):
                    break
                # Steering and follow-up messages are answered before the run ends.
                prompt = "\n".join(self.steers + self.follow_ups)
                self.steers.clear()
                self.follow_ups.clear()
                lines = self.answer(f"ECHO: {prompt}")
            emit(_huge_agent_end() if self.scenario == "huge_end" else agent_end())
            emitted_end = True
            self.after_end()
            emit(agent_settled())
        except Aborted:
            msg = self.msg or AssistantMessage()
            msg.stop_reason, msg.error = "aborted", "Request was aborted"
            emit(msg.end())
            emit(msg.turn_end())
            emit(agent_end())
            emit(agent_settled(aborted=True))
            emitted_end = True
            text = "".join(b.get("text", "") for b in msg.content if b.get("type") == "text")
            self.last_text = text or self.last_text
        finally:
            self.streaming = False
            self.aborting = False
            if emitted_end:
                for abort_id in self.abort_ids:
                    respond(abort_id, "abort")
                self.abort_ids.clear()

    def answer(self, text: str, chunks: int = 2, delay: float = 0.0) -> Iterator[str]:
        self.msg = msg = AssistantMessage()
        yield '{"type":"turn_start"}'
        yield msg.start()
        for line in msg.text(text, chunks):
            yield line
            if delay:
                self.pump(delay)
        msg.usage = _usage(100, len(text) // 4 + 1)
        yield msg.end()
        yield msg.turn_end()
        self.last_text = text
        self._remember("assistant", text)

    def tool_turn(self, name: str, args: dict[str, Any], output: str) -> Iterator[str]:
        self.call_n += 1
        call_id = f"call_fake_{self.call_n}"
        self.msg = msg = AssistantMessage()
        yield '{"type":"turn_start"}'
        yield msg.start()
        yield from msg.toolcall(call_id, name, args)
        msg.usage = _usage(100, 12)
        yield msg.end()
        yield from tool_lines(call_id, name, args, output)
        yield msg.turn_end()

    def error_turn(self, error: str) -> Iterator[str]:
        self.msg = msg = AssistantMessage()
        msg.stop_reason, msg.error = "error", error
        yield '{"type":"turn_start"}'
        yield msg.start()
        yield msg.end()
        yield msg.turn_end()

    def scenario_lines(self, prompt: str) -> Iterator[str]:
        s = self.scenario
        text = os.environ.get("FAKE_PI_TEXT", "DONE")
        if self.switched_to:
            yield from self.answer(f"answered by {self.switched_to}")
        elif s in ("basic", "garbage", "huge", "huge_end"):
            if s == "garbage":
                yield "this is not json"
                yield '{"type":"message_update",'
            yield from self.tool_turn("bash", {"command": "echo hi"}, "hi\n")
            if s == "garbage":
                yield "\x00\x01\x02 binary junk"
            if s == "huge":
                self.huge_line()
            yield from self.answer(text)
        elif s == "text":
            yield from self.answer(text)
        elif s == "think":
            self.msg = msg = AssistantMessage()
            yield '{"type":"turn_start"}'
            yield msg.start()
            yield from msg.thinking("Let me think about it carefully.", 30)
            yield from msg.text(text)
            msg.usage = _usage(50, 9)
            yield msg.end()
            yield msg.turn_end()
            self.last_text = text
        elif s == "long":
            chunks = int(os.environ.get("FAKE_PI_CHUNKS", "2000"))
            yield from long_answer_lines(10_000, chunks)[:-2]
            self.last_text = "(long)"
            yield from long_answer_lines(10_000, chunks)[-2:]
        elif s == "slow":
            chunks = int(os.environ.get("FAKE_PI_CHUNKS", "200"))
            delay = float(os.environ.get("FAKE_PI_DELAY", "0.05"))
            words = "".join(f"tok{i} " for i in range(chunks))
            yield from self.answer(words, chunks, delay)
        elif s in ("retry", "retry_fail"):
            yield from self.retry_lines(succeed=s == "retry")
        elif s == "error":
            yield from self.error_turn("401 invalid api key")
        elif s == "crash":
            yield from self.tool_turn("bash", {"command": "echo hi"}, "hi\n")
            sys.stderr.write("fake pi: simulated crash\n")
            sys.stderr.flush()
            with _out_lock:
                _stdout.flush()
            os._exit(1)
        elif s == "hang":
            self.msg = msg = AssistantMessage()
            yield '{"type":"turn_start"}'
            yield msg.start()
            while True:
                self.pump(0.05)
        elif s == "ext":
            yield from self.ext_lines()
        elif s == "transcript":
            yield from self.transcript_lines()
        else:
            sys.stderr.write(f"fake pi: unknown scenario {s}\n")
            os._exit(2)

    def retry_lines(self, *, succeed: bool) -> Iterator[str]:
        attempts = 1 if succeed else 3
        for attempt in range(1, attempts + 1):
            yield from self.error_turn("500 mock internal error")
            emit(agent_end(will_retry=True))
            start = {"type": "auto_retry_start", "attempt": attempt, "maxAttempts": 3}
            start.update({"delayMs": 20, "errorMessage": "500 mock internal error"})
            emit(dumps(start))
            self.pump(0.02)
            emit('{"type":"agent_start"}')
        if succeed:
            yield from self.answer("DONE")
            emit(dumps({"type": "auto_retry_end", "success": True, "attempt": 1}))
            return
        yield from self.error_turn("500 mock internal error")
        self.after_end_lines = [
            dumps(
                {
                    "type": "auto_retry_end",
                    "success": False,
                    "attempt": 3,
                    "finalError": "500 mock internal error",
                }
            )
        ]

    def ext_lines(self) -> Iterator[str]:
        ui_id = "ui-1"
        request = {"type": "extension_ui_request", "id": ui_id, "method": "confirm"}
        request.update({"title": "Allow bash?", "message": "echo hi", "timeout": 10000})
        yield dumps(
            {"type": "extension_ui_request", "id": "ui-0", "method": "notify", "message": "hello"}
        )
        yield dumps(request)
        deadline = time.monotonic() + 5
        while ui_id not in self.ui_answers and time.monotonic() < deadline:
            self.pump(0.01)
        answer = self.ui_answers.get(ui_id)
        verdict = (
            "timeout"
            if answer is None
            else ("cancelled" if answer.get("cancelled") else "answered")
        )
        yield from self.answer(f"UI:{verdict}")

    def transcript_lines(self) -> Iterator[str]:
        path = Path(os.environ["FAKE_PI_TRANSCRIPT"])
        for raw in path.read_bytes().split(b"\n"):
            if not raw.strip() or b'"type":"response"' in raw[:60]:
                continue
            if raw.startswith(b'{"type":"message_end","message":{"role":"assistant"'):
                msg = json.loads(raw)["message"]
                self.last_text = "".join(
                    b.get("text", "") for b in msg["content"] if b.get("type") == "text"
                )
            yield raw.decode()

    def after_end(self) -> None:
        for line in getattr(self, "after_end_lines", []):
            emit(line)
        self.after_end_lines = []

    def huge_line(self) -> None:
        size = int(float(os.environ.get("FAKE_PI_HUGE_MB", "100")) * 1024 * 1024)
        head = (
            b'{"type":"message_update","usage":{},"assistantMessageEvent":'
            b'{"type":"toolcall_delta","contentIndex":0,"delta":"x","pad":"'
        )
        block = b"x" * (1 << 20)
        with _out_lock:
            _stdout.write(head)
            written = len(head)
            while written < size:
                _stdout.write(block)
                written += len(block)
            _stdout.write(b'"}}\n')
            _stdout.flush()


def _huge_agent_end() -> str:
    size = int(float(os.environ.get("FAKE_PI_HUGE_MB", "40")) * 1024 * 1024)
    return '{"type":"agent_end","messages":[{"pad":"' + "x" * size + '"}],"willRetry":false}'


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    argv_file = os.environ.get("FAKE_PI_ARGV_FILE")
    if argv_file:
        Path(argv_file).write_text(json.dumps(sys.argv[1:]))
    sys.stderr.write("fake pi 1.6.0 starting\n")
    sys.stderr.flush()
    startup = float(os.environ.get("FAKE_PI_STARTUP_S", "0"))
    if startup:
        time.sleep(startup)
    FakePi(sys.argv[1:]).main()


if __name__ == "__main__":
    main()
