"""Spend ceilings: the pure parts (parsing, decisions, prices on a fake table) and a native job
stopped before the model request that would pass its ceiling (the real Supervisor and
NativeRunner over a ScriptedModel; no process starts)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from specialists.base.clock import FakeClock
from specialists.base.errors import ConfigError, UserError
from specialists.catalog.config import Config
from specialists.features.spend.ceiling import Entry, entries, own_ceiling, parse_tokens, parse_usd
from specialists.features.spend.settings import spend_settings
from specialists.features.spend.tally import spent_under, usual
from specialists.native.model import UsageReport
from specialists.native.prices import cost_usd
from specialists.native.testing import ScriptedModel, call, reply
from specialists.runners.native import NativeRunner
from specialists.store.jobs import JobStore
from specialists.store.liveness import process_start_time
from specialists.store.records import JobStatus
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job
from tests.support.supervising import Harness

# --- parsing and deciding ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("200000", 200_000), ("200_000", 200_000), ("200k", 200_000), ("1.5M", 1_500_000), (7, 7)],
)
def test_token_ceilings_read_as_people_write_them(text: object, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "lots", "", "1e99", True, "nan"])
def test_a_bad_token_ceiling_is_one_clear_line(text: object) -> None:
    with pytest.raises(UserError, match="--max-tokens must be a whole number of tokens"):
        parse_tokens(text)


def test_dollars_take_a_sign_and_refuse_nonsense() -> None:
    assert parse_usd("$2.50") == 2.5
    assert parse_usd(3) == 3.0
    for bad in ("0", "-1", "inf", "nan", "two", "1e12"):
        with pytest.raises(UserError, match="--max-cost must be US dollars over 0"):
            parse_usd(bad)
    assert own_ceiling("200k", "2.50", approved_usd=10) == {
        "tokens": 200_000,
        "cost_usd": 2.5,
        "approved_usd": 10.0,
    }
    assert own_ceiling() == {}


def test_an_entry_says_which_ceiling_and_spent_against_allowed() -> None:
    e = Entry("job-1a2b3c4d", 200_000, 2.5).counted(180_000, 2.61)
    assert e.over()
    assert e.reached() == (
        "spend ceiling reached: job 1a2b3c4d's tree spent $2.61 of $2.50, 180,000 of 200,000 tokens"
    )
    below = Entry("mission-ms-1", None, 10.0).counted(5, 2.0)
    assert not below.over() and below.used() == pytest.approx(0.2)
    assert below.left() == "$8.00 left"
    assert Entry("job-x", None, 0.06).counted(0, 0.075).figures() == "$0.0750 of $0.0600"
    assert Entry("claude-abc", 100, None).counted(100, 0).whose() == "session claude-abc"


def test_entries_from_an_untrusted_status_keep_the_good_ones_once() -> None:
    found = entries(
        [
            {"of": "job-a", "tokens": 10},
            {"of": "job-a", "tokens": 99},  # the first of a key wins
            {"of": "job-b"},  # no limit at all
            {"of": "job-c", "tokens": -1},
            {"of": "job-d", "cost_usd": float("inf")},
            {"of": 5, "tokens": 5},
            "junk",
            {"of": "job-e", "cost_usd": 1, "spent_tokens": "many", "spent_usd": 0.5},
        ]
    )
    assert found == [Entry("job-a", 10, None), Entry("job-e", None, 1.0, 0, 0.5)]


def test_the_spend_table_is_checked_key_by_key() -> None:
    s = spend_settings({"spend": {"max_cost": 5, "session_max_tokens": "2M"}})
    assert (s.max_cost, s.session_max_tokens, s.max_tokens) == (5.0, 2_000_000, None)
    with pytest.raises(ConfigError, match=r"\[spend\] has no key 'max_dollars'"):
        spend_settings({"spend": {"max_dollars": 5}})
    with pytest.raises(ConfigError, match=r"\[spend\] max_cost must be US dollars over 0"):
        spend_settings({"spend": {"max_cost": -2}})


# --- prices: the maintained list, behind one function ----------------------------------------


class FakeTable:
    """genai-prices' calc_price over a two-model table ($/Mtok: input 3, output 15, cache 0.3)."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, str, str]] = []

    def __call__(self, usage: Any, model: str, *, provider_id: str) -> Any:
        self.asked.append((usage, model, provider_id))
        if model != "sonnet":
            raise LookupError(model)
        total = (
            (usage.input_tokens - usage.cache_read_tokens) * 3
            + usage.cache_read_tokens * 0.3
            + usage.output_tokens * 15
        ) / 1e6
        return type("Price", (), {"total_price": total})()


