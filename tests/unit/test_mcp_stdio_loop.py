"""mcp/stdio.py's loop with a fake tool set: no process, in-memory stdin and stdout.

What the loop owes every client whatever its tools do: answers out of order (a long call
holds up nobody), a cancelled call stops waiting and gets no answer, a closed stdin stops the
server's own jobs, a tool set that cannot load is one error per call, never a hang.
"""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from specialists.fronts.mcp import stdio, wire
from specialists.fronts.mcp.stdio import StdioServer

MODERN = {wire.VERSION_KEY: "2026-07-28", wire.CAPABILITIES_KEY: {}}


class Stdin:
    """Lines fed by the test; readline blocks like a pipe; None ends the input."""

    def __init__(self) -> None:
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._rest = b""

    def feed(self, *messages: object) -> None:
        for message in messages:
            raw = message if isinstance(message, bytes) else json.dumps(message).encode()
            self._lines.put(raw + b"\n")

    def close(self) -> None:
        self._lines.put(None)

    def readline(self, limit: int = -1) -> bytes:
        if not self._rest:
            item = self._lines.get(timeout=30)
            if item is None:
                self._lines.put(None)
                return b""
            self._rest = item
        cut = len(self._rest) if limit < 0 else limit
        end = self._rest.find(b"\n")
        take = min(cut, end + 1 if end >= 0 else len(self._rest))
        out, self._rest = self._rest[:take], self._rest[take:]
        return out


class Stdout:
    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self.closed = False

    def write(self, data: bytes) -> int:
        if self.closed:
            raise BrokenPipeError("closed")
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        with self._changed:
            self.answers.append(json.loads(data))
            self._changed.notify_all()
        return len(data)

    def flush(self) -> None:
        pass

    def answer(self, request_id: Any, timeout: float = 30) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((a for a in self.answers if a.get("id") == request_id), None)

        with self._changed:
            assert self._changed.wait_for(lambda: found() is not None, timeout), self.answers
            answer = found()
            assert answer is not None
            return answer


class FakeTools:
    """Two tools: `quick` answers at once; `wait` blocks until released or cancelled."""

    def __init__(self) -> None:
        self.listing = [{"name": "quick", "inputSchema": {"type": "object"}}]
        self.release = threading.Event()
        self.waiting = threading.Event()
        self.cancelled_seen = threading.Event()
        self.stopped: list[float] = []

    def call(self, name: str, arguments: dict, call_id: str, cancelled: Any) -> dict:
        if name == "quick":
            return {"content": [{"type": "text", "text": f"quick {call_id}"}]}
        if name == "wait":
            self.waiting.set()
            while not self.release.wait(0.01):
                if cancelled.is_set():
                    self.cancelled_seen.set()
                    return {"content": [{"type": "text", "text": "gave up"}]}
            return {"content": [{"type": "text", "text": "waited"}]}
        raise wire.RpcError(wire.INVALID_PARAMS, f"unknown tool {name!r}")

    def stop_all(self, grace: float) -> list[str]:
        self.stopped.append(grace)
        return []


def call(request_id: Any, name: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.fixture
def served():
    stdin, stdout, tools = Stdin(), Stdout(), FakeTools()
    server = StdioServer(lambda: tools, stdin, stdout)  # type: ignore[arg-type]
    result: dict[str, int] = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", server.serve()))
    thread.start()
    yield stdin, stdout, tools, result
    tools.release.set()
    stdin.close()
    thread.join(30)
    assert not thread.is_alive()


def test_a_long_call_holds_up_nobody_and_answers_last(served):
    stdin, stdout, tools, _ = served
    stdin.feed(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "x"}},
        call(1, "wait"),
    )
    assert tools.waiting.wait(30)
    stdin.feed(call(2, "quick"), {"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert stdout.answer(2)["result"]["content"][0]["text"] == "quick mcp-2"
    assert stdout.answer(3)["result"] == {}
    assert all(a.get("id") != 1 for a in stdout.answers)
    tools.release.set()
    assert stdout.answer(1)["result"]["content"][0]["text"] == "waited"
    assert [a["id"] for a in stdout.answers] == [0, 2, 3, 1]


def test_a_cancelled_call_stops_waiting_and_gets_no_answer(served):
    stdin, stdout, tools, _ = served
    stdin.feed(call("c1", "wait", **MODERN))
    assert tools.waiting.wait(30)
    stdin.feed(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "c1", "reason": "user pressed Esc"},
        },
        call("after", "quick", **MODERN),
    )
    assert tools.cancelled_seen.wait(30)
    after = stdout.answer("after")["result"]
    assert after["resultType"] == "complete"  # a modern request gets a modern answer
    assert after["_meta"][wire.SERVER_INFO_KEY]["name"] == "specialists"
    assert all(a.get("id") != "c1" for a in stdout.answers)


