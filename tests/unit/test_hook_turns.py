"""PreToolUse, PostToolUse and Stop: guards and events inside a Claude Code turn (in-process).

Hook inputs are the ones Claude Code 2.1.197 sent to a recording hook
(tests/support/claude_hook_inputs.json), with the fields each test varies replaced; 2.1.332's
(tests/fixtures/claude-code-2.1.332/hook-inputs.json, tests/support/record_claude.py) carry
the same fields, which a test below holds.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from specialists.base.owner import SESSION_ENV
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.fronts.hooks import delivery, stop
from specialists.fronts.hooks.common import run_hook
from specialists.store.paths import user_state_dir

INPUTS = json.loads((Path(__file__).parents[1] / "support" / "claude_hook_inputs.json").read_text())
CURRENT = json.loads(
    (
        Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.332" / "hook-inputs.json"
    ).read_text()
)
SESSION = INPUTS["Stop"]["session_id"]
KEY = f"claude-{SESSION}"


@pytest.fixture(autouse=True)
def session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SESSION_ENV, SESSION)
    monkeypatch.setenv(stop.MAX_WAIT_ENV, "20")


@pytest.fixture
def state() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"
    root.mkdir(exist_ok=True)
    return root


def hook_input(name: str, **changes: Any) -> str:
    data = dict(INPUTS[name])
    data["cwd"] = os.environ["SPECIALISTS_PROJECT_ROOT"]
    data.update(changes)
    return json.dumps(data)


def call(event: str, stdin: str) -> dict[str, Any] | None:
    out = io.StringIO()
    assert run_hook(event, io.StringIO(stdin), out) == 0
    text = out.getvalue()
    if not text:
        return None
    assert text.endswith("\n") and text.count("\n") == 1, "one JSON line"
    reply: dict[str, Any] = json.loads(text)
    return reply


def post_event(state: Path, body: str, seq: int = 1, key: str = KEY) -> str:
    source = EventSource("bg_run", f"toolu_{seq}", {"command": "make test"})
    Inbox(state, key).append("job_exit", source, body, source_id="bg-1a2b3c4d.00ff", seq=seq)
    return f"bg-1a2b3c4d.00ff:job_exit:{seq}"


def pending(state: Path, key: str = KEY) -> list[str]:
    return [e.id for e in Inbox(state, key).pending().events]


def set_timer(state: Path, in_s: float, key: str = KEY) -> str:
    now = time.time()
    timer = TimerStore(state, key).set(
        int((now + in_s) * 1000),
        now_ms=int(now * 1000),
        note="check the build",
        source=EventSource("sleep", "toolu_9", {"seconds": in_s}),
    )
    return timer.id


def write_config(state: Path, text: str) -> None:
    (state / "config.toml").write_text(text)


def hook_log() -> str:
    path = Path(user_state_dir()) / "hooks.log"
    return path.read_text() if path.exists() else ""


# --------------------------------------------------------------------------- PreToolUse


def bash(command: str, **extra: Any) -> str:
    return hook_input("PreToolUse:Bash", tool_input={"command": command, **extra})


def test_a_command_that_holds_the_turn_is_refused_with_the_way_out(state):
    """R-B1, R-B5: the reason names bg_run and sleep, and how to switch the guard to warn."""
    reply = call("pre-tool-use", bash("sleep 60 && make"))
    assert reply is not None
    inner = reply["hookSpecificOutput"]
    assert inner["permissionDecision"] == "deny"
    reason = inner["permissionDecisionReason"]
    assert "bg_run" in reason and "sleep" in reason and "warn" in reason


def test_an_ordinary_command_gets_the_default_timeout_and_nothing_else(state):
    """R-B4: no timeout given, so bash.defaultTimeoutSec (in Claude Code's milliseconds);
    no permission decision, so the user's permission rules still apply."""
    reply = call("pre-tool-use", bash("ls -la"))
    assert reply == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": "ls -la", "timeout": 180_000},
        }
    }
    assert call("pre-tool-use", bash("ls", timeout=5000)) is None
    assert call("pre-tool-use", bash("make", run_in_background=True)) is None


def test_warn_runs_the_command_and_tells_the_user_and_off_says_nothing(state):
    write_config(state, '[bash]\nguard = "warn"\ndefaultTimeoutSec = 2000\n')
    reply = call("pre-tool-use", bash("tail -f log.txt"))
    assert reply is not None
    assert "tail -f" in reply["systemMessage"]
    assert reply["hookSpecificOutput"]["updatedInput"]["timeout"] == 600_000  # Bash's maximum
    assert "permissionDecision" not in reply["hookSpecificOutput"]
    write_config(state, '[bash]\nguard = "off"\n')
    assert call("pre-tool-use", bash("tail -f log.txt")) is None


