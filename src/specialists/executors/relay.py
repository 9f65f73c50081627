"""An in-process runner (the native loop) as an agent process, so it can run on a node.

`python -m specialists _relay --job-dir D --cwd C [--resume S]` reads one JSON line
(the launch spec without its paths, and the config layers), runs the runner, and speaks JSON
lines: events out (`{"event": {...}}`, `{"accepts": [...]}`), commands in (`{"command": kind,
"message": ...}`). Paths travel as arguments, so the process host rewrites them for the node
like any agent's. `RelayRunner` is the supervisor's side: an `AgentRunner` over that process.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import Bug, bound_tracebacks
from specialists.process.host import AdoptedProcess, HostedProcess, spawn_agent
from specialists.process.jobenv import agent_env
from specialists.runners.adopting import check_runner
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    AnswerDelta,
    Command,
    CommandKind,
    FollowUp,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Steer,
    Usage,
    not_accepted,
)

SPEC_FIELDS = (
    "job_id",
    "prompt",
    "system_prompt",
    "model",
    "permission",
    "thinking_level",
    "max_turns",
    "max_tokens",
    "fallback_model",
    "response_format",
    "options",
)
_SIMPLE = {"follow_up": FollowUp, "steer": Steer}


_KINDS: dict[str, Any] = {
    cls._field_defaults["kind"]: cls
    for cls in (Activity, AnswerDelta, Usage, RunFinished, AgentExited)
}


def event_to_dict(event: RunnerEvent) -> dict[str, Any]:
    """Every field of the event (each is a NamedTuple whose `kind` names it), as JSON."""
    out = event._asdict()
    if isinstance(event, Activity):
        out["fields"] = dict(event.fields)
    elif isinstance(event, RunFinished) and event.usage is not None:
        out["usage"] = event.usage._asdict()
    return out


def event_from_dict(data: Mapping[str, Any]) -> RunnerEvent:
    cls = _KINDS.get(str(data.get("kind")))
    if cls is None:
        raise ValueError(f"unknown event kind {data.get('kind')!r}")
    if cls is RunFinished and data.get("usage"):
        return RunFinished(**{**data, "usage": Usage(**data["usage"])})
    return cls(**data)


# --- the supervisor's side -------------------------------------------------------------------


class RelayRunner:
    """The native runner, run as a relay process through the job's host."""

    name = "native"

    def __init__(self) -> None:
        self._proc: HostedProcess | None = None
        self._accepts: frozenset[CommandKind] = ALWAYS_ACCEPTED
        self._session: str | None = None
        self._exited = False
        self._pending: list[RunnerEvent] = []

    @property
    def handle(self) -> AgentHandle:
        return AgentHandle(session_ref=self._session)

    def accepts(self) -> frozenset[CommandKind]:
        return ALWAYS_ACCEPTED if self._exited else self._accepts

    def start(self, spec: LaunchSpec) -> None:
        if self._proc is not None:
            raise Bug("RelayRunner.start called twice")
        argv = [sys.executable, "-m", "specialists", "_relay"]
        argv += ["--job-dir", str(spec.job_dir), "--cwd", str(spec.cwd)]
        if spec.resume_session:
            argv += ["--resume", spec.resume_session]
        self._session = str(spec.job_dir / "session.jsonl")
        self._proc = spawn_agent(
            spec.host,
            argv,
            cwd=spec.cwd,
            env=agent_env(spec.job_dir, spec.env),
            stderr_log=spec.job_dir / "stderr.log",
        )
        self._proc.send(_head(spec))
        self._accepts = ALWAYS_ACCEPTED | {"follow_up", "steer", "abort"}

    # --- a successor supervisor takes the relay over (executors/job.py) -----------------

    def adopt_state(self) -> dict[str, Any] | None:
        """Each line is one whole event, so only what the relay said last is state."""
        if self._proc is None or self._exited:
            return None
        return {"runner": self.name, "accepts": sorted(self._accepts), "session": self._session}

    def adopt(
        self, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
    ) -> None:
        """Read on from the checkpoint; the launch line is sent again as write 1 (the node
        applies each numbered write once, so only a relay that never got it takes it)."""
        check_runner(state, self.name)
        if self._proc is not None or proc is None:
            raise Bug("RelayRunner.adopt after start, or without a process")
        self._proc = proc
        self._accepts = frozenset(state.get("accepts") or ()) | ALWAYS_ACCEPTED
        self._session = state.get("session") or str(spec.job_dir / "session.jsonl")
        applied = proc.renumber_input(0)
        proc.send(_head(spec))
        proc.renumber_input(max(applied, 1))

    def poll(self, timeout: float) -> list[RunnerEvent]:
        proc = self._proc
        if proc is None:
            raise Bug("RelayRunner used before start()")
        out, self._pending = self._pending, []
        if self._exited:
            return out
        for line in proc.read(0.0 if out else timeout):
            if not isinstance(line, bytes) or not line.strip():
                continue
            try:
                message = json.loads(line)
                if "accepts" in message:
                    self._accepts = frozenset(message["accepts"]) | ALWAYS_ACCEPTED
                    continue
                event = event_from_dict(message["event"])
            except (ValueError, KeyError, TypeError) as exc:
                head = line[:200].decode("utf-8", "replace")
                out.append(
                    Activity("notice", {"message": f"relay: unreadable line ({exc}): {head}"})
                )
                continue
            if isinstance(event, RunFinished) and event.session_file:
                self._session = event.session_file
            if isinstance(event, AgentExited):
                self._exited = True
            out.append(event)
        if proc.done and not self._exited:
            self._exited = True
            code = proc.returncode
            out.append(
                AgentExited(
                    code if code and code > 0 else None,
                    -code if code and code < 0 else None,
                    proc.stderr_tail,
                )
            )
        if self._exited:
            proc.release()
        return out

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        proc = self._proc
        if proc is None:
            return
        message: dict[str, Any] = {"command": command.kind}
        if isinstance(command, FollowUp | Steer):
            message["message"] = command.message
        if not self._exited:
            proc.send(json.dumps(message).encode() + b"\n")
        if command.kind == "kill":
            proc.kill_job()


