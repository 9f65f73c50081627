"""pi's RPC conversation as a state machine: commands out, stdout lines in, runner events out.

Pure: no processes, no I/O; the adapter (runners/pi.py) writes `outbox` to pi's stdin and
feeds stdout lines to `feed`. The protocol owns request ids, decides when a run is really
finished, queries the final text and session file, and emits `RunFinished`. Its state is a
closed union.

Final detection (pi 1.x): `agent_settled` ends the run (pi has no automatic work left: no
retry, compaction or queued message); `agent_end` carries `willRetry`. An `agent_settled`
that never follows an `agent_end` would leave the job waiting, so after `agent_end` the run
also ends once `settle_timeout_s` (default 10 s) passes without one. A prompt an extension
command consumed (`disposition: "handled"`) starts no run and is final at once.

Fallback model: a run that failed at the provider (pi's own retries exhausted, or an error
pi does not retry) is run once more on the fallback model, if one is set: `set_model`, then
the run's message again. pi leaves failed assistant messages out of the context it sends, so
the fallback model sees the conversation as it was. The switch is logged as a notice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal, assert_never

from specialists.base.display import one_line
from specialists.base.errors import Bug
from specialists.base.tuples import NamedTuple
from specialists.process.lines import OversizedLine
from specialists.runners.base import (
    Activity,
    AgentExited,
    AnswerDelta,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Usage,
)
from specialists.runners.pi_events import Clock, CommandResponse, PiTranslator, Signal
from specialists.store.fields import Declared


class Idle(NamedTuple):
    kind: Literal["idle"] = "idle"


class Running(NamedTuple):
    """A prompt is being answered."""

    kind: Literal["running"] = "running"


class Settling(NamedTuple):
    """agent_end: waiting for agent_settled (a retry or compaction may come first)."""

    deadline: float
    kind: Literal["settling"] = "settling"


class Retrying(NamedTuple):
    """An auto-retry (or a compaction that will retry) is pending: waiting for agent_start."""

    kind: Literal["retrying"] = "retrying"


class Compacting(NamedTuple):
    """Compaction after a failed run: waiting for compaction_end."""

    kind: Literal["compacting"] = "compacting"


class SwitchingModel(NamedTuple):
    """The run failed; `set_model` to the fallback is sent and waits for pi's answer."""

    request: str
    deadline: float
    kind: Literal["switching_model"] = "switching_model"


class Finalizing(NamedTuple):
    """Final: waiting for the answers to get_last_assistant_text and get_state."""

    awaiting: frozenset[str]
    deadline: float
    restarted: bool = False  # pi began another run meanwhile (e.g. a late steer)
    kind: Literal["finalizing"] = "finalizing"


PiState = Idle | Running | Settling | Retrying | Compacting | SwitchingModel | Finalizing
BUSY_STATES = frozenset({"running", "settling", "retrying", "compacting", "switching_model"})


class RunFacts(Declared):
    """What one run has told us so far (a checkpoint carries `to_dict()`, pi_adopt.py)."""

    message: str = ""  # what the run answers (sent again on the fallback model)
    stop_reason: str | None = None
    error_message: str | None = None
    fallback_text: str = ""  # the last assistant text seen, if the text query fails
    final_error: str | None = None
    abort_requested: bool = False
    turn_limit_hit: bool = False
    turns: int = 0
    answer: str | None = None


DEFAULT_SETTLE_TIMEOUT_S = 10.0
DEFAULT_QUERY_TIMEOUT_S = 10.0


def split_pi_model(model: str | None) -> tuple[str | None, str | None]:
    """ "provider/model" -> (provider, model) at the first "/"; a bare name -> (None, name)."""
    if not model:
        return None, None
    provider, sep, name = model.partition("/")
    if sep and provider and name:
        return provider, name
    return None, model


def job_protocol(spec: LaunchSpec, session_file: str | None) -> PiProtocol:
    """The conversation of one job's pi, with the job's limits and models."""
    return PiProtocol(
        settle_timeout_s=float(spec.options.get("settle_timeout_s", DEFAULT_SETTLE_TIMEOUT_S)),
        max_turns=spec.max_turns,
        session_file=session_file,
        model=spec.model,
        fallback_model=spec.fallback_model,
    )


