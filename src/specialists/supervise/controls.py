"""The supervisor's control side: requests from other processes, and the follow-ups it holds.

A request (steer, follow-up, abort, stop) is read from the job's control inbox, decided on
at once (requests.py, from what the runner `accepts()` now) and acknowledged by an event. A
follow-up that arrives while a run is going is held, and sent when that run ends, so each
gets a run of its own.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import assert_never, cast

from specialists.base.errors import SpecialistsError
from specialists.runners.base import Abort, Command, FollowUp
from specialists.store.control import ControlRequest, take_requests
from specialists.supervise.requests import Decision, Phase, Situation, ack_fields, decide
from specialists.supervise.waking import Waking
from specialists.supervise.watch import Ending

log = logging.getLogger("specialists.supervisor")


class Controls(Waking):
    def _setup_controls(self) -> None:
        """The control side's state (called once by the supervisor's __init__)."""
        self.held: deque[tuple[str, str]] = deque()  # follow-ups for after the run: (id, text)
        self._ending: Ending | None = None
        self._interrupted = False  # a soft interrupt is under way: the aborted run pauses the job
        self._paused_mono: float | None = None  # when an interrupt paused the run (its clock)
        # Steers handed to the agent and not yet acknowledged by it, oldest first: agents
        # acknowledge steers in the order they got them (pi's responses, the native loop).
        self._steers_out: deque[str] = deque()

    # --- provided by the supervisor ---------------------------------------------------------

    def _begin_stop(self, why: str) -> None:
        raise NotImplementedError

    def _on_run_failed(self, error: str) -> None:
        raise NotImplementedError

    # --- follow-ups -------------------------------------------------------------------------

    def _send_held_follow_up(self) -> bool:
        request_id, message = self.held.popleft()
        if "follow_up" not in self.runner.accepts():
            self.held.appendleft((request_id, message))
            self._drop_held(f"the {self.record.runner} runner takes no follow-up after this run")
            return False
        self._send_follow_up(request_id, message)
        return True

    def _send_follow_up(self, request_id: str, message: str) -> None:
        try:
            self._send(FollowUp(message))  # one-shot runners start a new process here
        except SpecialistsError as exc:
            self._on_run_failed(f"the follow-up could not start: {exc.one_line()}")
            return
        paused = self._paused_mono if self._interrupted else None
        if paused is not None:  # the pause stopped the run's clock: the rest of its deadline
            self._run_started_mono += self.clock() - paused
        self._running_again(paused is not None, "follow_up")
        self._interrupted = False  # resumed: this run ends the job as any run would
        self._paused_mono = None
        self._event("follow_up_sent", request=request_id)
        self._save(force=True)

    def _drop_held(self, why: str) -> None:
        while self.held:
            request_id, _ = self.held.popleft()
            self._event("follow_up_dropped", request=request_id, reason=why)

    def _send(self, command: Command) -> bool:
        """Send `command` if the runner takes it now (a ladder step it refuses is skipped)."""
        if command.kind not in self.runner.accepts():
            log.debug("runner does not take %s now; skipped", command.kind)
            return False
        self.runner.send(command)
        return True

    def _agent_took_steer(self, accepted: bool, why: str = "") -> None:
        """The agent acknowledged (or rejected) the oldest steer it was handed."""
        if not self._steers_out:
            return  # a steer of its own making (an event delivered as a steer by pi's extension)
        request_id = self._steers_out.popleft()
        if accepted:
            self._event("steer_delivered", request=request_id)
        else:
            self._event("steer_failed", request=request_id, reason=why or "the agent rejected it")

    # --- the control inbox -------------------------------------------------------------------

    def _read_inbox(self) -> None:
        requests, problems = take_requests(self.job_dir)
        for problem in problems:
            self._notice(problem)
        if requests:
            self._before_control_writes()
        for request in requests:
            self.guard.run("request", lambda r=request: self._on_request(r))  # type: ignore[misc]

    def _on_request(self, req: ControlRequest) -> None:
        situation = Situation(
            phase=self._phase(),
            keep_alive=self.record.keep_alive,
            runner=self.record.runner,
            accepts=self.runner.accepts(),
            answered=self.last_answer is not None,
        )
        decision = decide(req.kind, req.message, situation)
        if decision.kind == "deliver" and decision.command.kind != "follow_up":
            self._send(decision.command)  # sent before the ack, so the ack tells the truth
            if decision.command.kind == "steer":
                self._steers_out.append(req.id)
        self._event(f"{req.kind}_ack", **ack_fields(req.id, decision))
        self._act(req.id, decision)
        self._save(force=True)

    def _phase(self) -> Phase:
        status = "waiting" if self.waiting_for_work else self.status.status
        if self._ending is None and status in ("starting", "running", "waiting"):
            return cast(Phase, status)
        return "ending"

    def _act(self, request_id: str, d: Decision) -> None:
        if d.kind == "refuse" or d.kind == "nothing_to_do":
            return
        if d.kind == "deliver":
            if isinstance(d.command, FollowUp):
                self._send_follow_up(request_id, d.command.message)
        elif d.kind == "hold":
            self.held.append((request_id, d.message))
        elif d.kind == "stop_job":
            self._begin_stop(d.why)
        elif d.kind == "end_waiting":
            self._begin_end("done", None)
        elif d.kind == "pause":
            self._interrupted = True
            self._send(Abort())
        else:
            assert_never(d)
