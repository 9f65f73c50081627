"""An ask and how it ended: plain data, ids and limits (no files here).

A child job asks its supervisor (`contact_supervisor`): `need_decision` and
`interview_request` wait for one reply, bounded by a timeout; `progress_update` only tells.
Every ask ends exactly once, by whichever outcome claims it first: the supervisor's reply,
the child giving up (its timeout; `cancelled` with the reason: its turn was interrupted, its
MCP client cancelled the call, the asking job paused or ended), or the supervisor being gone.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from specialists.base.errors import UserError
from specialists.store.fields import Declared

AskKind = Literal["need_decision", "interview_request", "progress_update"]
ASK_KINDS: tuple[str, ...] = ("need_decision", "interview_request", "progress_update")
WAITING_KINDS = frozenset({"need_decision", "interview_request"})

OutcomeKind = Literal["reply", "timeout", "cancelled", "supervisor_gone"]
OUTCOME_KINDS: tuple[str, ...] = ("reply", "timeout", "cancelled", "supervisor_gone")

MAX_MESSAGE_BYTES = 64 * 1024  # a question or a reply, as UTF-8
DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 3600.0
MAX_ASKS_PER_JOB = 10_000  # asks/<n>/ directories one job may make

_ID_RE = re.compile(r"ask-([0-9a-f]{8})-([1-9][0-9]{0,4})")


def ask_id(job_id: str, seq: int) -> str:
    return f"ask-{job_id}-{seq}"


def parse_ask_id(text: object) -> tuple[str, int]:
    """(job id, sequence number) of an ask id; one clear error for anything else."""
    m = _ID_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        shown = text[:60] if isinstance(text, str) else type(text).__name__
        raise UserError(f"invalid ask id {shown!r}", hint="ask ids look like ask-1a2b3c4d-1")
    return m.group(1), int(m.group(2))


def check_message(text: str, what: str = "message") -> str:
    """`text` when it is a sendable message: non-empty, valid UTF-8, at most 64 KiB."""
    if not text.strip():
        raise UserError(f"the {what} is empty")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise UserError(f"the {what} is not valid UTF-8 text (at character {exc.start})") from None
    if size > MAX_MESSAGE_BYTES:
        raise UserError(
            f"the {what} is {size:,} bytes; at most {MAX_MESSAGE_BYTES:,} (64 KiB)",
            hint="shorten it, or write the details to a file and name the file",
        )
    if "\0" in text:
        raise UserError(f"the {what} contains a NUL character")
    return text


class Ask(Declared):
    """ask.json, written once by the asker."""

    _what = "ask.json"
    _choices = {"kind": frozenset(ASK_KINDS)}
    id: str
    job_id: str
    kind: str  # an AskKind
    message: str
    asked_at_ms: int
    timeout_s: float  # 0 for a progress update
    to: list[str]  # the owner keys whose inboxes got it
    call_id: str = ""
    # An approval a fan-out waits for (features/spend/approval.py): its estimate and the
    # amount a plain yes approves.
    spend: dict[str, Any] | None = None

    @property
    def waits(self) -> bool:
        return self.kind in WAITING_KINDS

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.spend is None:
            del out["spend"]  # written only when there is one
        return out


class AskOutcome(Declared):
    """outcome.json: how the ask ended, claimed once."""

    _what = "outcome.json"
    _choices = {"kind": frozenset(OUTCOME_KINDS)}
    kind: str  # an OutcomeKind
    at_ms: int
    answer: str = ""  # the reply (kind "reply")
    by: str = ""  # who replied: an owner key, or "cli" for a person
    why: str = ""  # why the asker gave up (kind "cancelled"): its turn, its MCP client, its end

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "at_ms": self.at_ms}
        if self.kind == "reply":
            out |= {"answer": self.answer, "by": self.by}
        if self.why:
            out["why"] = self.why
        return out

    def describe(self) -> str:
        if self.kind == "reply":
            return f"answered by {self.by}"
        if self.kind == "timeout":
            return "timed out (no reply in time)"
        if self.kind == "cancelled":
            return f"cancelled by the asker ({self.why or 'its turn was interrupted'})"
        if self.kind == "supervisor_gone":
            return "given up (the supervisor is gone)"
        raise AssertionError(self.kind)
