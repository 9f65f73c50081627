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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specialists.runners.adopting import ages, times
from specialists.runners.base import Usage
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
)

if TYPE_CHECKING:
    pass


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
