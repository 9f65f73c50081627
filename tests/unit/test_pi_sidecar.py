"""The pi extension's sidecar: every request type, hostile input, and at-least-once delivery.

Most tests run the Sidecar on a thread over pipes (tests/support/sidecar.py); the ones about
the process itself (a closed stdin, a restart, its parent's death) start the real
`python -m specialists sidecar`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.events.emitter import Emitter
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.fronts.pi.ops import Front
from specialists.fronts.pi.sidecar import MAX_BUSY, MAX_REQUEST_BYTES
from specialists.native import agent_table as registry
from specialists.native import tool_tiers as tiers
from specialists.native.agent_tools import AgentTool, Reply, ToolCall
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from tests.support.agent_env import AgentEnv
from tests.support.jobs import new_job
from tests.support.sidecar import InProcess

OWNER = "pi-session-1"
SRC = EventSource("bg_run", "call_1", {"command": "make"})


@pytest.fixture
def root(isolated_env: AgentEnv) -> Path:
    return isolated_env.project / ".specialists"


@pytest.fixture
def side(root: Path, isolated_env: AgentEnv) -> Iterator[InProcess]:
    running = InProcess(Front(root, OWNER, isolated_env.project))
    yield running
    running.close()


def emit(root: Path, body: str, owner: str = OWNER) -> str:
    event = Emitter(root, "bg-test").emit(owner, "job_exit", SRC, body)
    assert event is not None
    return event.id


def write_config(root: Path, text: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "config.toml"
    path.write_text(text)
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # a different stamp even on coarse clocks
    os.utime(path, ns=(stamp, stamp))


# --- requests ----------------------------------------------------------------------------


def test_hello_and_tools_describe_the_session_and_the_whole_tool_table(side: InProcess) -> None:
    """hello says who the sidecar serves; tools lists every registry tool with its schema."""
    hello = side.peer.result("hello")
    assert hello["protocol"] == 1 and hello["owner"] == OWNER
    assert hello["settings"]["bash"]["guard"] == "block"
    assert hello["settings"]["overflow"]["max_chars"] == 40_000
    listed = side.peer.result("tools")
    assert [t["name"] for t in listed["tools"]] == [
        t.name for t in registry.TOOLS if t.scope == "any"
    ]
    sleep = next(t for t in listed["tools"] if t["name"] == "sleep")
    assert sleep["schema"]["required"] == ["seconds"] and sleep["guidance"]
    assert "dispatch it and yield" in listed["guidance_core"]


def test_a_new_tool_in_the_registry_is_served_without_changing_the_front(
    side: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front is generic: whatever the table holds is listed and called (bg_run later)."""
    echo = AgentTool(
        "echo_tool",
        "Echo the text back.",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        lambda call: Reply(f"echo {call.args['text']} for {call.caller.owner}", {"n": 1}),
    )
    monkeypatch.setattr(registry, "TOOLS", (*registry.TOOLS, echo))
    assert "echo_tool" in [t["name"] for t in side.peer.result("tools")["tools"]]
    out = side.peer.result("call", tool="echo_tool", args={"text": "hi"}, call_id="c9")
    assert out == {
        "text": f"echo hi for {OWNER}",
        "data": {"n": 1},
        "is_error": False,
        "yields": False,
    }


