"""Approval before a costly fan-out: a workflow's children, or a burst of spawn_thread.

Before children launch, their spend is estimated: each child at its specialist's median in
this project's history (tally.usual). A launcher keeps the estimate of everything it fanned
out so far; when that total passes config's `[spend] approve_over_cost` (or
`approve_over_tokens`), the launch waits for its owner's approval through the asks room:
one `ask` event to the owner (`specialists reply ask-... yes`, or the MCP `reply_to_ask`).
No ask is needed when the launch is covered:
- by a pre-approval (`--approve-cost`, job.json `ceiling.approved_usd`, or an earlier yes),
- or by a ceiling over the launcher whose room left holds the estimate (the ceiling stops
  the tree anyway).
A plain yes approves twice the estimate so far (a loop of single launches does not ask at
every step), `yes 40` approves up to $40; anything else refuses, and its words are the
launch's error. No reply within `approve_timeout_s` refuses too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.tuples import NamedTuple
from specialists.features.spend.ceiling import entries, usd
from specialists.features.spend.settings import SpendSettings
from specialists.features.spend.tally import Outlay, Usual, usual
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord

_YES = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "go"})
_AMOUNT = re.compile(r"\$?(\d+(?:\.\d+)?)")


class Estimate(NamedTuple):
    children: int
    tokens: int
    usd: float
    basis: str  # how each child was estimated, in words

    def words(self) -> str:
        return f"{self.children} children, about {usd(self.usd)} ({self.tokens:,} tokens)"


def estimate(store: JobStore, agents: Iterable[str]) -> Estimate:
    """Each child at its specialist's usual spend (children x median)."""
    listed = list(agents)
    found = usual(store, listed)
    tokens = sum(found[a].tokens for a in listed)
    usd = round(sum(found[a].usd for a in listed), 6)
    basis = "; ".join(_basis(a, found[a], listed.count(a)) for a in dict.fromkeys(listed))
    return Estimate(len(listed), tokens, usd, basis)


def _basis(agent: str, u: Usual, n: int) -> str:
    if u.jobs == 0:
        return f"{n} x {agent}: no finished job to go by"
    return f"{n} x {agent} at {usd(u.usd)} / {u.tokens:,} tokens each ({u.basis})"


