"""A supervisor's control inbox: the requests other processes address to a job (steer,
follow-up, abort, interrupt, stop: events in its inbox, store/control.py), read each step,
decided at once (requests.py) and acknowledged by an event; the follow-ups it holds until a
run ends, so each gets a run of its own; the steers handed to the agent until it takes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never, cast

from specialists.base.errors import SpecialistsError
from specialists.runners.base import Abort, FollowUp
from specialists.store.control import MAX_BATCH, ControlRequest, InboxMark, read_requests
from specialists.supervise.requests import Decision, Phase, Situation, ack_fields, decide

if TYPE_CHECKING:
    from specialists.supervise.supervisor import Supervisor


class ControlInbox:
    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.paused_at: float | None = None  # when an interrupt paused the run
        self._mark: InboxMark | None = None
        self._settled: tuple[int, int, int] | None = None  # the mark when all was taken

    def read(self) -> None:
        """Act on each request waiting in the job's inbox, once per request id (its cursor:
        store/control.py), the checkpoint told first that writes for requests follow. The
        inbox is read only when its mark moved since a look that took everything."""
        job_dir = self.sup.recorder.job_dir
        self._mark = self._mark or InboxMark(job_dir)
        mark = self._mark.now()
        if mark is not None and mark == self._settled:
            return
        taken: list[ControlRequest] = []

        def act(request: ControlRequest) -> None:
            if not taken:
                self.sup.before_control_writes()
            taken.append(request)
            self.sup.guard.run("request", lambda: self._on_request(request))

        for problem in read_requests(job_dir, act):
            self.sup.recorder.notice(problem)
        self._settled = mark if len(taken) < MAX_BATCH else None  # a full batch: more may wait

    def _on_request(self, req: ControlRequest) -> None:
        sup = self.sup
        situation = Situation(
            phase=self._phase(),
            keep_alive=sup.record.keep_alive,
            runner=sup.record.runner,
            accepts=sup.runner.accepts(),
            answered=sup.state.last_answer is not None,
        )
        decision = decide(req.kind, req.message, situation)
        if decision.kind == "deliver" and decision.command.kind != "follow_up":
            sup.send(decision.command)  # sent before the ack, so the ack tells the truth
            if decision.command.kind == "steer":
                sup.state.steers_out.append(req.id)
        sup.recorder.event(f"{req.kind}_ack", **ack_fields(req.id, decision))
        self._act(req.id, decision)
        sup.save(force=True)

    def _phase(self) -> Phase:
        sup = self.sup
        status = "waiting" if sup.state.waiting_for_work else sup.status.status
        if sup.ending is None and status in ("starting", "running", "waiting"):
            return cast(Phase, status)
        return "ending"

    def _act(self, request_id: str, d: Decision) -> None:
        if d.kind == "refuse" or d.kind == "nothing_to_do":
            return
        if d.kind == "deliver":
            if isinstance(d.command, FollowUp):
                self._send_follow_up(request_id, d.command.message)
        elif d.kind == "hold":
            self.sup.state.held.append((request_id, d.message))
        elif d.kind == "stop_job":
            self.sup.begin_stop(d.why)
        elif d.kind == "end_waiting":
            self.sup.begin_end("done", None)
        elif d.kind == "pause":
            self.sup.state.interrupted = True
            self.sup.send(Abort())
        else:
            assert_never(d)

    def send_held_follow_up(self) -> bool:
        sup = self.sup
        request_id, message = sup.state.held.popleft()
        if "follow_up" not in sup.runner.accepts():
            sup.state.held.appendleft((request_id, message))
            self.drop_held(f"the {sup.record.runner} runner takes no follow-up after this run")
            return False
        self._send_follow_up(request_id, message)
        return True

    def _send_follow_up(self, request_id: str, message: str) -> None:
        sup, s = self.sup, self.sup.state
        try:
            sup.send(FollowUp(message))  # one-shot runners start a new process here
        except SpecialistsError as exc:
            sup.on_run_failed(f"the follow-up could not start: {exc.one_line()}")
            return
        paused = self.paused_at if s.interrupted else None
        if paused is not None:  # the pause stopped the run's clock: the rest of its deadline
            sup.run_started += sup.clock() - paused
        sup.between.running_again(paused is not None, "follow_up")
        s.interrupted = False  # resumed: this run ends the job as any run would
        self.paused_at = None
        sup.recorder.event("follow_up_sent", request=request_id)
        sup.save(force=True)

    def drop_held(self, why: str) -> None:
        while self.sup.state.held:
            request_id, _ = self.sup.state.held.popleft()
            self.sup.recorder.event("follow_up_dropped", request=request_id, reason=why)

    def agent_took_steer(self, accepted: bool, why: str = "") -> None:
        """The agent acknowledged (or rejected) the oldest steer it was handed."""
        if not self.sup.state.steers_out:
            return  # a steer of its own making (an event delivered as a steer by pi's extension)
        request_id = self.sup.state.steers_out.popleft()
        if accepted:
            self.sup.recorder.event("steer_delivered", request=request_id)
        else:
            reason = why or "the agent rejected it"
            self.sup.recorder.event("steer_failed", request=request_id, reason=reason)