class PiProtocol:
    """pi's RPC conversation: commands out (`outbox`), lines in, runner events out."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        settle_timeout_s: float = DEFAULT_SETTLE_TIMEOUT_S,
        query_timeout_s: float = DEFAULT_QUERY_TIMEOUT_S,
        max_turns: int | None = None,
        session_file: str | None = None,
        model: str | None = None,
        fallback_model: str | None = None,
    ) -> None:
        self._clock = clock
        self._settle_timeout = settle_timeout_s
        self._query_timeout = query_timeout_s
        self._max_turns = max_turns
        self._model = model
        self._fallback = fallback_model if fallback_model != model else None
        self.translator = PiTranslator(clock)
        self.outbox: list[dict[str, Any]] = []
        self.state: PiState = Idle()
        self.session_file = session_file
        self.next_id = 1  # of our request ids, sp-<n> (a successor goes on from it)
        self._pending: dict[str, tuple[str, str]] = {}  # request id -> (purpose, note)
        self._queued: list[str] = []  # follow-ups to send as prompts once the run is over
        self._run = RunFacts()

    @property
    def busy(self) -> bool:
        """A run is in progress or its result is still being collected."""
        return not isinstance(self.state, Idle) or bool(self._queued)

    def prompt(self, message: str, *, purpose: str = "prompt") -> None:
        self._run = RunFacts(message=message)
        self.state = Running()
        self._send("prompt", {"message": message}, purpose=purpose, note=message)

    def follow_up(self, message: str) -> list[RunnerEvent]:
        if isinstance(self.state, Idle):
            self.prompt(message)
            return []
        if isinstance(self.state, Running):
            # A prompt with streamingBehavior is queued when pi is streaming and starts a new
            # run when pi has just gone idle, so it is never stranded in pi's follow-up queue.
            body = {"message": message, "streamingBehavior": "followUp"}
            self._send("prompt", body, purpose="follow_up", note=message)
            return []
        self._queued.append(message)
        return [Activity("follow_up", {"queued": True, "message": one_line(message, 80)})]

    def steer(self, message: str) -> None:
        if self.state.kind in BUSY_STATES and not isinstance(self.state, SwitchingModel):
            self._send("steer", {"message": message}, purpose="steer", note=message)
        elif isinstance(self.state, Idle):
            self.prompt(message, purpose="steer_prompt")
        else:  # the result is being collected, or the run moves to another model
            self._queued.append(message)

    def abort(self) -> None:
        self._queued.clear()
        if self.state.kind in BUSY_STATES:
            self._run.abort_requested = True
            self._send("abort", {}, purpose="abort")

    def _send(self, kind: str, body: Mapping[str, Any], *, purpose: str, note: str = "") -> str:
        rid, self.next_id = f"sp-{self.next_id}", self.next_id + 1
        self._pending[rid] = (purpose, note)
        self.outbox.append({"id": rid, "type": kind, **body})
        return rid

    def take_outbox(self) -> list[dict[str, Any]]:
        out, self.outbox = self.outbox, []
        return out

    def feed(self, line: bytes | OversizedLine) -> list[RunnerEvent]:
        out: list[RunnerEvent] = []
        for item in self.translator.feed(line):
            if isinstance(item, Activity | AnswerDelta | Usage | RunFinished | AgentExited):
                out.append(item)
            else:
                out.extend(self._signal(item))
        return out

    def next_deadline(self) -> float | None:
        state = self.state
        if isinstance(state, Settling | SwitchingModel | Finalizing):
            return state.deadline
        return None

    def tick(self) -> list[RunnerEvent]:
        """Act on expired timers (settle, set_model and query timeouts)."""
        state = self.state
        deadline = self.next_deadline()
        if deadline is None or self._clock() < deadline:
            return []
        if isinstance(state, Settling):
            return self._finalize()
        if isinstance(state, SwitchingModel):
            note = {"message": "pi did not answer set_model in time; no fallback"}
            return [Activity("notice", note), *self._query_result()]
        if isinstance(state, Finalizing):
            return [
                Activity("notice", {"message": "pi did not answer the result queries in time"}),
                *self._finish(),
            ]
        return []

    def process_exited(self) -> list[RunnerEvent]:
        """pi is gone: finish a run whose answer is already known; others are lost."""
        if isinstance(self.state, Settling | SwitchingModel | Finalizing):
            self.state = Finalizing(frozenset(), self._clock())
            return self._finish()
        self._queued.clear()
        self.state = Idle()
        return []

    def _signal(self, sig: Signal) -> list[RunnerEvent]:
        state, run = self.state, self._run
        if sig.kind == "command_response":
            return self._response(sig)
        if sig.kind == "assistant_done":
            run.stop_reason, run.error_message = sig.stop_reason, sig.error_message
            run.fallback_text = sig.text
        elif sig.kind == "turn_ended":
            return self._turn_ended()
        elif sig.kind == "ui_request":
            self.outbox.append({"type": "extension_ui_response", "id": sig.id, "cancelled": True})
        elif sig.kind == "agent_started":
            if isinstance(state, Finalizing):
                self.state = state._replace(restarted=True)
            elif isinstance(state, Idle):
                self._run = RunFacts()  # pi started a run on its own (e.g. a late steer)
                self.state = Running()
            elif not isinstance(state, SwitchingModel):
                self.state = Running()
        elif sig.kind == "agent_ended":
            return self._agent_ended(sig.will_retry)
        elif sig.kind == "agent_settled":
            if state.kind in BUSY_STATES and not isinstance(state, SwitchingModel):
                return self._finalize()
        elif sig.kind == "retry_started":
            if isinstance(state, Running | Settling):
                self.state = Retrying()
        elif sig.kind == "retry_ended":
            if not sig.success and isinstance(state, Settling | Retrying):
                run.final_error = sig.final_error
                return self._finalize()
        elif sig.kind == "compaction_started":
            if isinstance(state, Settling):
                self.state = Compacting()
        elif sig.kind == "compaction_ended":
            if isinstance(state, Compacting):
                if sig.will_retry:
                    self.state = Retrying()
                    return []
                return self._finalize()
        else:
            assert_never(sig)
        return []

    def _agent_ended(self, will_retry: bool) -> list[RunnerEvent]:
        """agent_settled, not agent_end, says when the run is over."""
        if will_retry:
            self.state = Retrying()
        elif isinstance(self.state, Running | Idle | Retrying):
            self.state = Settling(self._clock() + self._settle_timeout)
        return []

    def _turn_ended(self) -> list[RunnerEvent]:
        run = self._run
        run.turns += 1
        limit = self._max_turns
        if (
            limit is not None
            and run.turns >= limit
            and run.stop_reason == "toolUse"
            and isinstance(self.state, Running)
            and not run.abort_requested
        ):
            run.turn_limit_hit = run.abort_requested = True
            self._send("abort", {}, purpose="abort")
            return [Activity("notice", {"message": f"max turns reached ({limit}): aborting"})]
        return []

    def _finalize(self) -> list[RunnerEvent]:
        """The run is over (on this model): fall back once if it failed, else collect it."""
        if self._fallback and self._run_failed_at_provider():
            return self._fall_back(self._fallback)
        return self._query_result()

    def _query_result(self) -> list[RunnerEvent]:
        self._run.answer = None
        awaiting = frozenset(
            {
                self._send("get_last_assistant_text", {}, purpose="text"),
                self._send("get_state", {}, purpose="state"),
            }
        )
        self.state = Finalizing(awaiting, self._clock() + self._query_timeout)
        return []

    def _run_failed_at_provider(self) -> bool:
        run = self._run
        if run.abort_requested or run.turn_limit_hit or run.stop_reason == "aborted":
            return False
        return bool(run.final_error) or run.stop_reason == "error"

    def _fall_back(self, fallback: str) -> list[RunnerEvent]:
        self._fallback = None  # once per job: the fallback has no fallback
        failure = self._run_error() or "the provider failed"
        provider, model_id = split_pi_model(fallback)
        provider = provider or split_pi_model(self._model)[0]
        if not provider or not model_id:
            note = f"fallback model {fallback!r} needs a provider (provider/model); not used"
            return [Activity("notice", {"message": note}), *self._query_result()]
        body = {"provider": provider, "modelId": model_id}
        request = self._send("set_model", body, purpose="set_model", note=fallback)
        self.state = SwitchingModel(request, self._clock() + self._query_timeout)
        message = f"falling back to {provider}/{model_id}: {one_line(failure, 200)}"
        return [Activity("notice", {"message": message, "model": f"{provider}/{model_id}"})]

    def _response(self, resp: CommandResponse) -> list[RunnerEvent]:
        if resp.id is None:
            fields = {"message": "pi rejected a command", "error": one_line(resp.error or "", 200)}
            return [Activity("notice", fields)]
        pending = self._pending.pop(resp.id, None)
        if pending is None:
            return []
        purpose, note = pending
        data = resp.data if isinstance(resp.data, Mapping) else {}
        state, run = self.state, self._run
        if purpose == "text":
            text = data.get("text") if resp.success else None
            run.answer = text if isinstance(text, str) else ("" if resp.success else None)
        elif purpose == "state" and resp.success:
            session_file = data.get("sessionFile")
            if isinstance(session_file, str) and session_file:
                self.session_file = session_file
        elif purpose == "set_model":
            return self._model_switched(resp, note)
        elif purpose in ("prompt", "follow_up") and not resp.success:
            return self._prompt_rejected(purpose, resp.error)
        elif purpose == "prompt" and data.get("disposition") == "handled":
            if isinstance(state, Running):  # an extension command took it: no run follows
                return self._query_result()
        elif purpose == "steer_prompt" and not resp.success:
            return self._prompt_rejected("prompt", resp.error)
        elif purpose in ("steer", "steer_prompt"):
            if resp.success:
                ack = {"message": one_line(note, 80), "as_prompt": purpose == "steer_prompt"}
                return [Activity("steer_ack", ack)]
            rejected = {"message": "steer rejected", "error": one_line(resp.error or "", 200)}
            return [Activity("notice", rejected)]
        if isinstance(state, Finalizing) and resp.id in state.awaiting:
            left = state.awaiting - {resp.id}
            self.state = state._replace(awaiting=left)
            if not left:
                return self._finish()
        return []

    def _model_switched(self, resp: CommandResponse, fallback: str) -> list[RunnerEvent]:
        if not isinstance(self.state, SwitchingModel) or resp.id != self.state.request:
            return []
        if not resp.success:
            note = f"pi refused the fallback model {fallback}: {one_line(resp.error or '', 200)}"
            return [Activity("notice", {"message": note}), *self._query_result()]
        self._model = fallback
        self.prompt(self._run.message)  # the same message, on the fallback model
        return []

    def _prompt_rejected(self, purpose: str, error: str | None) -> list[RunnerEvent]:
        message = f"pi rejected the {purpose.replace('_', '-')}: {error or 'unknown error'}"
        if purpose == "follow_up" or not isinstance(self.state, Running):
            return [Activity("notice", {"message": message})]
        self.state = Idle()
        return [RunFinished(text=None, error=message, session_file=self.session_file)]

    def _finish(self) -> list[RunnerEvent]:
        state, run = self.state, self._run
        if not isinstance(state, Finalizing):
            raise Bug(f"finishing a pi run in state {state.kind}")
        text = run.answer if run.answer is not None else run.fallback_text
        done = RunFinished(text=text, error=self._run_error(), session_file=self.session_file)
        self.state = Idle()
        out: list[RunnerEvent] = [done]
        if state.restarted:
            self._run = RunFacts()
            self.state = Running()
        elif self._queued:
            message = "\n\n".join(self._queued)
            self._queued.clear()
            out.append(Activity("follow_up", {"queued": False, "message": one_line(message, 80)}))
            self.prompt(message)
        return out

    def _run_error(self) -> str | None:
        run = self._run
        if run.turn_limit_hit:
            return f"max turns reached ({self._max_turns})"
        if run.abort_requested or run.stop_reason == "aborted":
            return "aborted"
        if run.final_error:
            return run.final_error
        if run.stop_reason == "error":
            return run.error_message or "pi reported an error"
        return None
