"""adopt_state / adopt of the pi, Claude Code and Codex parsers (executors/job.py
`Adoptable`): cut a recorded stream at every line, carry the parser's state through JSON,
and feed the rest to both the original and the restored one. They must say exactly the same
from there on (events, and for pi the requests it writes), or a successor supervisor that
replays the output after its checkpoint would write different events than its predecessor.
Pure: no processes (the supervisor round trip on a node is test_executor_reattach.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specialists.base.clock import FakeClock
from specialists.base.errors import AgentUnavailable
from specialists.runners.adopting import check_runner
from specialists.runners.base import LaunchSpec
from specialists.runners.claude import ClaudeRunner
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.codex import CodexRunner
from specialists.runners.codex_events import CodexTranslator
from specialists.runners.pi import PiRunner
from specialists.runners.pi_adopt import protocol_state, restore_protocol
from specialists.runners.pi_protocol import PiProtocol
from tests.support import fake_claude, fake_codex

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "pi-1.6.0"


def through_json(state: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(state))


# --- pi ------------------------------------------------------------------------------------


def pi_lines(name: str) -> list[bytes]:
    """A recorded pi stdout, its prompt's response addressed to our first id (sp-1), and the
    answers to the result queries our protocol then makes (sp-2, sp-3) at the end."""
    lines = [x for x in (TRANSCRIPTS / name).read_bytes().split(b"\n") if x]
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("type") == "response":
            if obj.get("command") != "prompt":
                continue
            obj["id"] = "sp-1"
            line = json.dumps(obj).encode()
        out.append(line)
    text = {"id": "sp-2", "type": "response", "command": "get_last_assistant_text"}
    state = {"id": "sp-3", "type": "response", "command": "get_state"}
    out.append(json.dumps({**text, "success": True, "data": {"text": "DONE"}}).encode())
    out.append(json.dumps({**state, "success": True, "data": {"sessionFile": "/s.jsonl"}}).encode())
    return out


def pi_run(protocol: PiProtocol, clock: FakeClock, lines: list[bytes]) -> list[Any]:
    said: list[Any] = []
    for line in lines:
        clock.advance(0.01)
        said += protocol.feed(line)
        said += protocol.tick()
        said += [("wrote", c) for c in protocol.take_outbox()]
    return said


@pytest.mark.parametrize("name", ["rpc-basic.ndjson", "multiturn.ndjson", "think.ndjson"])
def test_pi_restored_at_any_line_says_what_the_original_says(name: str) -> None:
    """Requests in flight (the prompt before its response, the two queries before theirs)
    are matched by id after the restore, and the requests the rest makes get the same ids."""
    lines = pi_lines(name)
    for cut in range(len(lines) + 1):
        clock = FakeClock()
        original = PiProtocol(clock=clock, session_file="/s.jsonl", model="mock/m")
        original.prompt("task")
        original.take_outbox()
        pi_run(original, clock, lines[:cut])
        state = through_json(protocol_state(original, clock()))
        later = FakeClock(start=clock())  # the successor's clock (another base: the next test)
        restored = PiProtocol(clock=later, session_file="/s.jsonl", model="mock/m")
        restore_protocol(restored, state, later())
        expected = pi_run(original, clock, lines[cut:])
        assert pi_run(restored, later, lines[cut:]) == expected, (name, cut)


def test_a_pi_settle_window_left_at_the_checkpoint_is_left_after_it() -> None:
    """agent_end after a failed message starts the settle window (Settling): restored, the
    window ends when it would have (seconds left, not a monotonic time of another process)."""
    clock = FakeClock()
    p = PiProtocol(clock=clock, settle_timeout_s=0.3)
    p.prompt("task")
    p.take_outbox()
    failed = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "500"}
    p.feed(json.dumps({"type": "message_end", "message": failed}).encode())
    p.feed(b'{"type":"agent_end","messages":[],"willRetry":false}')
    assert p.state.kind == "settling"
    clock.advance(0.1)
    state = through_json(protocol_state(p, clock()))
    later = FakeClock(start=5000.0)
    restored = PiProtocol(clock=later)
    restore_protocol(restored, state, later())
    later.advance(0.15)
    assert restored.tick() == [] and restored.state.kind == "settling"
    later.advance(0.1)
    restored.tick()
    assert restored.state.kind == "finalizing"


# --- Claude Code and Codex -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "lines"),
    [
        (ClaudeTranslator, fake_claude.TOOL_LINES),
        (ClaudeTranslator, fake_claude.TEXT_LINES),
        (CodexTranslator, fake_codex.TOOL_LINES),
        (CodexTranslator, fake_codex.TEXT_LINES),
    ],
    ids=["claude-tool", "claude-text", "codex-tool", "codex-text"],
)
def test_a_one_shot_translator_restored_at_any_line_says_what_the_original_says(
    make: Any, lines: list[str]
) -> None:
    """Open tools keep their durations (ages), a message that logged its `text` does not
    log it again, the session id is known before its line is read again."""
    objs = [json.loads(line) for line in lines]
    for cut in range(len(objs) + 1):
        original = make()
        for n, obj in enumerate(objs[:cut]):
            original.feed(obj, 100.0 + n)
        state = through_json(original.adopt_state(100.0 + cut))
        restored = make()
        restored.restore(state, 900.0 + cut)
        for n, obj in enumerate(objs[cut:], start=cut):
            assert restored.feed(obj, 900.0 + n) == original.feed(obj, 100.0 + n), cut
        assert restored.on_exit("exit", aborted=False) == original.on_exit("exit", aborted=False)


# --- refusals -------------------------------------------------------------------------------


def spec(tmp_path: Path) -> LaunchSpec:
    return LaunchSpec("j", tmp_path, tmp_path, "task", "", None)


@pytest.mark.parametrize("runner", [PiRunner, ClaudeRunner, CodexRunner])
def test_a_state_of_another_runner_is_refused_naming_both(runner: Any, tmp_path: Path) -> None:
    """A checkpoint written for a command job cannot be fed to pi (or Claude, or Codex):
    the successor refuses before it touches anything, naming both runners."""
    state = {"runner": "command", "stdout_bytes": 0}
    with pytest.raises(AgentUnavailable, match="of the 'command' runner, not of"):
        runner().adopt(spec(tmp_path), state, None)
    with pytest.raises(AgentUnavailable, match="None"):
        check_runner({}, "pi")


def test_not_started_runners_have_nothing_to_take_over() -> None:
    assert PiRunner().adopt_state() is None
    assert ClaudeRunner().adopt_state() is None
    assert CodexRunner().adopt_state() is None


# --- pi's stdin numbering after a takeover --------------------------------------------------


class NodeInput:
    """The adopted process's stdin as the node numbers it: `applied` writes arrived."""

    def __init__(self, applied: int) -> None:
        self.applied = applied
        self.wseq = applied
        self.sent: list[tuple[int, bytes]] = []
        self.pid = 4242

    def renumber_input(self, wseq: int) -> int:
        before, self.wseq = self.wseq, wseq
        return before

    def send(self, data: bytes) -> None:
        self.wseq += 1
        self.sent.append((self.wseq, data))