def test_prices_come_from_the_table_and_an_unknown_model_costs_nothing() -> None:
    table = FakeTable()
    cost = cost_usd(
        "anthropic", "sonnet", input_tokens=1000, output_tokens=100, cache_read_tokens=1000,
        calc=table,
    )  # fmt: skip
    assert cost == pytest.approx((1000 * 3 + 1000 * 0.3 + 100 * 15) / 1e6)
    usage, _, provider = table.asked[0]
    assert (usage.input_tokens, provider) == (2000, "anthropic")  # its input counts the cache
    assert cost_usd("openai", "no-such-model", input_tokens=5, calc=table) == 0.0
    assert cost_usd("ollama", "sonnet", input_tokens=5, calc=table) == 0.0  # serves its own
    assert cost_usd("anthropic", "sonnet", calc=table) == 0.0  # nothing used, nothing asked
    assert len(table.asked) == 2


def test_configured_prices_win_over_the_list() -> None:
    from specialists.native.model import ModelInfo, Prices

    info = ModelInfo("openai/gpt-4.1", "openai", "gpt-4.1", prices=Prices(input=1, output=2))
    assert info.cost(UsageReport(1_000_000, 1_000_000)) == pytest.approx(3.0)


# --- counting a tree ---------------------------------------------------------------------


def _finished(
    store: JobStore, cwd: Path, under: list[str], tokens: int, usd: float, **kw: Any
) -> str:
    rec, lock = new_job(store, cwd, **kw)
    st = JobStatus(
        id=rec.id,
        specialist=rec.specialist,
        status="done",
        tokens={"input": tokens - 1, "output": 1, "cache_read": 10**6},
        cost_usd=usd,
        ceilings=[{"of": key, "tokens": 10**6} for key in under],
        started_at_ms=1,
    )
    (store.job_dir(rec.id) / "status.json").write_text(json.dumps(st.to_dict()))
    lock.release()
    return rec.id