def test_child_scoped_tools_are_offered_only_inside_a_thread_job(
    root: Path, isolated_env: AgentEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    child_tool = AgentTool(
        "report_up", "Report.", {"type": "object"}, lambda c: Reply("ok"), scope="child"
    )
    monkeypatch.setattr(registry, "TOOLS", (*registry.TOOLS, child_tool))
    monkeypatch.setattr(tiers, "NEEDS_NOTHING", tiers.NEEDS_NOTHING | {"report_up"})
    store = JobStore(root, news=NEWS)
    parent, lock = new_job(store, isolated_env.project)
    lock.release()
    child, lock = new_job(
        store, isolated_env.project, parent_id=parent.id, thread={"id": "t-" + "1" * 32}
    )
    lock.release()
    continued, lock = new_job(store, isolated_env.project, parent_id=parent.id)  # resume
    lock.release()
    names = lambda owner: [t.name for t in Front(root, owner, isolated_env.project).offered_tools()]  # noqa: E731
    assert "report_up" in names(f"job-{child.id}")
    assert "report_up" not in names(f"job-{parent.id}")
    assert "report_up" not in names(f"job-{continued.id}")  # a continued job is no thread
    assert "report_up" not in names(OWNER)


def test_call_sleep_sets_a_timer_whose_event_is_pushed_and_acknowledged(
    side: InProcess, root: Path
) -> None:
    """sleep yields; the status line learns of the timer; the event comes; ack moves the cursor."""
    side.peer.result("hello")
    out = side.peer.result("call", tool="sleep", args={"seconds": 1, "note": "nap"}, call_id="c1")
    assert out["yields"] is True and not out["is_error"]
    side.peer.wait_push("status", lambda m: m["timers"] == 1)
    push = side.peer.wait_push("events", timeout=30)
    [event] = push["events"]
    assert event["kind"] == "timer" and event["tool"] == "sleep" and event["call_id"] == "c1"
    assert event["text"].startswith("[specialists event] timer from sleep (c1)\n")
    assert "nap" in event["text"]
    assert Inbox(root, OWNER).has_pending()  # not acknowledged yet: at-least-once
    assert side.peer.result("ack", batch=push["batch"]) == {"acked": 1}
    assert not Inbox(root, OWNER).has_pending()
    side.peer.wait_push("status", lambda m: m["timers"] == 0)
    assert side.peer.result("ack", batch=push["batch"]) == {"acked": 0, "stale": True}


def test_a_tool_error_is_a_reply_the_model_reads(side: InProcess) -> None:
    out = side.peer.result("call", tool="sleep", args={"seconds": 0}, call_id="c1")
    assert out["is_error"] and out["text"].startswith("error: argument 'seconds'")
    reply = side.peer.request("call", tool="no_such_tool", args={})
    assert not reply["ok"] and "unknown tool 'no_such_tool'" in reply["error"]
    reply = side.peer.request("call", tool="sleep", args=[1])
    assert not reply["ok"] and "args must be a JSON object" in reply["error"]


def test_classify_follows_the_configured_mode_and_picks_up_config_changes(
    side: InProcess, root: Path
) -> None:
    """block names bg_run and the escape; a switch to warn applies on the next call (R-B5)."""
    verdict = side.peer.result("classify", command="sleep 600")
    assert verdict["mode"] == "block" and verdict["flagged"] and verdict["pattern"] == "sleep 600"
    assert "bg_run" in verdict["reason"] and 'guard = "warn"' in verdict["reason"]
    assert verdict["default_timeout_s"] == 180
    assert not side.peer.result("classify", command="echo 'sleep 600'")["flagged"]
    write_config(root, '[bash]\nguard = "warn"\ndefaultTimeoutSec = 60\n')
    verdict = side.peer.result("classify", command="tail -f log")
    assert (verdict["mode"], verdict["flagged"], verdict["default_timeout_s"]) == ("warn", True, 60)
    write_config(root, '[bash]\nguard = "off"\n')
    verdict = side.peer.result("classify", command="sleep 600")
    assert (verdict["flagged"], verdict["default_timeout_s"]) == (False, None)


def test_claimed_refuses_another_jobs_file_and_lets_the_holders_lineage_write(
    root: Path, isolated_env: AgentEnv
) -> None:
    """The claims guard of pi's write and edit (issue 23): the holder's name, or nothing."""
    from specialists.store.claims import Claims

    store = JobStore(root, news=None)
    holder = new_job(store, isolated_env.project, specialist="executor")
    writer = new_job(store, isolated_env.project)
    for _, lock in (holder, writer):
        lock.release()
    Claims(root).claim(holder[0].id, [("src/a.py", False)], specialist="executor", now_ms=1)
    for owner, refused in (
        (OWNER, True),
        (f"job-{writer[0].id}", True),
        (f"job-{holder[0].id}", False),
    ):
        running = InProcess(Front(root, owner, isolated_env.project / "src"))
        try:
            verdict = running.peer.result("claimed", path="a.py")  # from pi's cwd
            assert bool(verdict["refused"]) is refused, owner
            if refused:
                assert f"src/a.py is claimed by job {holder[0].id} (executor)" in verdict["refused"]
            assert running.peer.result("claimed", path="b.py")["refused"] is None
            reply = running.peer.request("claimed", path=7)
            assert not reply["ok"]
        finally:
            running.close()


def test_claimed_looks_at_the_file_pi_writes_whatever_the_model_spelled(
    root: Path, isolated_env: AgentEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi resolves write/edit paths its own way: '@src/a.py', 'src/a\u00a0b.py' and a
    file:// URL name a claimed file, and were let through; '~nouser/x' and a NUL byte were
    answered 'bug: claimed failed: RuntimeError/ValueError' with a traceback."""
    from specialists.store.claims import Claims

    store = JobStore(root, news=None)
    holder, lock = new_job(store, isolated_env.project, specialist="executor")
    lock.release()
    monkeypatch.setenv("HOME", str(isolated_env.project))
    claimed = [("src/a.py", False), ("src/a b.py", False)]
    Claims(root).claim(holder.id, claimed, specialist="executor", now_ms=1)
    front = Front(root, OWNER, isolated_env.project)
    a_py = isolated_env.project / "src" / "a.py"
    for path in ("@src/a.py", "src/a\u00a0b.py", f"file://{a_py}", "~/src/a.py", str(a_py)):
        assert front.claimed({"path": path})["refused"], path
    assert front.claimed({"path": "~nouser/src/a.py"}) == {"refused": None}  # a name
    with pytest.raises(UserError, match="NUL"):
        front.claimed({"path": "src/a.py\0"})


def test_a_broken_config_keeps_the_defaults_and_says_why(
    root: Path, isolated_env: AgentEnv
) -> None:
    write_config(root, "[bash\nguard = \n")
    front = Front(root, OWNER, isolated_env.project)
    assert front.settings.bash.guard == "block"
    assert "not valid TOML" in front.problems[0]
    assert "using the default settings" in front.problems[0]
    write_config(root, '[bash]\nguard = "sometimes"\n')
    assert front.refresh_settings() is False  # still the defaults, a different problem
    assert "bash.guard must be one of" in front.problems[0]


def test_an_unknown_key_is_named_and_the_rest_of_the_file_still_applies(
    root: Path, isolated_env: AgentEnv
) -> None:
    """Seed 001 3.2: reported, ignored. The sidecar used to drop the whole file for it."""
    write_config(root, "[overflow]\nmaxChars = 500\ncolour = 1\n[jobs]\nmax = 3\n")
    front = Front(root, OWNER, isolated_env.project)
    assert front.settings.overflow.max_chars == 500 and front.settings.jobs.max == 3
    (problem,) = front.problems
    assert problem.endswith("overflow.colour: unknown key, ignored")


def test_settings_changes_are_pushed(side: InProcess, root: Path) -> None:
    side.peer.result("hello")
    write_config(root, "[overflow]\nmaxChars = 500\n")
    push = side.peer.wait_push("settings")
    assert push["settings"]["overflow"]["max_chars"] == 500


def test_bound_spills_a_long_result_and_leaves_short_ones_and_read_alone(
    side: InProcess, root: Path
) -> None:
    """R-O1..R-O3: over the limit -> head, marker with the path, tail; the file has it all."""
    assert side.peer.result("bound", tool="bash", text="short") == {
        "text": "short",
        "spilled": False,
    }
    long = "".join(f"line {i}\n" for i in range(10_000))
    out = side.peer.result("bound", tool="bash", text=long)
    assert out["spilled"] and out["text"].startswith(long[:6000])
    assert out["text"].endswith(long[-2000:])
    spilled = next((root / "owners" / OWNER / "spill").glob("bash-result-*.txt"))
    assert spilled.read_text() == long and str(spilled) in out["text"]
    marked = "[... 1 of 2 characters omitted; the full text is in /x ...]" + long
    assert side.peer.result("bound", tool="bash", text=marked)["spilled"]  # R-O3
    assert side.peer.result("bound", tool="read", text=long) == {"text": long, "spilled": False}


def test_a_result_too_long_for_one_line_is_bound_from_parts_on_disk(
    side: InProcess, root: Path
) -> None:
    text = "é" * 200_000 + "x" * 200_000 + "🙂" * 100_000
    parts = [text[i : i + 150_000] for i in range(0, len(text), 150_000)]
    for part in parts:
        side.peer.result("bound_part", stream="s1", text=part)
    out = side.peer.result("bound", tool="bash", stream="s1")
    assert (
        out["spilled"] and out["text"].startswith("é" * 6000) and out["text"].endswith("🙂" * 2000)
    )
    assert next((root / "owners" / OWNER / "spill").glob("bash-result-*.txt")).read_text() == text
    assert not list((root / "owners" / OWNER / "spill").glob(".part-*"))  # the parts are gone
    reply = side.peer.request("bound", tool="bash", stream="s1")
    assert not reply["ok"] and "no stream" in reply["error"]
    reply = side.peer.request("bound_part", stream="s2", text="x" * (256 * 1024 + 1))
    assert not reply["ok"] and "too long" in reply["error"]


def test_parts_of_a_stream_never_bound_are_removed_when_the_sidecar_ends(
    root: Path, isolated_env: AgentEnv
) -> None:
    """pi gone mid-stream (the extension's request timed out, pi crashed): the part files,
    up to 256 MB each, stayed in the spill directory for good."""
    running = InProcess(Front(root, OWNER, isolated_env.project))
    running.peer.result("bound_part", stream="s1", text="x" * 1000)
    spill = root / "owners" / OWNER / "spill"
    assert list(spill.glob(".part-*"))
    running.close()
    assert not list(spill.glob(".part-*"))


def test_an_abandoned_stream_does_not_hold_its_slot_for_the_rest_of_the_session(
    root: Path, isolated_env: AgentEnv
) -> None:
    """The extension gives up on a stream whose bound_part failed or timed out, and never
    sends its bound: after MAX_OPEN_STREAMS of those every long result was refused."""
    from specialists.fronts.pi.ops import MAX_OPEN_STREAMS, STREAM_IDLE_S

    now = [1000.0]
    front = Front(root, OWNER, isolated_env.project, clock=lambda: now[0])
    for i in range(MAX_OPEN_STREAMS):
        front.bound_part({"stream": f"gone{i}", "text": "x"})
    with pytest.raises(UserError, match="too many open result streams"):
        front.bound_part({"stream": "busy", "text": "x"})  # four live ones: still refused
    now[0] += STREAM_IDLE_S + 1
    front.bound_part({"stream": "gone0", "text": "x"})  # still in use: kept
    assert front.bound_part({"stream": "new", "text": "y"}) == {"chars": 1}
    assert front.bound({"tool": "bash", "stream": "new"})["text"] == "y"
    assert front.bound({"tool": "bash", "stream": "gone0"})["text"] == "xx"
    with pytest.raises(UserError, match="no stream"):
        front.bound({"tool": "bash", "stream": "gone1"})
    assert not list((root / "owners" / OWNER / "spill").glob(".part-*"))


def test_each_stream_has_a_part_file_of_its_own_whatever_its_name(
    root: Path, isolated_env: AgentEnv
) -> None:
    """Part files were named after the stream with each non-alphanumeric character as '_':
    'a-b' and 'a_b' shared a file (each bound got both texts, and the second found it gone),
    and 64 four-byte letters made a name too long for the file system ('bug: bound_part
    failed: OSError', and the stream kept its slot)."""
    front = Front(root, OWNER, isolated_env.project)
    front.bound_part({"stream": "a-b", "text": "x"})
    front.bound_part({"stream": "a_b", "text": "y"})
    front.bound_part({"stream": "\U0001d7d8" * 64, "text": "z"})
    assert front.bound({"tool": "bash", "stream": "a-b"})["text"] == "x"
    assert front.bound({"tool": "bash", "stream": "a_b"})["text"] == "y"
    assert front.bound({"tool": "bash", "stream": "\U0001d7d8" * 64})["text"] == "z"


def test_status_and_command_answer_for_this_owner(side: InProcess, root: Path) -> None:
    assert side.peer.result("status") == {
        "jobs": 0,
        "timers": 0,
        "threads": 0,
        "pending_events": False,
    }
    side.peer.result("call", tool="sleep", args={"seconds": 3600, "note": "later"}, call_id="c1")
    side.peer.result("call", tool="sleep", args={"seconds": 7200}, call_id="c2")
    timers = side.peer.result("command", args="timers")["text"]
    assert (
        timers.startswith("2 pending timer(s):") and "later" in timers and "(in 3600 s)" in timers
    )
    first = TimerStore(root, OWNER).pending()[0].id
    assert (
        side.peer.result("command", args=f"cancel {first}")["text"] == f"Timer {first}: cancelled."
    )
    assert "Cancelled 1 pending timer(s)." in side.peer.result("command", args="cancel all")["text"]
    assert side.peer.result("command", args="timers")["text"] == "no pending timers"
    assert side.peer.result("command", args="jobs")["text"] == "No background jobs."
    assert side.peer.result("command", args="threads")["text"] == "no threads"
    config = side.peer.result("command", args="config")["text"]
    assert "config.toml (absent: the defaults apply)" in config and "guard = 'block'" in config
    overview = side.peer.result("command", args="")["text"]
    assert overview.startswith(f"specialists for {OWNER}") and "timers: 0 pending" in overview
    reply = side.peer.request("command", args="frobnicate")
    assert not reply["ok"] and "usage: /specialists" in reply["error"]
    reply = side.peer.request("command", args="cancel tm-000000000000")
    assert not reply["ok"] and "no timer" in reply["error"]


# --- hostile input -----------------------------------------------------------------------


def test_malformed_requests_get_an_error_reply_and_are_logged(
    side: InProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """Not JSON, not an object, no usable id, unknown op, wrong field type: each answered."""
    caplog.set_level(logging.WARNING, logger="specialists.pi_sidecar")
    peer = side.peer
    for raw, expected in [
        (b"not json\n", "not JSON"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'{"op": "hello"}\n', "id must be"),
        (b'{"id": true, "op": "hello"}\n', "id must be"),
        (b'{"id": "' + b"x" * 100 + b'", "op": "hello"}\n', "id must be"),
        (b'{"id": [1], "op": "hello"}\n', "id must be"),
        (b'{"id": 1001, "op": [1] }\n', "unknown op"),
        (b'{"id": 1002, "op": "classify", "command": 5}\n', "must be a str"),
        (b'{"id": 1003, "op": "classify"}\n', "missing field 'command'"),
        (b"\xff\xfe\n", "not JSON"),
        (b"[" * 100_000 + b"\n", "not JSON"),
    ]:
        mark = len(peer.messages)
        peer.send_raw(raw)
        reply = peer.wait(lambda m: "push" not in m, after=mark)
        assert reply["ok"] is False and expected in reply["error"], (raw[:40], reply)
    assert peer.result("classify", command="ls")["flagged"] is False  # still serving
    assert len([r for r in caplog.records if r.name == "specialists.pi_sidecar"]) == 11


def test_a_huge_line_is_skipped_without_being_held_and_the_next_request_is_served(
    side: InProcess,
) -> None:
    mark = len(side.peer.messages)
    side.peer.send_raw(
        b'{"id": 1, "op": "classify", "command": "' + b"a" * (3 * MAX_REQUEST_BYTES) + b'"}\n'
    )
    reply = side.peer.wait(lambda m: "push" not in m, after=mark)
    assert reply == {
        "id": None,
        "ok": False,
        "error": f"request line over {MAX_REQUEST_BYTES} bytes; dropped",
    }
    assert side.peer.result("classify", command="sleep 100")["flagged"] is True


def test_a_slow_tool_never_delays_guards_and_too_many_are_refused(
    side: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()

    def hold(call: ToolCall) -> Reply:
        gate.wait(30)
        return Reply("done")

    monkeypatch.setattr(
        registry, "TOOLS", (*registry.TOOLS, AgentTool("hold", "Hold.", {"type": "object"}, hold))
    )
    try:
        for n in range(MAX_BUSY):
            side.peer.send({"id": f"h{n}", "op": "call", "tool": "hold", "args": {}})
        assert side.peer.result("classify", command="sleep 30")["flagged"]  # answered meanwhile
        reply = side.peer.request("call", tool="hold", args={})
        assert not reply["ok"] and reply["error"].startswith("busy:")
    finally:
        gate.set()
    for n in range(MAX_BUSY):
        assert side.peer.wait(lambda m, n=n: m.get("id") == f"h{n}")["result"]["text"] == "done"


def test_a_defect_in_a_handler_answers_with_bug_and_the_sidecar_goes_on(
    side: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(call: ToolCall) -> Reply:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(
        registry, "TOOLS", (*registry.TOOLS, AgentTool("broken", "B.", {"type": "object"}, broken))
    )
    reply = side.peer.request("call", tool="broken", args={})
    assert not reply["ok"] and reply["error"] == "bug: call failed: ZeroDivisionError: boom"
    assert side.peer.result("status")["timers"] == 0


def test_damaged_inbox_lines_are_skipped_and_later_events_still_arrive(
    side: InProcess, root: Path
) -> None:
    first = emit(root, "first")
    with open(root / "owners" / OWNER / "events.jsonl", "ab") as fh:
        fh.write(b'{"broken": \n' + b'{"id": 5}\n')
    second = emit(root, "second")
    side.peer.result("hello")
    push = side.peer.wait_push("events")
    assert [e["id"] for e in push["events"]] == [first, second]


def test_an_unacknowledged_batch_is_pushed_again(root: Path, isolated_env: AgentEnv) -> None:
    running = InProcess(Front(root, OWNER, isolated_env.project), repush_s=0.2)
    try:
        event_id = emit(root, "exit 0")
        running.peer.result("hello")
        first = running.peer.wait_push("events")
        again = running.peer.wait(
            lambda m: m.get("push") == "events", after=running.peer.messages.index(first) + 1
        )
        assert again["batch"] == first["batch"] and again["events"][0]["id"] == event_id
        running.peer.result("ack", batch=first["batch"])
        assert not Inbox(root, OWNER).has_pending()
    finally:
        running.close()


# --- the process -------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