class FanOut:
    """One launcher's fan-outs: what it estimated so far and what is approved.

    `check(agents)` is called before children launch and returns once they may; it raises
    UserError when the owner refuses (or does not answer in time). `note` gets one dict per
    decision for the launcher's own record (a workflow's journal)."""

    def __init__(
        self,
        store: JobStore,
        job_id: str,
        settings: SpendSettings,
        *,
        to: tuple[str, ...],
        note: Callable[[dict[str, Any]], None] = lambda _e: None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store, self.job_id, self.settings = store, job_id, settings
        self.to, self.note, self.cancelled = to, note, cancelled
        self.so_far = Estimate(0, 0, 0.0, "")
        record = store.read_record(job_id)
        approved = record.ceiling.get("approved_usd")
        self.approved = Outlay(0, float(approved)) if approved else Outlay()  # dollars only
        self.approved = _max(self.approved, approved_before(store, job_id))

    def check(self, agents: list[str]) -> None:
        s = self.settings
        if (s.approve_over_cost is None and s.approve_over_tokens is None) or not agents:
            return
        more = estimate(self.store, agents)
        total = Estimate(
            self.so_far.children + more.children,
            self.so_far.tokens + more.tokens,
            round(self.so_far.usd + more.usd, 6),
            more.basis,
        )
        self.note({"e": "estimate", **more._asdict(), "total_usd": total.usd,
                   "total_tokens": total.tokens})  # fmt: skip
        why = self._covered(total)
        # A yes covers what it approved; with no price known, the tokens decide.
        if why is None:
            self._ask(total)
        elif why != "below":
            self.note({"e": "approval", "outcome": why})
        self.so_far = total

    def _covered(self, total: Estimate) -> str | None:
        """Why no approval is needed (None: it is)."""
        s = self.settings
        passes = (s.approve_over_cost is not None and total.usd > s.approve_over_cost) or (
            s.approve_over_tokens is not None and total.tokens > s.approve_over_tokens
        )
        if not passes:
            return "below"
        if self._within(total, self.approved):
            return "approved"
        status = self.store.read_status(self.job_id)
        room = [e for e in entries(status.ceilings if status else ()) if not e.over()]
        for e in room:
            left_usd = None if e.cost_usd is None else e.cost_usd - e.spent_usd
            left_tokens = None if e.tokens is None else e.tokens - e.spent_tokens
            if (left_usd is None or total.usd - self.so_far.usd <= left_usd) and (
                left_tokens is None or total.tokens - self.so_far.tokens <= left_tokens
            ):
                return f"covered by the ceiling of {e.whose()}"
        return None

    def _within(self, total: Estimate, approved: Outlay) -> bool:
        """Whether `approved` covers `total` in each unit that has a threshold."""
        s = self.settings
        return (s.approve_over_cost is None or total.usd <= approved.usd) and (
            s.approve_over_tokens is None or total.tokens <= approved.tokens
        )

    def _ask(self, total: Estimate) -> None:
        from specialists.features.asks.ops import ask

        asking = Outlay(total.tokens * 2, round(total.usd * 2, 6))
        s = self.settings
        limits = [usd(s.approve_over_cost)] if s.approve_over_cost is not None else []
        limits += [f"{s.approve_over_tokens:,} tokens"] if s.approve_over_tokens else []
        message = (
            f"Approve a fan-out? Job {self.job_id} would launch {total.children} children in all "
            f"so far, estimated at {usd(total.usd)} ({total.tokens:,} tokens): {total.basis}. "
            f"That passes the approval threshold ({' / '.join(limits)}, config [spend]). "
            f"Reply `yes` to approve up to {usd(asking.usd)} (twice the estimate), `yes <dollars>` "
            "for another amount, or `no <why>`."
        )
        spend = {"estimate_usd": total.usd, "estimate_tokens": total.tokens,
                 "asking_usd": asking.usd, "asking_tokens": asking.tokens}  # fmt: skip
        asked = ask(
            self.store.root,
            self.job_id,
            "need_decision",
            message,
            timeout_s=self.settings.approve_timeout_s,
            cancelled=self.cancelled,
            cancel_why="the launch was stopped",
            to=self.to,
            spend=spend,
        )
        outcome = asked.outcome
        replied = outcome is not None and outcome.kind == "reply"
        granted = approval(outcome.answer, asking) if outcome and replied else None
        result = "approved" if granted else "refused" if replied else getattr(outcome, "kind", "")
        entry: dict[str, Any] = {"e": "approval", "ask": asked.ask.id, "outcome": result}
        entry["by"] = outcome.by if outcome else ""
        if granted is not None:
            entry |= {"usd": granted.usd, "tokens": granted.tokens}
        self.note(entry)
        if granted is None or not self._within(total, granted):
            if outcome is not None and replied:
                why = f"the owner answered: {outcome.answer.strip()[:300]}"
            elif result == "timeout":
                why = f"no reply within {self.settings.approve_timeout_s:g} s"
            else:
                why = asked.gone or f"the ask ended {result}"
            raise UserError(
                f"fan-out not approved ({asked.ask.id}): {total.words()}; {why}",
                hint="launch fewer children, or approve up front with --approve-cost",
            )
        self.approved = _max(self.approved, granted)


def approval(answer: str, asking: Outlay) -> Outlay | None:
    """What a reply approves: `yes` the amount asked, `yes 40` up to $40; None: refused."""
    words = answer.strip().lower().split()
    if not words or words[0].strip(".,!:") not in _YES:
        return None
    m = _AMOUNT.search(" ".join(words[1:]))
    if m is None:
        return asking
    usd = float(m.group(1))
    scale = usd / asking.usd if asking.usd else None
    return Outlay(int(asking.tokens * scale) if scale else asking.tokens, usd)


def approved_before(store: JobStore, job_id: str) -> Outlay:
    """The most a job's earlier approvals allowed (its answered spend asks)."""
    from specialists.features.asks import files

    best = Outlay()
    job_dir = store.job_dir(job_id)
    try:
        seqs = files.list_seqs(job_dir)
    except (OSError, SpecialistsError):
        return best
    for seq in seqs:
        try:
            made, outcome = files.read_ask(job_dir, seq), files.read_outcome(job_dir, seq)
        except (OSError, SpecialistsError):
            continue  # half made or damaged: it approved nothing
        if made.spend and outcome is not None and outcome.kind == "reply":
            asking = Outlay(
                int(made.spend.get("asking_tokens") or 0), float(made.spend.get("asking_usd") or 0)
            )
            granted = approval(outcome.answer, asking)
            if granted is not None:
                best = _max(best, granted)
    return best


def _max(a: Outlay, b: Outlay) -> Outlay:
    return Outlay(max(a.tokens, b.tokens), max(a.usd, b.usd))


def check_burst(
    state_root: Path,
    parent: JobRecord,
    earlier: list[str],
    agent: str,
    *,
    cancelled: Callable[[], bool] = lambda: False,
) -> None:
    """spawn_thread's approval: the parent's children so far and the new one, as one
    fan-out (its earlier yes still counts: approved_before)."""
    settings = settings_of(state_root.parent)
    if settings.approve_over_cost is None and settings.approve_over_tokens is None:
        return
    store = JobStore(state_root, news=None)
    fan = FanOut(store, parent.id, settings, to=owner_keys(store, parent.id), cancelled=cancelled)
    fan.so_far = estimate(store, earlier)
    fan.check([agent])


def owner_keys(store: JobStore, job_id: str) -> tuple[str, ...]:
    """Whom a launcher asks: its owners, else the person at this terminal."""
    from specialists.base.owner import person_key

    keys = tuple(store.read_record(job_id).owner)
    return keys or (person_key(),)


def settings_of(project_root: Path) -> SpendSettings:
    from specialists.catalog.config import load_config
    from specialists.features.spend.settings import spend_settings

    return spend_settings(load_config(project_root).raw)
