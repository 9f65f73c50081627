"""Ask, wait, reply, list: the asks room's operations, for every front.

`ask` writes the question first, then posts one `ask` event to each supervisor; a waiting
kind then watches its outcome file (a stat every POLL_S) until a reply lands, its timeout
passes, the caller's turn is interrupted (`cancelled`), or every supervisor is gone
(checked every GONE_CHECK_S). The child then claims the outcome itself; if a reply won that
race, the reply is what it gets. Nothing here prints; callers render the outcomes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from specialists.base.errors import NotFound, StoreError, UserError
from specialists.base.tuples import NamedTuple
from specialists.features.asks import files
from specialists.features.asks.model import (
    Ask,
    AskKind,
    AskOutcome,
    ask_id,
    check_message,
    parse_ask_id,
)
from specialists.features.asks.route import gone_reason, post
from specialists.store.files import unwritten
from specialists.store.jobs import JobStore
from specialists.store.recovery import supervisor_alive

POLL_S = 0.05
GONE_CHECK_S = 1.0
INTERRUPTED = "its turn was interrupted"
MCP_CANCELLED = "its MCP client cancelled the call"


class Asked(NamedTuple):
    """What the child hears back."""

    ask: Ask
    outcome: AskOutcome | None  # None for a progress update
    gone: str | None = None  # why the supervisor is gone (outcome supervisor_gone)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"ask_id": self.ask.id}
        if self.outcome is not None:
            data["outcome"] = self.outcome.kind
            if self.outcome.kind == "reply":
                data["answer"] = self.outcome.answer
        return data

    def describe(self) -> str:
        a, o = self.ask, self.outcome
        if o is None:
            return f"Progress update sent to your supervisor ({a.id}); no reply is expected."
        if o.kind == "reply":
            return f"Your supervisor replied ({a.id}):\n{o.answer}"
        if o.kind == "timeout":
            return (
                f"No reply in {a.timeout_s:g} s ({a.id}). Go on with your best judgement and say "
                "in your answer what you decided and why; a late reply is refused."
            )
        if o.kind == "cancelled":
            return f"The ask {a.id} was cancelled by you: {o.why or 'your turn was interrupted'}."
        if o.kind == "supervisor_gone":
            return f"The ask {a.id} was given up: {self.gone or 'your supervisor is gone'}."
        raise AssertionError(o.kind)


@contextlib.contextmanager
def _disk_errors(what: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise unwritten(f"{what} could not be written", exc) from None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def ask(
    state_root: Path,
    job_id: str,
    kind: AskKind,
    message: str,
    *,
    timeout_s: float,
    call_id: str = "",
    cancelled: Callable[[], bool] = lambda: False,
    cancel_why: str = INTERRUPTED,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    to: tuple[str, ...] | None = None,
    spend: dict[str, Any] | None = None,
) -> Asked:
    """Ask the supervisors of job `job_id` (`to`: other keys than its owner's). Refuses
    before writing anything: a message over 64 KiB, a job nobody supervises, supervisors
    that are all gone. A file that cannot be written (a full disk) is one StoreError, never a
    traceback through the front. `cancelled` turning true ends the wait with outcome
    `cancelled` and `cancel_why`. `spend`: the fan-out an approval is asked for."""
    with _disk_errors("the ask"):
        waiting = _Waiting(cancelled, cancel_why, clock, sleep)
        about = _About(job_id, kind, message, timeout_s, call_id, to, spend)
        return _ask(state_root, about, waiting)


class _About(NamedTuple):
    """What is asked, of whom."""

    job_id: str
    kind: AskKind
    message: str
    timeout_s: float
    call_id: str
    to: tuple[str, ...] | None
    spend: dict[str, Any] | None


class _Waiting(NamedTuple):
    """How the asker's wait ends besides a reply: its cancel flag, and its clock."""

    cancelled: Callable[[], bool]
    why: str
    clock: Callable[[], float]
    sleep: Callable[[float], None]


def _ask(state_root: Path, about: _About, waiting: _Waiting) -> Asked:
    job_id, kind, message, timeout_s = about.job_id, about.kind, about.message, about.timeout_s
    check_message(message)
    store = JobStore(state_root, news=None)
    record = store.read_record(job_id)
    keys = tuple(record.owner) if about.to is None else about.to
    gone = gone_reason(state_root, keys)
    if gone is not None:
        raise UserError(f"cannot ask: {gone}", hint="decide yourself and say so in your answer")
    waits = kind != "progress_update"
    made = files.create(
        store.job_dir(job_id),
        lambda seq: Ask(
            ask_id(job_id, seq),
            job_id,
            kind,
            message,
            _now_ms(),
            timeout_s if waits else 0.0,
            keys,
            about.call_id,
            about.spend,
        ),
    )
    try:
        post(state_root, made, record.specialist)
    except StoreError:
        # Nobody heard it: settle it, so no supervisor later answers a child that is not
        # waiting (the listing shows it as given up).
        files.claim(
            store.job_dir(job_id),
            parse_ask_id(made.id)[1],
            AskOutcome("cancelled", _now_ms(), why="nobody could be told of it"),
        )
        raise
    if not waits:
        return Asked(made, None)
    return _wait(state_root, store.job_dir(job_id), made, waiting)


def _wait(state_root: Path, job_dir: Path, made: Ask, waiting: _Waiting) -> Asked:
    clock, sleep = waiting.clock, waiting.sleep
    seq = parse_ask_id(made.id)[1]
    start = clock()
    deadline = start + made.timeout_s
    next_gone_check = start + GONE_CHECK_S
    while True:
        settled = files.read_outcome(job_dir, seq)
        if settled is not None:
            return Asked(made, settled)
        now = clock()
        give_up: AskOutcome | None = None
        gone: str | None = None
        if waiting.cancelled():
            give_up = AskOutcome("cancelled", _now_ms(), why=waiting.why)
        elif now >= deadline:
            give_up = AskOutcome("timeout", _now_ms())
        elif now >= next_gone_check:
            next_gone_check = now + GONE_CHECK_S
            gone = gone_reason(state_root, made.to)
            if gone is not None:
                give_up = AskOutcome("supervisor_gone", _now_ms())
        if give_up is not None:
            _, final = files.claim(job_dir, seq, give_up)
            return Asked(made, final, gone if final.kind == "supervisor_gone" else None)
        sleep(min(POLL_S, max(0.0, deadline - now)))


def cancel_open(state_root: Path, job_id: str, why: str) -> list[str]:
    """Settle every open waiting ask of job `job_id` as cancelled with `why` (the job paused
    or ended: nobody waits for a reply any more). The ids it settled; an ask a reply won
    meanwhile keeps its reply. Called by the job's supervisor, so a pi or Claude Code job's
    ask ends with its turn even when the tool call that waits cannot be reached."""
    job_dir = JobStore(state_root, news=None).job_dir(job_id)
    settled: list[str] = []
    with _disk_errors("the ask's outcome"):
        for seq in files.list_seqs(job_dir):
            try:
                made = files.read_ask(job_dir, seq)
                if not made.waits or files.read_outcome(job_dir, seq) is not None:
                    continue
            except (FileNotFoundError, StoreError):
                continue  # half made or damaged: nobody can be waiting on it
            won, _ = files.claim(job_dir, seq, AskOutcome("cancelled", _now_ms(), why=why))
            if won:
                settled.append(made.id)
    return settled


class Replied(NamedTuple):
    ask: Ask
    outcome: AskOutcome

    def to_dict(self) -> dict[str, Any]:
        return {"ask_id": self.ask.id, "job_id": self.ask.job_id}

    def describe(self) -> str:
        return f"Reply delivered to job {self.ask.job_id} ({self.ask.id})."


def reply(
    state_root: Path, ask_ref: str, answer: str, *, by: str, owners: tuple[str, ...] | None
) -> Replied:
    """Answer an open ask. `owners`: the replier's keys, one of which must be among the
    ask's supervisors (None: a person at the CLI, who may answer any ask of the project).
    An unknown ask, one already settled, or a progress update is one clear error."""
    with _disk_errors("the reply"):
        return _reply(state_root, ask_ref, answer, by, owners)


def _reply(
    state_root: Path, ask_ref: str, answer: str, by: str, owners: tuple[str, ...] | None
) -> Replied:
    check_message(answer, "answer")
    job_id, seq = parse_ask_id(ask_ref)
    store = JobStore(state_root, news=None)
    job_dir = store.job_dir(job_id)
    try:
        made = files.read_ask(job_dir, seq)
    except FileNotFoundError:
        raise NotFound(f"no ask {ask_ref}", hint="see: specialists asks --all") from None
    if made.id != ask_ref or made.job_id != job_id:
        raise StoreError(f"ask {ask_ref}: its record names {made.id}; refused")
    if owners is not None and not set(owners) & set(made.to):
        raise UserError(
            f"ask {made.id} is not addressed to you", hint="only its supervisor replies"
        )
    if not made.waits:
        raise UserError(f"{made.id} is a progress update; it takes no reply")
    if files.read_outcome(job_dir, seq) is None and not _asker_alive(store, job_id):
        raise UserError(
            f"ask {made.id} is abandoned: job {job_id} ended while it waited",
            hint=f"continue it with: specialists resume {job_id} --prompt ...",
        )
    won, final = files.claim(job_dir, seq, AskOutcome("reply", _now_ms(), answer, by))
    if not won:
        raise UserError(
            f"ask {made.id} is already settled: {final.describe()}",
            hint="a late reply reaches nobody; send it with follow-up or steer if the job runs",
        )
    return Replied(made, final)


def _asker_alive(store: JobStore, job_id: str) -> bool:
    try:
        st = store.read_status(job_id)
    except (OSError, ValueError, StoreError):
        return True  # unreadable is not proof of death: let the claim decide
    return st is None or (st.active and supervisor_alive(st))


class AskRow(NamedTuple):
    ask: Ask
    outcome: AskOutcome | None
    job_active: bool

    @property
    def state(self) -> str:
        if not self.ask.waits:
            return "progress"
        if self.outcome is not None:
            return self.outcome.kind
        return "open" if self.job_active else "abandoned"  # the asker died while waiting


def list_asks(
    state_root: Path, owners: tuple[str, ...] | None, *, include_settled: bool
) -> tuple[list[AskRow], list[str]]:
    """Asks addressed to any of `owners` (None: every ask of the project), oldest first,
    with one problem line per unreadable one. Open asks only unless `include_settled`."""
    store = JobStore(state_root, news=None)
    rows: list[AskRow] = []
    problems: list[str] = []
    for job_id in store.list_ids():
        job_dir = store.job_dir(job_id)
        try:
            seqs = files.list_seqs(job_dir)
        except (OSError, StoreError) as exc:
            problems.append(f"job {job_id}: asks unreadable: {exc}")
            continue
        if not seqs:
            continue
        try:
            st = store.read_status(job_id)
        except (OSError, ValueError, StoreError) as exc:
            problems.append(f"job {job_id}: status unreadable: {exc}")
            st = None
        # as reply judges it: a job whose supervisor died is not waiting, whatever it says
        active = st is not None and st.active and supervisor_alive(st)
        for seq in seqs:
            try:
                made = files.read_ask(job_dir, seq)
                outcome = files.read_outcome(job_dir, seq)
            except FileNotFoundError:
                continue
            except (OSError, StoreError) as exc:
                problems.append(f"job {job_id}, ask {seq}: {exc}")
                continue
            if owners is not None and not set(owners) & set(made.to):
                continue
            row = AskRow(made, outcome, active)
            if include_settled or row.state == "open":
                rows.append(row)
    rows.sort(key=lambda r: r.ask.asked_at_ms)  # stable: asks of one ms stay in number order
    return rows, problems