def pi_with_three_writes() -> dict[str, Any]:
    """A pi runner that wrote its prompt and two steers: its state at the checkpoint."""
    runner = PiRunner()
    runner._proc = NodeInput(0)  # type: ignore[assignment]
    runner._protocol.prompt("task")
    runner._flush()
    for steer in ("left", "right"):
        runner._protocol.steer(steer)
        runner._flush()
    state = runner.adopt_state()
    assert state is not None and state["writes"] == 3 and len(state["recent"]) == 3
    return through_json(state)


def adopted_pi(tmp_path: Path, state: dict[str, Any], applied: int) -> tuple[PiRunner, NodeInput]:
    runner, node_input = PiRunner(), NodeInput(applied)
    runner.adopt(spec(tmp_path), state, node_input)  # type: ignore[arg-type]
    return runner, node_input


def test_pi_writes_the_replay_makes_again_keep_their_numbers(tmp_path: Path) -> None:
    """After an output checkpoint, writes the node applied beyond it are ones the replay of
    the output makes again: numbered on from the checkpoint, so the node drops the copies."""
    state = pi_with_three_writes()
    runner, node_input = adopted_pi(tmp_path, {**state, "then": "output"}, applied=5)
    assert node_input.wseq == 3 and node_input.sent == []
    assert runner._protocol.next_id == 4


def test_pi_writes_for_requests_after_the_checkpoint_are_numbered_past(tmp_path: Path) -> None:
    """After a checkpoint taken before control writes, the node's extra writes are requests
    nobody will make again: the successor numbers on after them and gives up their ids, so
    no later request is dropped by the node or answered with another's response."""
    state = pi_with_three_writes()
    runner, node_input = adopted_pi(tmp_path, {**state, "then": "requests"}, applied=5)
    assert node_input.wseq == 5
    assert runner._protocol.next_id == 6
    runner._protocol.steer("again")
    runner._flush()
    assert node_input.sent[-1][0] == 6 and b'"id":"sp-6"' in node_input.sent[-1][1]


def test_pi_writes_the_node_never_got_are_sent_again(tmp_path: Path) -> None:
    """The node applied one of the three writes the checkpoint counted (the others were lost
    with the dead supervisor's connection): the two are sent again, as writes 2 and 3."""
    state = pi_with_three_writes()
    _, node_input = adopted_pi(tmp_path, {**state, "then": "output"}, applied=1)
    assert [n for n, _ in node_input.sent] == [2, 3]
    assert b'"left"' in node_input.sent[0][1] and b'"right"' in node_input.sent[1][1]


def test_pi_writes_lost_beyond_the_copies_kept_are_refused(tmp_path: Path) -> None:
    state = pi_with_three_writes()
    state["recent"] = state["recent"][-1:]
    with pytest.raises(AgentUnavailable, match="never got the last 3 writes"):
        adopted_pi(tmp_path, {**state, "then": "output"}, applied=0)
