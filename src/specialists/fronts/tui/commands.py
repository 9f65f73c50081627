"""What `top`'s keys do to a job, through the shared actions; each returns a `Notice`.

These block (a stop waits for the job to end), so the app runs them in a worker thread.
Nothing here prints or knows about Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specialists.base.errors import SpecialistsError
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.view import current_status
from specialists.supervise.actions import SEND_ACK_TIMEOUT_S, send_message, stop_job, wait_for_ack

MAX_RESULT_CHARS = 200_000  # the result pane shows this much; `specialists result` has it all


@dataclass(frozen=True)
class Notice:
    severity: Literal["information", "warning", "error"]
    text: str


@dataclass(frozen=True)
class ResultText:
    title: str
    text: str


def stop(store: JobStore, job_id: str) -> Notice:
    try:
        outcome = stop_job(store, job_id)
    except SpecialistsError as exc:
        return Notice("error", f"stop {job_id}: {exc.one_line()}")
    st = outcome.status
    if not outcome.was_active:
        return Notice("information", f"job {job_id} is already {st.status}")
    if outcome.stopped:
        return Notice("information", f"stopped: job {job_id} cancelled")
    if st.active:
        return Notice("error", f"job {job_id} did not stop (status {st.status})")
    return Notice("information", f"job {job_id} ended as {st.status} before it was cancelled")


def send(store: JobStore, job_id: str, kind: Literal["steer", "follow_up"], text: str) -> Notice:
    what = "steer" if kind == "steer" else "follow-up"
    try:
        outcome = send_message(store, job_id, kind, text)
    except SpecialistsError as exc:
        return Notice("error", f"{what} {job_id}: {exc.one_line()}")
    if outcome.state == "refused":
        return Notice("warning", f"{what} refused: {outcome.reason}")
    if outcome.state == "pending":
        return Notice("warning", f"{what} pending: job {job_id} has not picked it up yet")
    if outcome.state == "queued":
        return Notice("information", f"{what} queued until job {job_id}'s current run ends")
    return Notice("information", f"{what} delivered to job {job_id}")


def interrupt(store: JobStore, job_id: str) -> Notice:
    """Abort the current turn of a keep-alive job; the job itself goes on waiting.

    Refused for a job that is not keep-alive: its supervisor treats an abort as the end of
    the job, and that is what stop is for.
    """
    try:
        st = current_status(store, job_id)
        if not st.active:
            return Notice("warning", f"job {job_id} is {st.status}: nothing to interrupt")
        if not st.keep_alive:
            return Notice(
                "warning",
                f"job {job_id} is not keep-alive: an interrupt would end it (stop it with s)",
            )
        if st.status != "running":
            return Notice("warning", f"job {job_id} is {st.status}: no turn to interrupt")
        request = post_request(store.job_dir(job_id), "abort")
        ack = wait_for_ack(store, job_id, request.id, SEND_ACK_TIMEOUT_S)
    except (SpecialistsError, OSError) as exc:
        detail = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        return Notice("error", f"interrupt {job_id}: {detail}")
    if ack is None:
        return Notice("warning", f"interrupt pending: job {job_id} has not picked it up yet")
    if not ack.get("delivered"):
        return Notice("warning", f"interrupt refused: {ack.get('reason') or 'refused'}")
    return Notice("information", f"interrupted the current turn of job {job_id}")


def result(store: JobStore, job_id: str) -> ResultText | Notice:
    """The answer of a done job, or a waiting job's latest one."""
    try:
        st = current_status(store, job_id)
        if st.status == "done":
            text, title = store.read_result(job_id), f"result of {job_id}"
        elif st.status == "waiting":
            text, title = store.latest_answer(job_id), f"latest answer of {job_id} (waiting)"
        else:
            detail = f": {st.error}" if st.error else ""
            return Notice("warning", f"job {job_id} is {st.status}{detail}; no result")
    except (SpecialistsError, OSError) as exc:
        detail = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        return Notice("error", f"result {job_id}: {detail}")
    if text is None:
        return Notice("warning", f"job {job_id} has no result file")
    if len(text) > MAX_RESULT_CHARS:
        more = len(text) - MAX_RESULT_CHARS
        text = text[:MAX_RESULT_CHARS] + f"\n… {more} more characters: specialists result {job_id}"
    return ResultText(title, text)