def test_a_cancellation_naming_no_request_id_is_ignored_and_the_server_goes_on(served):
    """A requestId that is a list or an object cannot name a request (and cannot be a key of
    the calls in flight): it killed the server with 'bug: TypeError: unhashable type'."""
    stdin, stdout, tools, result = served
    stdin.feed(call("w", "wait"))
    assert tools.waiting.wait(30)
    for odd in ([1], {"a": 1}, None, True, 1.5, ["w"]):
        stdin.feed(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": odd}}
        )
    stdin.feed({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert stdout.answer("after", timeout=10)["result"] == {}
    assert "code" not in result  # still serving
    assert not tools.cancelled_seen.is_set()  # no odd id cancelled the call in flight
    assert [a["id"] for a in stdout.answers] == ["after"]  # notifications get no answer


def test_ids_are_typed_and_one_id_runs_once(served):
    stdin, stdout, tools, _ = served
    stdin.feed(call(7, "wait"))
    assert tools.waiting.wait(30)
    stdin.feed(call(7, "quick"), call("7", "quick"))
    assert stdout.answer("7")["result"]["content"][0]["text"] == "quick mcp-7"
    reused = stdout.answer(None)
    assert reused["error"]["code"] == wire.INVALID_REQUEST and "already in use" in str(reused)


def test_unknown_methods_tools_and_cursors_are_errors_not_silence(served):
    stdin, stdout, _, _ = served
    stdin.feed(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/list"},
        call(2, "nope"),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "x"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 5}},
        {"jsonrpc": "2.0", "id": 5, "method": "server/discover"},
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": 5},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    )
    assert stdout.answer(1)["error"]["code"] == wire.METHOD_NOT_FOUND
    assert stdout.answer(2)["error"] == {"code": -32602, "message": "unknown tool 'nope'"}
    assert stdout.answer(3)["error"]["code"] == wire.INVALID_PARAMS
    assert stdout.answer(4)["error"]["code"] == wire.INVALID_PARAMS
    assert wire.VERSION_KEY in stdout.answer(5)["error"]["message"]
    assert stdout.answer(6)["result"]["tools"][0]["name"] == "quick"
    assert not [a for a in stdout.answers if a.get("id") is None]  # the notification: silence


def test_too_many_calls_at_once_are_refused(served, monkeypatch):
    monkeypatch.setattr(stdio, "MAX_CALLS", 2)
    stdin, stdout, tools, _ = served
    stdin.feed(call(1, "wait"), call(2, "wait"))
    assert tools.waiting.wait(30)
    stdin.feed(call(3, "quick"))
    refused = stdout.answer(3)["error"]
    assert refused["code"] == wire.INTERNAL_ERROR and "already running" in refused["message"]


def test_stdin_closing_stops_the_servers_jobs_and_ends_waiting_calls(served):
    stdin, _, tools, result = served
    stdin.feed(call(1, "wait"))
    assert tools.waiting.wait(30)
    stdin.close()
    assert tools.cancelled_seen.wait(30)  # the waiting call was told
    for _ in range(300):
        if "code" in result:
            break
        threading.Event().wait(0.1)
    assert result.get("code") == 0 and tools.stopped == [stdio.SHUTDOWN_GRACE_S]


def test_a_tool_set_that_cannot_load_answers_each_call_with_why():
    stdin, stdout = Stdin(), Stdout()

    def broken() -> Any:
        raise RuntimeError("the catalog is unreadable")

    server = StdioServer(broken, stdin, stdout)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve)
    thread.start()
    stdin.feed(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "quick"),
    )
    assert stdout.answer(1)["result"]["protocolVersion"] == "2025-11-25"
    for request_id in (2, 3):
        error = stdout.answer(request_id)["error"]
        assert error["code"] == wire.INTERNAL_ERROR
        assert error["message"].endswith("could not load: RuntimeError: the catalog is unreadable")
    stdin.close()
    thread.join(30)
    assert not thread.is_alive()


def test_an_oversized_line_is_skipped_and_answered(monkeypatch):
    monkeypatch.setattr(wire, "MAX_LINE_BYTES", 1000)  # before the loop reads its first line
    stdin, stdout, tools = Stdin(), Stdout(), FakeTools()
    thread = threading.Thread(target=StdioServer(lambda: tools, stdin, stdout).serve)  # type: ignore[arg-type]
    thread.start()
    big = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"' + b"a" * 5000
    stdin.feed(big + b'"}}', call("next", "quick"))
    assert "longer than" in stdout.answer("big")["error"]["message"]
    assert stdout.answer("next")["result"]["content"][0]["text"] == "quick mcp-next"
    stdin.close()
    thread.join(30)


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code-2.1.332-mcp-stdio.jsonl"


