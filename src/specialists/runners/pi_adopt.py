"""pi's RPC conversation at a checkpoint, and back (runners/pi.py `adopt_state` / `adopt`).

What the protocol and the translator had after the output read up to the checkpoint: the
state (its deadlines as seconds left), the run's facts, the requests in flight with their
purposes, the follow-ups queued, the next request id, the model and its fallback; and the
translator's per-message flags, open tools (as ages), the turn's usage and its counters.
The successor replays the output after the checkpoint into exactly this, so the responses
to requests in flight are matched by id, and the requests the replay makes again get the
same ids and the same stdin write numbers (the node drops what it applied already).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specialists.base.errors import AgentUnavailable, Bug
from specialists.runners.adopting import ages, check_runner, events_held, held_events, times
from specialists.runners.base import LaunchSpec, Usage
from specialists.runners.pi_events import PiTranslator
from specialists.runners.pi_protocol import (
    Compacting,
    Finalizing,
    Idle,
    PiProtocol,
    PiState,
    Retrying,
    RunFacts,
    Running,
    Settling,
    SwitchingModel,
    job_protocol,
)

if TYPE_CHECKING:
    from specialists.process.host import AdoptedProcess


def protocol_state(protocol: PiProtocol, now: float) -> dict[str, Any]:
    return {
        "state": _state(protocol.state, now),
        "run": protocol._run.to_dict(),
        "pending": {rid: list(p) for rid, p in protocol._pending.items()},
        "queued": list(protocol._queued),
        "next_id": protocol.next_id,
        "model": protocol._model,
        "fallback": protocol._fallback,
        "session_file": protocol.session_file,
        "outbox": list(protocol.outbox),
        "translator": translator_state(protocol.translator, now),
    }


def restore_protocol(protocol: PiProtocol, raw: Mapping[str, Any], now: float) -> None:
    protocol.state = _restored_state(raw["state"], now)
    protocol._run = RunFacts(**raw["run"])
    protocol._pending = {str(rid): (str(p), str(n)) for rid, (p, n) in raw["pending"].items()}
    protocol._queued = [str(m) for m in raw["queued"]]
    protocol.next_id = int(raw["next_id"])
    protocol._model, protocol._fallback = raw["model"], raw["fallback"]
    protocol.session_file = raw["session_file"]
    protocol.outbox = [dict(c) for c in raw["outbox"]]
    restore_translator(protocol.translator, raw["translator"], now)


def translator_state(t: PiTranslator, now: float) -> dict[str, Any]:
    usage = t._turn_usage
    return {
        "saw_thinking": t._saw_thinking,
        "saw_text": t._saw_text,
        "tools": ages(t._tool_started, now),
        "heartbeat": ages(t._heartbeat, now),
        "turn_usage": None if usage is None else _usage(usage),
        "turns": t.turns,
        "malformed": t.malformed,
        "oversized": t.oversized,
    }


def restore_translator(t: PiTranslator, raw: Mapping[str, Any], now: float) -> None:
    t._saw_thinking, t._saw_text = bool(raw["saw_thinking"]), bool(raw["saw_text"])
    t._tool_started = times(raw["tools"], now)
    t._heartbeat = times(raw["heartbeat"], now)
    usage = raw["turn_usage"]
    t._turn_usage = None if usage is None else Usage(**usage)
    t.turns, t.malformed, t.oversized = (
        int(raw["turns"]),
        int(raw["malformed"]),
        int(raw["oversized"]),
    )


def _usage(u: Usage) -> dict[str, Any]:
    return {k: v for k, v in u._asdict().items() if k != "kind"}


def _state(state: PiState, now: float) -> dict[str, Any]:
    """A state as JSON: its deadline as seconds left, the requests it awaits as a list."""
    out: dict[str, Any] = {"kind": state.kind}
    for name, value in state._asdict().items():
        if name == "deadline":
            out["left_s"] = value - now
        elif name != "kind":
            out[name] = sorted(value) if name == "awaiting" else value
    return out


_STATES: dict[str, Any] = {
    cls._field_defaults["kind"]: cls
    for cls in (Idle, Running, Settling, Retrying, Compacting, SwitchingModel, Finalizing)
}


def _restored_state(raw: Mapping[str, Any], now: float) -> PiState:
    cls = _STATES.get(raw["kind"])
    if cls is None:
        raise ValueError(f"unknown pi state {raw['kind']!r}")
    values: dict[str, Any] = {}
    for name in cls._fields:
        if name == "kind":
            continue
        if name == "deadline":
            values[name] = now + float(raw["left_s"])
        elif name == "awaiting":
            values[name] = frozenset(str(r) for r in raw[name])
        else:
            values[name] = bool(raw[name]) if name == "restarted" else str(raw[name])
    state: PiState = cls(**values)
    return state


# --- the runner (runners/pi.py) ----------------------------------------------------------

RECENT_WRITES = 8  # the last stdin writes kept, to send again if the node never got them
RECENT_BYTES = 1024 * 1024


def runner_state(runner: Any, now: float) -> dict[str, Any] | None:
    """`PiRunner.adopt_state`: None once pi is exiting or gone (nothing to take over)."""
    held = held_events(runner._pending)
    if runner._proc is None or runner._exited or runner._close_requested or held is None:
        return None
    recent: list[str] = []
    size = 0
    for line in reversed(runner._recent):
        size += len(line)
        if size > RECENT_BYTES:
            break
        recent.insert(0, line.decode("utf-8"))
    return {
        "runner": "pi",
        "session_file": runner._session_file,
        "writes": runner._writes,
        "recent": recent,
        "pending": held,
        "startup_s": runner.startup_s,
        "protocol": protocol_state(runner._protocol, now),
    }


def adopt_runner(
    runner: Any, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
) -> None:
    """`PiRunner.adopt`: the protocol as it was, on the adopted process, stdin numbered so
    that the writes the replay makes again are the ones the node has."""
    check_runner(state, "pi")
    if runner._proc is not None or proc is None:
        raise Bug("PiRunner.adopt after start, or without a process")
    now = time.monotonic()
    runner._session_file = state["session_file"]
    runner._response_format = spec.response_format
    runner._protocol = job_protocol(spec, runner._session_file)
    restore_protocol(runner._protocol, state["protocol"], now)
    runner._pending = events_held(state["pending"])
    runner.startup_s, runner._spawned_at = state["startup_s"], now
    writes, recent = int(state["writes"]), [str(r).encode("utf-8") for r in state["recent"]]
    applied = proc.renumber_input(writes)
    if applied < writes:
        # Writes counted by the checkpoint that never reached the node (lost in flight
        # with the dead supervisor's connection): sent again, from the copies kept.
        missing = writes - applied
        if missing > len(recent):
            raise AgentUnavailable(
                f"the node never got the last {missing} writes to pi's stdin, and the "
                f"checkpoint keeps only {len(recent)}"
            )
        proc.renumber_input(applied)
        for line in recent[len(recent) - missing :]:
            proc.send(line)
    elif applied > writes and state.get("then") == "requests":
        # Requests the dead supervisor wrote after its checkpoint: pi has them, we never see
        # them again. Number on after them, and give up the request ids they may have used.
        proc.renumber_input(applied)
        runner._protocol.next_id += applied - writes
        writes = applied
    runner._writes = writes
    runner._recent.extend(recent)
    runner._proc = proc