def test_quoted_text_and_other_tools_are_left_alone(state):
    assert "permissionDecision" not in str(call("pre-tool-use", bash("echo 'sleep 600'")))
    assert call("pre-tool-use", hook_input("PreToolUse:mcp__specialists__status")) is None


def test_a_broken_config_gives_the_defaults_and_one_log_line(state):
    write_config(state, "[bash\nguard = ")
    reply = call("pre-tool-use", bash("sleep 300"))
    assert reply is not None and reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "not valid TOML" in hook_log()


def file_tool(tool: str, path: str) -> str:
    field = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return hook_input("PreToolUse:Bash", tool_name=tool, tool_input={field: path, "content": "x"})


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit", "NotebookEdit"])
def test_a_file_another_live_job_claimed_is_denied_with_the_holders_name(state, tool):
    """The claims guard (issue 23): the session is no job of ours, so a live job's claim
    denies its write; a path nobody claimed, a dead holder and a relative path as Claude Code
    would never send it all behave."""
    from specialists.store.claims import Claims
    from specialists.store.jobs import JobStore
    from tests.support.jobs import new_job

    project = state.parent
    assert call("pre-tool-use", file_tool(tool, str(project / "a.py"))) is None  # none yet
    record, lock = new_job(JobStore(state, news=None), project, specialist="executor")
    lock.release()
    Claims(state).claim(record.id, [("a.py", False)], specialist="executor", note="x", now_ms=1)
    reply = call("pre-tool-use", file_tool(tool, str(project / "a.py")))
    assert reply is not None
    inner = reply["hookSpecificOutput"]
    assert inner["permissionDecision"] == "deny"
    assert inner["permissionDecisionReason"].startswith(
        f"a.py is claimed by job {record.id} (executor) (x); not written"
    )
    assert call("pre-tool-use", file_tool(tool, "a.py")) is not None  # from the session's cwd
    assert call("pre-tool-use", file_tool(tool, str(project / "b.py"))) is None
    status = state / "jobs" / record.id / "status.json"
    data = json.loads(status.read_text())
    data["supervisor_pid"] = 2**22 + 5  # its supervisor died: the claim holds nothing
    status.write_text(json.dumps(data))
    assert call("pre-tool-use", file_tool(tool, str(project / "a.py"))) is None


# --------------------------------------------------------------------------- PostToolUse


def test_after_a_tool_call_the_pending_events_come_as_additional_context(state):
    event_id = post_event(state, "exit 0 after 3.1 s")
    reply = call("post-tool-use", hook_input("PostToolUse:Bash"))
    assert reply is not None
    inner = reply["hookSpecificOutput"]
    assert inner["hookEventName"] == "PostToolUse" and "updatedToolOutput" not in inner
    assert inner["additionalContext"].startswith(
        "[specialists event] job_exit from bg_run (toolu_1)\n"
        'original_args: {"command":"make test"}\n---\nexit 0 after 3.1 s'
    )
    assert pending(state) == []
    assert call("post-tool-use", hook_input("PostToolUse:Bash")) is None  # once
    assert event_id not in hook_log()


def test_an_oversized_bash_result_is_spilled_and_replaced(state):
    """R-O1: head, the path, tail; the whole text is in the spill file."""
    big = "".join(f"line {n}\n" for n in range(20_000))
    response = {**INPUTS["PostToolUse:Bash"]["tool_response"], "stdout": big, "stderr": "warn"}
    reply = call("post-tool-use", hook_input("PostToolUse:Bash", tool_response=response))
    assert reply is not None
    out = reply["hookSpecificOutput"]["updatedToolOutput"]
    assert out["interrupted"] is False and out["stderr"] == ""
    text = out["stdout"]
    assert len(text) < 10_000 and text.startswith("line 0\n") and "line 19999" in text
    (path,) = re.findall(r"(/\S+/spill/\S+\.txt)", text)
    assert Path(path).read_text() == f"{big}\n[stderr]\nwarn"


@pytest.mark.parametrize(
    "where",
    ["specialists/config.toml", "specialists/config.local.toml", ".specialists/config.toml"],
)
def test_a_lower_limit_in_any_project_config_file_bounds_a_mid_sized_result(state, where):
    """Under the default 40,000 characters the hook reads no settings unless a config file
    could lower the limit: the team's and the local one's count as the state dir's does."""
    text = "".join(f"line {n}\n" for n in range(1_000))  # 9,890 characters
    response = {**INPUTS["PostToolUse:Bash"]["tool_response"], "stdout": text}
    assert call("post-tool-use", hook_input("PostToolUse:Bash", tool_response=response)) is None
    config = state.parent / where
    config.parent.mkdir(exist_ok=True)
    config.write_text("[overflow]\nmaxChars = 5000\nheadChars = 1000\ntailChars = 500\n")
    reply = call("post-tool-use", hook_input("PostToolUse:Bash", tool_response=response))
    assert reply is not None, f"a limit in {where} was not applied"
    assert len(reply["hookSpecificOutput"]["updatedToolOutput"]["stdout"]) < 5000


