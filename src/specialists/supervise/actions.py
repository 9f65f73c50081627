"""Acting on a job from another process: stop it, steer it, send it a follow-up.

The library core of `specialists stop`, `steer` and `follow-up`, shared with the MCP server.
Requests go through the job's control inbox; the supervisor acknowledges each by an event
carrying the request id. Nothing here prints: callers render the outcomes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any, Literal, assert_never

from specialists.base.errors import UserError
from specialists.base.tuples import NamedTuple
from specialists.store.control import ControlKind, ControlRequest, post_request
from specialists.store.jobs import JobStore, read_event_lines
from specialists.store.liveness import is_alive, is_frozen
from specialists.store.records import JobStatus
from specialists.store.recovery import kill_agent, recover_if_dead
from specialists.store.view import current_status

STOP_ACK_TIMEOUT_S = 1.5
STOP_TIMEOUT_S = 12.0
SIGTERM_ANSWER_S = 3.0  # a live supervisor answers SIGTERM within ~1 s (supervise/steps.py)
SIGKILL_REAP_S = 5.0
SEND_ACK_TIMEOUT_S = 5.0
_POLL_S = 0.03


def wait_for_ack(
    store: JobStore, job_id: str, request_id: str, timeout: float
) -> dict[str, Any] | None:
    """The ack event for `request_id`, or None if none arrived within `timeout` seconds."""
    return events_for(store, job_id, request_id, None, time.monotonic() + timeout)


def events_for(
    store: JobStore, job_id: str, request_id: str, kinds: set[str] | None, until: float
) -> dict[str, Any] | None:
    """The first event (of `kinds`, unless None) for `request_id`, or None by the monotonic
    time `until`."""
    path, offset = store.events_path(job_id), 0
    while True:
        events, offset = read_event_lines(path, offset)
        for ev in events:
            if ev.get("request") == request_id and (kinds is None or ev.get("event") in kinds):
                return ev
        if time.monotonic() >= until:
            return None
        time.sleep(_POLL_S)


# --- stop ---------------------------------------------------------------------------------


StopKind = Literal["not_active", "cancelled", "ended", "still_running"]


class StopOutcome(NamedTuple):
    job_id: str
    status: JobStatus  # the status after the stop attempt
    was_active: bool  # False: the job had already ended, nothing was done

    @property
    def kind(self) -> StopKind:
        """not_active: it had ended, nothing done; cancelled: stopped; ended: it reached
        another end first (done or error); still_running: it did not stop (a failure)."""
        if not self.was_active:
            return "not_active"
        if self.status.status == "cancelled":
            return "cancelled"
        return "still_running" if self.status.active else "ended"

    @property
    def stopped(self) -> bool:
        return self.kind == "cancelled"

    def describe(self) -> str:
        """One line for any interface: what stopping did."""
        st = self.status
        kind = self.kind
        if kind == "not_active":
            return f"job {st.id} is already {st.status}; nothing to stop"
        if kind == "cancelled":
            return f"stopped: job {st.id} cancelled"
        if kind == "ended":
            return f"job {st.id} ended as {st.status} before it could be cancelled"
        if kind == "still_running":
            return f"job {st.id} did not stop (still {st.status})"
        assert_never(kind)


def stop_job(
    store: JobStore,
    job_id: str,
    *,
    ack_timeout: float = STOP_ACK_TIMEOUT_S,
    stop_timeout: float = STOP_TIMEOUT_S,
) -> StopOutcome:
    """Graceful abort through the inbox, then SIGTERM, then SIGKILL; ends `cancelled`.

    Whatever state the supervisor is in: one that acknowledges the request (or answers
    SIGTERM by beginning to stop) gets `stop_timeout` to end the job itself; one that does
    neither (hung), or is frozen (SIGSTOP), is SIGKILLed at once, and the job is recorded
    as it was asked, `cancelled` (recovery sees the stop request still in its inbox).

    A job supervised inside this very process (the MCP server's synchronous calls) is never
    signalled as a process: that would kill the caller. Its agent is killed instead.
    """
    st = current_status(store, job_id)
    if not st.active:
        return StopOutcome(job_id, st, was_active=False)
    in_this_process = st.supervisor_pid == os.getpid()
    request = post_request(store.job_dir(job_id), "stop")
    if in_this_process:
        acked = wait_for_ack(store, job_id, request.id, ack_timeout) is not None
        if not acked:
            kill_agent(st, store.job_dir(job_id))
        if not _ended(store, job_id, stop_timeout, watch_frozen=False):
            kill_agent(st, store.job_dir(job_id))
        return StopOutcome(job_id, current_status(store, job_id), was_active=True)
    answering = _answers(store, job_id, st, request.id, ack_timeout)
    if answering and _ended(store, job_id, stop_timeout):
        return StopOutcome(job_id, current_status(store, job_id), was_active=True)
    st = store.read_status(job_id) or st
    _signal(st.supervisor_pid, st.supervisor_start_time, signal.SIGKILL)
    _gone(st, SIGKILL_REAP_S)
    # The stop request is still in its inbox (or it had begun stopping): recovery, by this
    # process or any other reader, records `cancelled`, not a crash.
    st = recover_if_dead(
        store, job_id, _raw_status(store, job_id, st), final="cancelled", reason="stopped"
    )
    return StopOutcome(job_id, st, was_active=True)


def _answers(
    store: JobStore, job_id: str, st: JobStatus, request_id: str, ack_timeout: float
) -> bool:
    """Is the supervisor acting on the stop? It acknowledged the request, or, asked again
    with SIGTERM, began stopping (or ended) within SIGTERM_ANSWER_S. False at once for a
    frozen one, which can do neither. The supervisor's pid is read again on each look: a
    job that is just starting records its launcher's until its supervisor runs."""
    began = time.monotonic()
    path, offset = store.events_path(job_id), 0
    while True:
        st = store.read_status(job_id) or st
        if not st.active:
            return True
        if is_frozen(st.supervisor_pid):
            return False
        events, offset = read_event_lines(path, offset)
        if any(ev.get("request") == request_id for ev in events):
            return True
        waited = time.monotonic() - began
        starting = st.status == "starting" and not is_alive(
            st.supervisor_pid, st.supervisor_start_time
        )  # its supervisor has not written its pid yet (a loaded machine: seconds)
        if waited >= (STOP_TIMEOUT_S if starting else ack_timeout):
            break
        time.sleep(_POLL_S)
    # Not reading its inbox: busy in a step, or hung.
    _signal(st.supervisor_pid, st.supervisor_start_time, signal.SIGTERM)
    deadline = time.monotonic() + SIGTERM_ANSWER_S
    while time.monotonic() < deadline:
        now = store.read_status(job_id)
        if now is None or not now.active or now.current_event == "stopping":
            return True
        if is_frozen(now.supervisor_pid) or not is_alive(
            now.supervisor_pid, now.supervisor_start_time
        ):
            return False
        time.sleep(_POLL_S)
    return False


def _ended(store: JobStore, job_id: str, timeout: float, *, watch_frozen: bool = True) -> bool:
    """The job ended within `timeout`; False early when its supervisor froze meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = current_status(store, job_id)
        if not now.active:
            return True
        if watch_frozen and is_frozen(now.supervisor_pid):
            return False
        time.sleep(0.05)
    return False


def _gone(st: JobStatus, timeout: float) -> None:
    """Wait (bounded) until the SIGKILLed supervisor is dead, so recovery may proceed."""
    deadline = time.monotonic() + timeout
    while is_alive(st.supervisor_pid, st.supervisor_start_time):
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def _raw_status(store: JobStore, job_id: str, fallback: JobStatus) -> JobStatus:
    """The status as written, not recovered: recovery must be told what was asked."""
    return store.read_status(job_id) or fallback


def _signal(pid: int | None, start_time: int | None, sig: int) -> None:
    if pid and pid != os.getpid() and is_alive(pid, start_time):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


# --- steer / follow-up ----------------------------------------------------------------------

SendState = Literal["delivered", "queued", "pending", "refused"]


class SendOutcome(NamedTuple):
    job_id: str
    state: SendState  # pending: queued in the inbox, not acknowledged yet
    request_id: str | None = None
    reason: str | None = None  # why it was refused

    @property
    def ok(self) -> bool:
        return self.state != "refused"


def send_message(
    store: JobStore,
    job_id: str,
    kind: Literal["steer", "follow_up"],
    message: str,
    *,
    wait: bool = True,
    ack_timeout: float = SEND_ACK_TIMEOUT_S,
) -> SendOutcome:
    """Post a steer or follow-up to a live job and (optionally) wait for the supervisor's ack.

    Raises UserError for an empty message. A finished job is refused, not an exception:
    callers show the reason (and suggest resuming it).
    """
    request = post_live(store, job_id, kind, message)
    if isinstance(request, str):
        return SendOutcome(job_id, "refused", reason=request)
    if not wait:
        return SendOutcome(job_id, "pending", request.id)
    ack = wait_for_ack(store, job_id, request.id, ack_timeout)
    if ack is None:
        return SendOutcome(job_id, "pending", request.id)
    if ack.get("delivered"):
        return SendOutcome(job_id, "queued" if ack.get("queued") else "delivered", request.id)
    return SendOutcome(job_id, "refused", request.id, str(ack.get("reason") or "refused"))


def post_live(
    store: JobStore, job_id: str, kind: ControlKind, message: str = ""
) -> ControlRequest | str:
    """Post a request to a live job: the request, or why not (the job has ended). A steer or
    follow-up without words is a UserError."""
    if kind in ("steer", "follow_up") and not message.strip():
        raise UserError("the message is empty")
    st = current_status(store, job_id)
    if not st.active:
        return f"job {job_id} is {st.status}"
    return post_request(store.job_dir(job_id), kind, message)
