"""An ask and how it ended: plain data, ids and limits (no files here).

A child job asks its supervisor (`contact_supervisor`): `need_decision` and
`interview_request` wait for one reply, bounded by a timeout; `progress_update` only tells.
Every ask ends exactly once, by whichever outcome claims it first: the supervisor's reply,
the child giving up (its timeout; `cancelled` with the reason: its turn was interrupted, its
MCP client cancelled the call, the asking job paused or ended), or the supervisor being gone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from specialists.base.errors import StoreError, UserError

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


@dataclass(frozen=True)
class Ask:
    id: str
    job_id: str
    kind: AskKind
    message: str
    asked_at_ms: int
    timeout_s: float  # 0 for a progress update
    to: tuple[str, ...]  # the owner keys whose inboxes got it
    call_id: str = ""
    # An approval a fan-out waits for (features/spend/approval.py): its estimate and the
    # amount a plain yes approves.
    spend: dict[str, Any] | None = None

    @property
    def waits(self) -> bool:
        return self.kind in WAITING_KINDS

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job_id": self.job_id,
            "kind": self.kind,
            "message": self.message,
            "asked_at_ms": self.asked_at_ms,
            "timeout_s": self.timeout_s,
            "to": list(self.to),
            "call_id": self.call_id,
            **({"spend": self.spend} if self.spend is not None else {}),
        }


@dataclass(frozen=True)
class AskOutcome:
    kind: OutcomeKind
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


def ask_from_dict(data: dict[str, Any], where: str) -> Ask:
    """An ask.json object, checked field by field (the directory is untrusted)."""
    try:
        kind, to = data["kind"], data["to"]
        ok = (
            kind in ASK_KINDS
            and all(type(data[k]) is str for k in ("id", "job_id", "message"))
            and type(data["asked_at_ms"]) is int
            and type(data["timeout_s"]) in (int, float)
            and type(to) is list
            and all(type(k) is str for k in to)
            and type(data.get("call_id", "")) is str
            and type(data.get("spend", {})) is dict
        )
    except KeyError:
        ok = False
    if not ok:
        raise StoreError(f"{where} is damaged (a field is missing or of the wrong type)")
    return Ask(
        data["id"],
        data["job_id"],
        kind,
        data["message"],
        data["asked_at_ms"],
        float(data["timeout_s"]),
        tuple(to),
        data.get("call_id", ""),
        data.get("spend"),
    )


def outcome_from_dict(data: dict[str, Any], where: str) -> AskOutcome:
    kind, at = data.get("kind"), data.get("at_ms")
    answer, by, why = data.get("answer", ""), data.get("by", ""), data.get("why", "")
    if kind not in OUTCOME_KINDS or type(at) is not int or type(answer) is not str:
        raise StoreError(f"{where} is damaged (a field is missing or of the wrong type)")
    if type(by) is not str or type(why) is not str:
        raise StoreError(f"{where} is damaged (field 'by' or 'why')")
    return AskOutcome(kind, at, answer, by, why)