def test_claude_code_2_1_332s_own_session_replays():
    """The client side of a recorded session with the real Claude Code 2.1.332 (it probes
    server/discover, then speaks 2026-07-28, never initialize): each request gets an answer
    to its id, shaped as the recorded server answered."""
    recorded = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    client = [r["msg"] for r in recorded if r["dir"] == "client"]
    answered = {r["msg"]["id"]: r["msg"] for r in recorded if r["dir"] == "server"}
    assert client[0]["method"] == "server/discover"
    assert all(m["params"]["_meta"][wire.VERSION_KEY] == "2026-07-28" for m in client)
    stdin, stdout, tools = Stdin(), Stdout(), FakeTools()
    tools.listing = [{"name": "status"}, {"name": "result"}]
    tools.call = lambda name, arguments, call_id, cancelled: {  # type: ignore[method-assign]
        "content": [{"type": "text", "text": name}]
    }
    thread = threading.Thread(target=StdioServer(lambda: tools, stdin, stdout).serve)  # type: ignore[arg-type]
    thread.start()
    stdin.feed(*client)
    for message in client:
        ours, theirs = stdout.answer(message["id"]), answered[message["id"]]
        assert set(ours) == set(theirs) and set(ours["result"]) <= set(theirs["result"]) | {
            "isError"
        }
        assert ours["result"]["resultType"] == "complete"
    stdin.close()
    thread.join(30)


def test_a_client_that_is_no_job_is_listed_before_the_table_loads(monkeypatch, tmp_path):
    """tools/list answers from listing.json while the table is still loading (its start is
    what a client waits for); a job's server waits for the table, whose listing is its
    tier's."""
    for name in ("SPECIALISTS_OWNER", "SPECIALISTS_JOB_ID", "SPECIALISTS_NODE_COPY"):
        monkeypatch.delenv(name, raising=False)
    loading = threading.Event()

    def slow() -> FakeTools:
        loading.wait(30)
        return FakeTools()

    stdin, stdout = Stdin(), Stdout()
    thread = threading.Thread(target=StdioServer(slow, stdin, stdout, "core").serve)  # type: ignore[arg-type]
    thread.start()
    stdin.feed({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    listed = stdout.answer(1)["result"]["tools"]
    assert [t["name"] for t in listed] == [t["name"] for t in stdio.static_listing("core") or []]
    assert "run" in {t["name"] for t in listed} and not loading.is_set()
    for text in ("{not json", '{"all": []}', ""):  # torn, without the set, empty: the table's
        broken = tmp_path / "listing.json"
        broken.write_text(text)
        with monkeypatch.context() as m:
            m.setattr(stdio, "LISTING", str(broken))
            assert stdio.static_listing("core") is None
    monkeypatch.setenv("SPECIALISTS_OWNER", "job-0000abcd")
    assert stdio.static_listing("core") is None
    stdin.feed({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    loading.set()
    assert stdout.answer(2)["result"]["tools"] == FakeTools().listing  # the table's, loaded
    stdin.close()
    thread.join(30)
    assert not thread.is_alive()


def test_a_client_that_leaves_while_the_table_loads_leaves_the_loader_running_and_said():
    """A refused request needs no tool table: a client can be answered and gone while the
    loader still imports. The server says it is busy, so its process does not finalize under
    that import (it crashed so once, SIGSEGV, in CI)."""
    stdin, stdout, tools, release = Stdin(), Stdout(), FakeTools(), threading.Event()

    def slow() -> Any:
        release.wait(30)
        return tools

    server = StdioServer(slow, stdin, stdout)  # type: ignore[arg-type]
    stdin.feed(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","prompt":"\\ud800"}}',
    )
    stdin.close()
    assert server.serve() == 0
    assert "lone surrogate" in stdout.answer(7)["error"]["message"]
    assert server.busy()
    release.set()
    for _ in range(300):
        if not server.busy():
            break
        threading.Event().wait(0.1)
    assert not server.busy()


@pytest.mark.parametrize("busy", [True, False])
def test_the_process_ends_at_once_only_while_a_thread_of_ours_runs(monkeypatch, busy):
    exits: list[int] = []

    class Served:
        def __init__(self, *args: Any) -> None:
            pass

        def serve(self) -> int:
            return 0

        def busy(self) -> bool:
            return busy

        def terminate(self, *args: Any) -> None:
            pass

    monkeypatch.setattr(stdio, "StdioServer", Served)
    monkeypatch.setattr(stdio, "check_stdio", lambda: None)
    monkeypatch.setattr(stdio.signal, "signal", lambda *args: None)
    monkeypatch.setattr(stdio.os, "_exit", exits.append)
    assert stdio.serve(lambda: None) == 0  # type: ignore[arg-type, return-value]
    assert exits == ([0] if busy else [])