def test_a_tree_is_each_job_counted_once_by_its_own_spend(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    _finished(store, tmp_path, ["job-root"], 100, 0.5)
    _finished(store, tmp_path, ["job-root", "claude-s"], 40, 0.25)
    _finished(store, tmp_path, ["claude-s"], 7, 0.01)
    me = _finished(store, tmp_path, ["job-root"], 1000, 9.0)
    counted = spent_under(store, ["job-root", "claude-s", "mission-x"], skip=me)
    assert counted["job-root"] == (140, 0.75)  # cache reads count in dollars, not tokens
    assert counted["claude-s"] == (47, 0.26)
    assert counted["mission-x"] == (0, 0.0)


def test_the_usual_spend_of_a_specialist_is_the_median_of_its_history(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    for tokens, usd in ((100, 1.0), (300, 3.0), (200, 2.0)):
        _finished(store, tmp_path, [], tokens, usd, specialist="reviewer")
    _finished(store, tmp_path, [], 5000, 50.0, specialist="planner")
    found = usual(store, ["reviewer", "nobody"])
    assert found["reviewer"][:3] == (200, 2.0, 3)
    assert found["reviewer"].basis == "the median of 3 finished jobs of its own"
    assert found["nobody"].jobs == 4  # no history of its own: every specialist's median
    assert found["nobody"].basis == "the median of 4 finished jobs of every specialist"


# --- a native job at its ceiling ------------------------------------------------------------


def _supervise(tmp_path: Path, model: ScriptedModel, **record: Any) -> tuple[Harness, JobStatus]:
    h = Harness(tmp_path)
    h.clock = FakeClock(start=1_800_000_000.0)
    rec, lock = new_job(h.store, tmp_path, runner="native", model="test/main", **record)
    h.job_id = rec.id
    runner = NativeRunner(config=Config(), clients={"test/main": model}, wall=h.clock)
    sup = Supervisor(
        h.store, rec, runner, clock=h.clock, sleep=h.clock.sleep, wall=h.clock,
        handle_signals=False,
    )  # fmt: skip
    try:
        return h, sup.run()
    finally:
        lock.release()


def test_a_native_job_stops_before_the_request_that_would_pass_its_ceiling(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    looking = reply(calls=[call("read", path="notes.txt")], usage=UsageReport(10, 5))
    model = ScriptedModel([looking, looking, looking, reply("never asked")])
    h, st = _supervise(tmp_path, model, ceiling={"tokens": 30})
    assert len(model.requests) == 2  # 15 + 15 tokens: the third request never starts
    assert st.status == "error"
    assert st.error == f"spend ceiling reached: job {st.id}'s tree spent 30 of 30 tokens"
    assert st.ceilings == [
        {"of": f"job-{st.id}", "tokens": 30, "cost_usd": None, "spent_tokens": 30, "spent_usd": 0.0}
    ]
    events = [e for e in h.store.read_events(st.id) if e["event"] == "spend"]
    assert events[-1]["reached"] is True and events[-1]["spent_tokens"] == 30


def test_a_job_under_no_ceiling_is_not_watched(tmp_path: Path) -> None:
    model = ScriptedModel(["done"])
    _, st = _supervise(tmp_path, model)
    assert st.status == "done" and st.ceilings == []


# --- which ceilings a job counts against ----------------------------------------------------


def _config(root: Path, text: str) -> None:
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(text)


def _status(store: JobStore, job_id: str, **fields: Any) -> JobStatus:
    st = JobStatus(id=job_id, specialist="tester", status="running", **fields)
    (store.job_dir(job_id) / "status.json").write_text(json.dumps(st.to_dict()))
    return st


def test_a_child_inherits_its_parents_ceilings_and_a_root_gets_configs(tmp_path: Path) -> None:
    from specialists.features.spend.resolve import ceilings_of

    _config(tmp_path, "[spend]\nmax_cost = 5\nsession_max_tokens = '1M'\n")
    store = JobStore(tmp_path / ".specialists", news=None)
    root, lock = new_job(store, tmp_path, owner=["claude-s1", "cli-me"])
    lock.release()
    found = ceilings_of(store, root, JobStatus(id=root.id, specialist="x"))
    assert found == [Entry(f"job-{root.id}", None, 5.0), Entry("claude-s1", 1_000_000, None)]
    _status(store, root.id, ceilings=[e.counted(99, 1.0).to_dict() for e in found])
    child, lock = new_job(store, tmp_path, owner=[f"job-{root.id}"], ceiling={"tokens": 500})
    lock.release()
    mine = ceilings_of(store, child, JobStatus(id=child.id, specialist="x"))
    assert mine == [  # its own, then its parent's (counted afresh): no config default
        Entry(f"job-{child.id}", 500, None),
        Entry(f"job-{root.id}", None, 5.0),
        Entry("claude-s1", 1_000_000, None),
    ]
    person, lock = new_job(store, tmp_path, owner=["cli-me"])  # a person is no session
    lock.release()
    assert [e.of for e in ceilings_of(store, person, JobStatus(id="x", specialist="x"))] == [
        f"job-{person.id}"
    ]


def test_a_watchdog_review_counts_against_the_ceilings_of_the_worker_it_reviews(
    tmp_path: Path,
) -> None:
    """Issue 23: a ceiling covers the reviews of the jobs under it. A review's owner is the
    worker's owner (so its answer reaches the same inbox), not the worker: job.json
    `watchdog.reviews` names the worker."""
    from specialists.features.spend.resolve import ceilings_of

    store = JobStore(tmp_path / ".specialists", news=None)
    worker, lock = new_job(store, tmp_path, owner=["cli-me"], ceiling={"cost_usd": 2.0})
    lock.release()
    _status(store, worker.id, ceilings=[Entry(f"job-{worker.id}", None, 2.0, 7, 0.5).to_dict()])
    review, lock = new_job(
        store, tmp_path, owner=["cli-me"], watchdog={"enabled": False, "reviews": worker.id}
    )
    lock.release()
    found = ceilings_of(store, review, JobStatus(id=review.id, specialist="x"))
    assert found == [Entry(f"job-{worker.id}", None, 2.0)]  # counted afresh, as a child's


def test_a_takeover_keeps_the_ceilings_the_first_supervisor_found(tmp_path: Path) -> None:
    from specialists.features.spend.resolve import ceilings_of

    store = JobStore(tmp_path / ".specialists", news=None)
    rec, lock = new_job(store, tmp_path)
    lock.release()
    kept = [{"of": "mission-m1", "cost_usd": 3.0, "spent_tokens": 10, "spent_usd": 1.5}]
    st = JobStatus(id=rec.id, specialist="x", ceilings=kept)
    assert ceilings_of(store, rec, st) == [Entry("mission-m1", None, 3.0, 10, 1.5)]


def test_a_mission_ceiling_covers_the_jobs_started_on_it(tmp_path: Path) -> None:
    from specialists.features.missions.ops import create
    from specialists.features.missions.store import MissionStore
    from specialists.features.spend.resolve import ceilings_of

    store = JobStore(tmp_path / ".specialists", news=None)
    missions = MissionStore(store.root, index_dir=tmp_path / "index")
    create(missions, title="ship it", mission_id="m1", ceiling=own_ceiling("2M", "20"))
    assert missions.load("m1").ceiling == {"tokens": 2_000_000, "cost_usd": 20.0}
    rec, lock = new_job(store, tmp_path, ceiling={"mission": "m1"})
    lock.release()
    found = ceilings_of(store, rec, JobStatus(id=rec.id, specialist="x"))
    assert found == [Entry("mission-m1", 2_000_000, 20.0)]


# --- approval before a fan-out ---------------------------------------------------------------


def _fan_out(tmp_path: Path, **settings: Any) -> tuple[JobStore, Any, list[dict[str, Any]]]:
    from specialists.features.spend.approval import FanOut
    from specialists.features.spend.settings import SpendSettings

    store = JobStore(tmp_path / ".specialists", news=None)
    for tokens, usd in ((100, 1.0), (300, 3.0)):
        _finished(store, tmp_path, [], tokens, usd, specialist="reviewer")
    launcher, lock = new_job(store, tmp_path, owner=["claude-boss"])
    lock.release()
    me = os.getpid()  # the launcher's supervisor is alive: its ask may be answered
    _status(store, launcher.id, supervisor_pid=me, supervisor_start_time=process_start_time(me))
    notes: list[dict[str, Any]] = []
    settings.setdefault("approve_timeout_s", 20.0)
    fan = FanOut(
        store, launcher.id, SpendSettings(**settings), to=("claude-boss",), note=notes.append
    )
    return store, fan, notes


def _answer_when_asked(store: JobStore, answer: str) -> Any:
    """Reply to the first ask that appears, from another thread (as the owner would)."""
    import threading
    import time

    from specialists.features.asks.ops import list_asks, reply

    def owner() -> None:
        for _ in range(1000):
            rows, _ = list_asks(store.root, None, include_settled=False)
            if rows:
                reply(store.root, rows[0].ask.id, answer, by="claude-boss", owners=None)
                return
            time.sleep(0.01)
        raise AssertionError("no ask to answer")

    t = threading.Thread(target=owner)
    t.start()
    return t


def test_a_fan_out_over_the_threshold_asks_once_and_a_yes_covers_twice_it(tmp_path: Path) -> None:
    store, fan, notes = _fan_out(tmp_path, approve_over_cost=3.0)
    fan.check(["reviewer"])  # $2, below: no ask
    asked = _answer_when_asked(store, "yes")
    fan.check(["reviewer", "reviewer"])  # $6 in all: asks, approved up to $12
    asked.join()
    fan.check(["reviewer", "reviewer", "reviewer"])  # $12: within the yes, no ask
    assert [n["e"] for n in notes] == ["estimate", "estimate", "approval", "estimate", "approval"]
    assert notes[2]["outcome"] == "approved" and notes[2]["usd"] == 12.0
    assert notes[4]["outcome"] == "approved"
    from specialists.features.asks.ops import list_asks

    (row,) = list_asks(store.root, None, include_settled=True)[0]
    assert row.ask.to == ["claude-boss"] and row.ask.spend["estimate_usd"] == 6.0
    assert "3 children in all so far, estimated at $6.00" in row.ask.message
    assert "2 x reviewer at $2.00 / 200 tokens each (the median of 2 finished jobs" in (
        row.ask.message
    )


def test_a_no_refuses_the_fan_out_with_the_owners_words(tmp_path: Path) -> None:
    store, fan, _ = _fan_out(tmp_path, approve_over_tokens=150)
    asked = _answer_when_asked(store, "no: split it first")
    with pytest.raises(UserError, match="the owner answered: no: split it first"):
        fan.check(["reviewer"])
    asked.join()
    assert fan.so_far.children == 0  # refused: nothing counted as launched


def test_an_earlier_yes_and_an_amount_count_for_a_later_launcher(tmp_path: Path) -> None:
    from specialists.features.spend.approval import FanOut, approval, approved_before
    from specialists.features.spend.settings import SpendSettings
    from specialists.features.spend.tally import Outlay

    asking = Outlay(400, 4.0)
    assert approval("Yes.", asking) == asking
    assert approval("approve $40", asking) == Outlay(4000, 40.0)
    assert approval("no", asking) is None and approval("", asking) is None
    store, fan, _ = _fan_out(tmp_path, approve_over_cost=1.0)
    asked = _answer_when_asked(store, "ok 10")
    fan.check(["reviewer"])
    asked.join()
    assert approved_before(store, fan.job_id) == Outlay(1000, 10.0)  # asked $4 / 400 tokens
    again = FanOut(store, fan.job_id, SpendSettings(approve_over_cost=1.0), to=("claude-boss",))
    again.check(["reviewer"] * 5)  # $10: the earlier yes covers it