def _head(spec: LaunchSpec) -> bytes:
    """The relay's first line: the spec without its paths, and the config layers. The job's
    variables are in the relay's own environment, rewritten for the node by the host; only
    their names travel here."""
    from specialists.catalog.config import config_layers

    root = spec.job_dir.parent.parent.parent
    layers = [[str(path), data] for path, data in config_layers(root)]
    fields = {k: getattr(spec, k) for k in SPEC_FIELDS}
    head = {"spec": fields, "env_keys": sorted(spec.env), "config": layers}
    return json.dumps(head, default=str).encode() + b"\n"


# --- the node's side -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    bound_tracebacks()
    parser = argparse.ArgumentParser(prog="specialists.executors.relay")
    parser.add_argument("--job-dir", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--resume")
    args = parser.parse_args(argv)
    head = json.loads(sys.stdin.buffer.readline())
    from specialists.catalog.config import merge_layers
    from specialists.runners.native import NativeRunner

    config = merge_layers([(Path(p), data) for p, data in head.get("config", [])])
    spec = LaunchSpec(
        job_dir=Path(args.job_dir),
        cwd=Path(args.cwd),
        resume_session=args.resume,
        env={k: os.environ[k] for k in head.get("env_keys", ()) if k in os.environ},
        **head["spec"],
    )
    runner = NativeRunner(config=config)
    runner.start(spec)
    return _serve(runner)


def _serve(runner: Any) -> int:
    signal.signal(signal.SIGTERM, lambda *_: runner.send(_command({"command": "terminate"})))
    os.set_blocking(sys.stdin.fileno(), False)
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    buffer, said = b"", None
    while True:
        for event in runner.poll(0.02):
            _say({"event": event_to_dict(event)})
            if isinstance(event, AgentExited):
                return 0
        accepts = sorted(runner.accepts())
        if accepts != said:
            said = accepts
            _say({"accepts": accepts})
        if selector.select(0):
            chunk = os.read(sys.stdin.fileno(), 1 << 16)
            if not chunk:
                selector.unregister(sys.stdin.fileno())
                runner.send(_command({"command": "close"}))
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                command = _command(json.loads(line))
                if command.kind in runner.accepts():
                    runner.send(command)


def _command(message: Mapping[str, Any]) -> Command:
    from specialists.runners.base import Abort, Close, Kill, Terminate

    kind = message.get("command")
    if kind in _SIMPLE:
        return _SIMPLE[kind](str(message.get("message", "")))
    simple = {"abort": Abort, "close": Close, "terminate": Terminate, "kill": Kill}
    return simple[str(kind)]()


def _say(message: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