def test_the_hooks_look_for_a_config_covers_every_file_the_reader_reads(state):
    from specialists.catalog.config import config_paths
    from specialists.fronts.hooks.guarding import has_config

    assert not has_config(str(state))
    for path in config_paths(state.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        assert has_config(str(state)), path
        path.unlink()


def test_an_oversized_mcp_result_is_spilled_even_with_a_marker_inside(state):
    """R-O2/R-O3 for an MCP tool, whose result Claude Code hands over as a string."""
    text = "[spilled: see /x]\n" + "y" * 50_000
    data = hook_input("PostToolUse:mcp__specialists__status", tool_response=text)
    reply = call("post-tool-use", data)
    assert reply is not None
    (block,) = reply["hookSpecificOutput"]["updatedToolOutput"]
    assert block["type"] == "text" and len(block["text"]) < 10_000


def test_non_text_blocks_pass_through_the_result_guard(state):
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    response = [{"type": "text", "text": "z" * 45_000}, image]
    reply = call(
        "post-tool-use",
        hook_input("PostToolUse:mcp__specialists__status", tool_response=response),
    )
    assert reply is not None
    blocks = reply["hookSpecificOutput"]["updatedToolOutput"]
    assert blocks[1] == image and len(blocks[0]["text"]) < 10_000


def test_parallel_tool_calls_deliver_an_event_once(state):
    """Claude Code runs the hooks of parallel tool calls at once: one of them delivers."""
    post_event(state, "exit 0")
    replies: list[dict[str, Any] | None] = []
    start = threading.Barrier(6)

    def one() -> None:
        start.wait()
        replies.append(call("post-tool-use", hook_input("PostToolUse:Bash")))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    delivered = [r for r in replies if r is not None]
    assert len(delivered) == 1 and len(replies) == 6


def test_a_due_timer_fires_at_the_next_tool_call(state):
    set_timer(state, -5)
    reply = call("post-tool-use", hook_input("PostToolUse:Bash"))
    assert reply is not None
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[specialists event] timer from sleep (toolu_9)")
    assert "late by" in context


# --------------------------------------------------------------------------- Stop


def test_stop_with_nothing_pending_lets_the_turn_end(state):
    started = time.monotonic()
    assert call("stop", hook_input("Stop")) is None
    assert time.monotonic() - started < 5


def test_stop_hands_over_a_pending_event_as_additional_context(state):
    post_event(state, "exit 2 after 9.0 s")
    reply = call("stop", hook_input("Stop"))
    assert reply is not None and reply["hookSpecificOutput"]["hookEventName"] == "Stop"
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[specialists event] job_exit from bg_run (toolu_1)")
    assert pending(state) == []


def test_stop_waits_for_a_pending_timer_and_wakes_the_session_with_it(state):
    timer_id = set_timer(state, 1.0)
    started = time.monotonic()
    reply = call("stop", hook_input("Stop"))
    assert reply is not None and reply["hookSpecificOutput"]["hookEventName"] == "Stop"
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert "[specialists event] timer from sleep (toolu_9)" in context
    assert time.monotonic() - started >= 0.9
    assert TimerStore(state, KEY).pending() == [] and timer_id


def test_a_run_of_wake_ups_without_tool_calls_is_capped(state):
    """Never loops forever: after MAX_RUN blocks in a row (stop_hook_active) it lets go."""
    for n in range(1, stop.MAX_RUN + 1):
        post_event(state, f"event {n}", seq=n)
        assert call("stop", hook_input("Stop", stop_hook_active=n > 1)) is not None
    post_event(state, "one more", seq=99)
    assert call("stop", hook_input("Stop", stop_hook_active=True)) is None
    assert len(pending(state)) == 1  # left for the next prompt or tool call
    # A tool ran: the run of blocks ends, and the next stop may wake the session again.
    reply = call("post-tool-use", hook_input("PostToolUse:Bash"))
    assert reply is not None and "one more" in json.dumps(reply)
    post_event(state, "after the tool", seq=100)
    assert call("stop", hook_input("Stop", stop_hook_active=True)) is not None


def test_a_new_prompt_starts_the_count_afresh(state):
    for n in range(1, stop.MAX_RUN + 1):
        post_event(state, f"event {n}", seq=n)
        assert call("stop", hook_input("Stop", stop_hook_active=n > 1)) is not None
    post_event(state, "the next prompt's", seq=99)
    assert call("stop", hook_input("Stop", stop_hook_active=False)) is not None


def test_the_wait_budget_bounds_the_stop_hook(state, monkeypatch):
    """A timer far away, a budget of 0.5 s: the hook waits that long, then allows."""
    monkeypatch.setenv(stop.MAX_WAIT_ENV, "0.5")
    set_timer(state, 3600)
    started = time.monotonic()
    assert call("stop", hook_input("Stop")) is None
    assert 0.4 < time.monotonic() - started < 10
    assert "no event within the wait" in hook_log()
    monkeypatch.setenv(stop.MAX_WAIT_ENV, "0")
    started = time.monotonic()
    assert call("stop", hook_input("Stop")) is None
    assert time.monotonic() - started < 5


def test_stop_in_a_project_that_never_used_specialists_is_silent():
    """Hooks installed with --user run in every project. With no .specialists/ there is
    nothing to hand over or wait for; each Stop wrote 'cannot write .../hooks/stop-*.json:
    No such file or directory' to hooks.log, a false error at every turn's end."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert not (project / ".specialists").exists()
    for active in (False, True):
        assert call("stop", hook_input("Stop", stop_hook_active=active)) is None
    assert hook_log() == ""
    assert not (project / ".specialists").exists()


def test_claude_codes_own_block_cap_lowers_ours(monkeypatch):
    monkeypatch.setenv(stop.CLAUDE_CAP_ENV, "3")
    assert stop.max_run() == 2
    monkeypatch.setenv(stop.CLAUDE_CAP_ENV, "junk")
    assert stop.max_run() == stop.MAX_RUN


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize("event", ["pre-tool-use", "post-tool-use", "stop"])
@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json",
        "[1, 2]",
        '{"tool_name": 5, "tool_input": "x", "tool_response": {"stdout": 7}}',
        '{"session_id": {"nested": true}, "stop_hook_active": "yes", "prompt_id": 3}',
        "[" * 100_000,
    ],
)
def test_malformed_hook_input_never_fails_the_host(state, event, stdin):
    post_event(state, "still delivered")
    reply = call(event, stdin)
    if event != "pre-tool-use":  # the session is known from the environment
        assert reply is not None and "still delivered" in json.dumps(reply)


def test_a_missing_session_id_delivers_nothing_of_anyone_elses(state, monkeypatch):
    monkeypatch.delenv(SESSION_ENV)
    post_event(state, "for the session")
    data = {k: v for k, v in INPUTS["Stop"].items() if k != "session_id"}
    assert call("stop", json.dumps(data)) is None
    assert call("post-tool-use", json.dumps({"tool_name": "Bash"})) is None
    assert len(pending(state)) == 1


def test_twenty_megabytes_of_post_tool_use_input_is_cut_not_fatal(state):
    post_event(state, "after the flood")
    huge = json.dumps({"tool_name": "Bash", "tool_response": {"stdout": "x" * 20_000_000}})
    reply = call("post-tool-use", huge)
    assert reply is not None and "after the flood" in json.dumps(reply)
    assert "not JSON" in hook_log()


def test_the_hooks_cheap_look_agrees_with_the_inbox(state):
    """hooks/delivery.py decides without importing the events room whether to look at all;
    for every inbox state it must say what Inbox.has_pending says."""
    inbox = Inbox(state, KEY)
    owner = state / "owners" / KEY

    def agree() -> bool:
        cheap = delivery.has_pending(state, (KEY,))
        assert cheap == inbox.has_pending()
        return cheap

    assert agree() is False  # no inbox at all
    post_event(state, "one")
    assert agree() is True
    inbox.ack(inbox.pending())
    assert agree() is False  # acknowledged
    with open(owner / "events.jsonl", "ab") as f:
        f.write(b'{"id": "a line still being wr')
    assert agree() is False  # a partial last line is not pending yet
    with open(owner / "events.jsonl", "ab") as f:
        f.write(b"itten\n")
    assert agree() is True  # a whole (damaged) line: the full read reports it
    inbox.ack(inbox.pending())
    (owner / "cursor.json").write_text("{not json")
    assert agree() is True  # a damaged cursor means "from the start"
    (owner / "cursor.json").write_text('{"offset": 99999999, "seen": []}')
    assert agree() is True  # past the end: the inbox was emptied, read from its start


def test_claude_code_2_1_332_sends_the_hooks_the_fields_they_read() -> None:
    """The inputs recorded from 2.1.332 have every field of the 2.1.197 ones these tests use."""
    for name, current in CURRENT.items():
        assert set(INPUTS[name]) <= set(current), name
        assert current["hook_event_name"] == name.split(":")[0]
    assert CURRENT["Stop"]["stop_hook_active"] is False and "prompt_id" in CURRENT["Stop"]
