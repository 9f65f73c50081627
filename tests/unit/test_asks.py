"""The asks room over a temp store: asking, waiting, replying, listing, and what a hostile
directory or a racing second replier can do to it (on a fake clock, no real waits)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from specialists.base.clock import FakeClock
from specialists.base.errors import NotFound, StoreError, UserError
from specialists.events.inbox import Inbox
from specialists.features.asks import files
from specialists.features.asks.model import MAX_MESSAGE_BYTES, Ask, AskOutcome, parse_ask_id
from specialists.features.asks.ops import ask, cancel_open, list_asks, reply
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from tests.support.fleet import write_status
from tests.support.jobs import new_job

BOSS = "cli-boss"


def _job(store: JobStore, tmp_path: Path, **over: object) -> JobRecord:
    record, lock = new_job(store, tmp_path, **over)
    lock.release()
    write_status(store.jobs_dir, record.id, status="running")
    return record


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / ".specialists", news=None)
    s.ensure_dirs()
    return s


def _reply_soon(store: JobStore, job_id: str, answer: str, clock: FakeClock):
    """A fake sleep that answers the ask the first time the child waits."""

    def sleep(seconds: float) -> None:
        for seq in files.list_seqs(store.job_dir(job_id)):
            if files.read_outcome(store.job_dir(job_id), seq) is None:
                reply(store.root, f"ask-{job_id}-{seq}", answer, by=BOSS, owners=(BOSS,))
        clock.sleep(seconds)

    return sleep


def test_an_ask_waits_for_the_reply_and_returns_it(store: JobStore, tmp_path: Path) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    clock = FakeClock()
    asked = ask(
        store.root, child.id, "need_decision", "A or B?", timeout_s=60,
        clock=clock, sleep=_reply_soon(store, child.id, "B", clock),
    )  # fmt: skip
    assert asked.outcome is not None and asked.outcome.kind == "reply"
    assert asked.outcome.answer == "B" and "Your supervisor replied" in asked.describe()
    (event,) = Inbox(store.root, BOSS).pending().events
    assert event.kind == "ask" and event.id == f"{asked.ask.id}:ask:1"
    assert "A or B?" in event.body and f"specialists reply {asked.ask.id}" in event.body
    assert list_asks(store.root, (BOSS,), include_settled=False)[0] == []


def test_an_ask_times_out_on_the_clock_and_a_late_reply_is_refused(
    store: JobStore, tmp_path: Path
) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    clock = FakeClock()
    asked = ask(
        store.root, child.id, "need_decision", "?", timeout_s=5, clock=clock, sleep=clock.sleep
    )
    assert asked.outcome is not None and asked.outcome.kind == "timeout"
    assert "No reply in 5 s" in asked.describe()
    assert clock() >= 5
    with pytest.raises(UserError, match="already settled: timed out"):
        reply(store.root, asked.ask.id, "late", by=BOSS, owners=(BOSS,))


def test_progress_update_returns_at_once(store: JobStore, tmp_path: Path) -> None:
    child = _job(store, tmp_path, owner=[BOSS])

    def no_sleep(_: float) -> None:
        raise AssertionError("a progress update must not wait")

    asked = ask(store.root, child.id, "progress_update", "half", timeout_s=60, sleep=no_sleep)
    assert asked.outcome is None and asked.ask.timeout_s == 0
    with pytest.raises(UserError, match="progress update"):
        reply(store.root, asked.ask.id, "ok", by=BOSS, owners=None)


def test_an_interrupted_turn_gives_the_ask_up(store: JobStore, tmp_path: Path) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    clock = FakeClock()
    asked = ask(
        store.root, child.id, "need_decision", "?", timeout_s=60,
        cancelled=lambda: clock() > 1, clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert asked.outcome is not None and asked.outcome.kind == "cancelled"
    assert asked.outcome.why == "its turn was interrupted"
    assert "cancelled by you: its turn was interrupted" in asked.describe()


def test_cancel_open_settles_only_open_waiting_asks_once(store: JobStore, tmp_path: Path) -> None:
    """What the supervisor does when its job pauses or ends: the open ask is cancelled with
    the reason (the child's wait returns it, the parent no longer lists it, a late reply is
    refused); an answered ask keeps its reply, a progress update is left alone, a second call
    settles nothing."""
    child = _job(store, tmp_path, owner=[BOSS])
    clock = FakeClock()
    answered = ask(
        store.root, child.id, "need_decision", "1?", timeout_s=60,
        clock=clock, sleep=_reply_soon(store, child.id, "yes", clock),
    )  # fmt: skip
    ask(store.root, child.id, "progress_update", "half", timeout_s=60)
    settled: list[list[str]] = []

    def sleep(seconds: float) -> None:
        if not settled:
            settled.append(cancel_open(store.root, child.id, "the asking job ended cancelled"))
        clock.sleep(seconds)

    began = clock()
    waiting = ask(
        store.root, child.id, "interview_request", "2?", timeout_s=600, clock=clock, sleep=sleep
    )
    assert settled == [[waiting.ask.id]]
    assert waiting.outcome is not None and waiting.outcome.kind == "cancelled"
    assert waiting.outcome.why == "the asking job ended cancelled"
    assert clock() - began < 1  # ended by the claim, not the timeout
    assert cancel_open(store.root, child.id, "again") == []
    outcome = files.read_outcome(store.job_dir(child.id), parse_ask_id(answered.ask.id)[1])
    assert outcome is not None and outcome.kind == "reply"
    assert list_asks(store.root, (BOSS,), include_settled=False)[0] == []
    with pytest.raises(UserError, match=r"already settled: cancelled by the asker \(the asking"):
        reply(store.root, waiting.ask.id, "late", by=BOSS, owners=(BOSS,))


def test_an_ask_to_a_parent_that_is_gone_is_one_clear_error(
    store: JobStore, tmp_path: Path
) -> None:
    """Refused before anything is written: no asks/ directory, no event."""
    parent = _job(store, tmp_path, owner=[BOSS])
    write_status(store.jobs_dir, parent.id, status="done")
    child = _job(store, tmp_path, owner=[f"job-{parent.id}"])
    with pytest.raises(UserError, match=f"your supervisor is gone: job {parent.id} has ended"):
        ask(store.root, child.id, "need_decision", "?", timeout_s=60)
    assert files.list_seqs(store.job_dir(child.id)) == []
    dead = _job(store, tmp_path, owner=["agent-999999999.1"])
    with pytest.raises(UserError, match=r"agent-999999999\.1 has exited"):
        ask(store.root, dead.id, "progress_update", "x", timeout_s=60)
    nobody = _job(store, tmp_path, owner=[])
    with pytest.raises(UserError, match="no supervisor"):
        ask(store.root, nobody.id, "need_decision", "x", timeout_s=60)


def test_a_parent_that_ends_while_the_child_waits_ends_the_wait(
    store: JobStore, tmp_path: Path
) -> None:
    parent = _job(store, tmp_path, owner=[BOSS])
    child = _job(store, tmp_path, owner=[f"job-{parent.id}"])
    clock = FakeClock()

    def sleep(s: float) -> None:
        write_status(store.jobs_dir, parent.id, status="error")
        clock.sleep(s)

    asked = ask(store.root, child.id, "need_decision", "?", timeout_s=60, clock=clock, sleep=sleep)
    assert asked.outcome is not None and asked.outcome.kind == "supervisor_gone"
    assert f"job {parent.id} has ended (error)" in asked.describe()


def test_a_message_over_64_kib_is_refused_before_anything_is_written(
    store: JobStore, tmp_path: Path
) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    with pytest.raises(UserError, match="at most 65,536"):
        ask(store.root, child.id, "need_decision", "é" * (MAX_MESSAGE_BYTES // 2 + 1), timeout_s=5)
    assert files.list_seqs(store.job_dir(child.id)) == []
    assert not Inbox(store.root, BOSS).has_pending()
    ask(store.root, child.id, "progress_update", "x" * MAX_MESSAGE_BYTES, timeout_s=5)  # the cap


def test_unknown_and_malformed_ask_ids_and_strangers_are_refused(
    store: JobStore, tmp_path: Path
) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    with pytest.raises(UserError, match="invalid ask id"):
        reply(store.root, "../../etc", "x", by=BOSS, owners=None)
    with pytest.raises(NotFound, match="no ask"):
        reply(store.root, f"ask-{child.id}-7", "x", by=BOSS, owners=None)
    clock = FakeClock()
    seen: list[str] = []

    def sleep(s: float) -> None:
        if not seen:
            (row,), _ = list_asks(store.root, None, include_settled=False)
            seen.append(row.ask.id)
            with pytest.raises(UserError, match="not addressed to you"):
                reply(store.root, row.ask.id, "x", by="claude-other", owners=("claude-other",))
        clock.sleep(s)

    ask(store.root, child.id, "need_decision", "?", timeout_s=1, clock=clock, sleep=sleep)
    assert parse_ask_id(seen[0]) == (child.id, 1)


def _race(root: str, ask_id: str, answer: str, go: multiprocessing.synchronize.Event, out) -> None:
    go.wait()
    try:
        reply(Path(root), ask_id, answer, by=BOSS, owners=None)
        out.put(answer)
    except UserError:
        out.put(None)


def test_a_reply_racing_the_timeout_one_of_them_wins(store: JobStore, tmp_path: Path) -> None:
    child = _job(store, tmp_path, owner=[BOSS])
    for _ in range(20):
        made = files.create(
            store.job_dir(child.id),
            lambda seq: Ask(
                f"ask-{child.id}-{seq}", child.id, "need_decision", "?", 1, 60.0, (BOSS,)
            ),
        )
        seq = parse_ask_id(made.id)[1]
        got: list[object] = []

        def give_up(seq: int = seq, got: list[object] = got) -> None:
            got.append(files.claim(store.job_dir(child.id), seq, AskOutcome("timeout", 2)))

        t = threading.Thread(target=give_up)
        t.start()
        try:
            reply(store.root, made.id, "x", by=BOSS, owners=None)
            replied = True
        except UserError:
            replied = False
        t.join()
        (won_timeout, final) = got[0]  # type: ignore[misc]
        assert replied != won_timeout
        assert final.kind == ("reply" if replied else "timeout")


def test_planted_symlink_and_fifo_in_the_asks_dir(store: JobStore, tmp_path: Path) -> None:
    """asks/ as a symlink is refused (nothing written through it); a FIFO planted as an
    ask's outcome cannot hang a reader; a symlinked ask.json is not followed."""
    child = _job(store, tmp_path, owner=[BOSS])
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, store.job_dir(child.id) / "asks")
    with pytest.raises(StoreError, match="not a directory"):
        ask(store.root, child.id, "progress_update", "x", timeout_s=5)
    assert list(outside.iterdir()) == []
    os.unlink(store.job_dir(child.id) / "asks")
    asked = ask(store.root, child.id, "progress_update", "x", timeout_s=5)
    seq = parse_ask_id(asked.ask.id)[1]
    ask_dir = store.job_dir(child.id) / "asks" / str(seq)
    os.mkfifo(ask_dir / "outcome.json")
    with pytest.raises(StoreError, match="FIFO"):
        files.read_outcome(store.job_dir(child.id), seq)
    rows, problems = list_asks(store.root, None, include_settled=True)
    assert rows == [] and "FIFO" in problems[0]
    (ask_dir / "ask.json").unlink()
    (ask_dir / "ask.json").symlink_to("/etc/passwd")
    with pytest.raises(StoreError, match="symbolic link"):
        files.read_ask(store.job_dir(child.id), seq)


# --- the tools, as every front calls them -------------------------------------------------


def _call(name: str, args: dict, caller) -> object:
    from specialists.native.agent_table import tool_named
    from specialists.native.agent_tools import ToolCall, call_tool

    tool = tool_named(name)
    assert tool is not None
    return call_tool(tool, ToolCall(args, caller, call_id="c1"))


def test_the_tools_offered_and_their_refusals(store: JobStore, tmp_path: Path) -> None:
    from specialists.native.agent_table import offered
    from specialists.native.agent_tools import Caller

    assert "contact_supervisor" not in {t.name for t in offered(thread=False, job=False)}
    assert {"contact_supervisor", "list_asks", "reply_to_ask"} <= {
        t.name for t in offered(thread=False, job=True)
    }
    root = Caller(store.root, BOSS, tmp_path)
    refused = _call("contact_supervisor", {"kind": "need_decision", "message": "?"}, root)
    assert refused.is_error and "you are not one" in refused.text  # type: ignore[attr-defined]
    child = _job(store, tmp_path, owner=[BOSS])
    me = Caller(store.root, f"job-{child.id}", tmp_path, job_id=child.id)
    bad = _call("contact_supervisor", {"kind": "gossip", "message": "?"}, me)
    assert bad.is_error and "must be one of" in bad.text  # type: ignore[attr-defined]
    sent = _call("contact_supervisor", {"kind": "progress_update", "message": "half"}, me)
    assert not sent.is_error and sent.data["ask_id"] == f"ask-{child.id}-1"  # type: ignore[attr-defined]
    listed = _call("list_asks", {"all": True}, root)
    assert f"ask-{child.id}-1" in listed.text and "half" in listed.text  # type: ignore[attr-defined]
    assert "No open asks" in _call("list_asks", {}, root).text  # type: ignore[attr-defined]
    wrong = _call("reply_to_ask", {"ask_id": f"ask-{child.id}-1", "answer": "ok"}, me)
    assert wrong.is_error and "not addressed to you" in wrong.text  # type: ignore[attr-defined]


def test_contact_supervisor_takes_the_seeds_reason_as_well_as_kind(
    store: JobStore, tmp_path: Path
) -> None:
    """Seed 004 writes `contact_supervisor({reason, message})`; `kind` keeps working. Both at
    once, neither, or a reason outside the three is one clear error and writes nothing."""
    from specialists.features.asks.model import ASK_KINDS
    from specialists.native.agent_table import tool_named
    from specialists.native.agent_tools import Caller

    schema = tool_named("contact_supervisor").schema  # type: ignore[union-attr]
    assert schema["required"] == ["message"] and {"reason", "kind"} <= set(schema["properties"])
    for name in ("reason", "kind"):  # the schema's enum is the room's
        assert tuple(schema["properties"][name]["enum"]) == ASK_KINDS, schema["properties"][name]
    child = _job(store, tmp_path, owner=[BOSS])
    me = Caller(store.root, f"job-{child.id}", tmp_path, job_id=child.id)
    by_reason = _call("contact_supervisor", {"reason": "progress_update", "message": "a"}, me)
    assert not by_reason.is_error and by_reason.data["ask_id"] == f"ask-{child.id}-1"  # type: ignore[attr-defined]
    by_kind = _call("contact_supervisor", {"kind": "progress_update", "message": "b"}, me)
    assert not by_kind.is_error and by_kind.data["ask_id"] == f"ask-{child.id}-2"  # type: ignore[attr-defined]
    for args, said in (
        ({"reason": "progress_update", "kind": "progress_update", "message": "c"}, "both"),
        ({"message": "c"}, "neither"),
        ({"reason": "gossip", "message": "c"}, "argument 'reason' must be one of"),
        ({"reason": ["need_decision"], "message": "c"}, "reason"),
    ):
        bad = _call("contact_supervisor", args, me)
        assert bad.is_error and said in bad.text, (args, bad.text)  # type: ignore[attr-defined]
    assert files.list_seqs(store.job_dir(child.id)) == [1, 2]  # the refusals wrote nothing


def test_the_end_hook_finds_an_open_ask_and_skips_a_job_that_never_asked(
    store: JobStore, tmp_path: Path
) -> None:
    """The plugin's hook looks for the asks directory before it loads the asks room: a job
    that asked has its open ask cancelled by it; one that never asked is left alone."""
    from specialists.features.asks.plugin import _cancel_open
    from specialists.supervise.hooks import JobEnd

    def ending(record: JobRecord, seen: list[tuple[str, dict[str, object]]]) -> JobEnd:
        status = store.read_status(record.id)
        assert status is not None
        return JobEnd(
            store, record, status, "done", None, None, 0, 0,
            event=lambda kind, **fields: seen.append((kind, fields)), report=lambda _m: None,
        )  # fmt: skip

    quiet = _job(store, tmp_path, owner=[BOSS])
    seen: list[tuple[str, dict[str, object]]] = []
    _cancel_open(ending(quiet, seen))
    assert seen == [] and not (store.job_dir(quiet.id) / files.ASKS_DIR).exists()
    asker = _job(store, tmp_path, owner=[BOSS])
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        if not seen:
            _cancel_open(ending(asker, seen))
        clock.sleep(seconds)

    waiting = ask(
        store.root, asker.id, "need_decision", "1?", timeout_s=60, clock=clock, sleep=sleep
    )
    assert waiting.outcome is not None and waiting.outcome.kind == "cancelled"
    assert seen == [
        ("ask_cancelled", {"ask": waiting.ask.id, "reason": "the asking job ended done"})
    ]


def test_a_childs_escape_sequences_never_reach_the_terminal(
    store: JobStore, tmp_path: Path
) -> None:
    """A child's message is model text: `specialists asks` shows its ESC, BEL and carriage
    return as visible escapes (a clear screen or a retitled window is not the child's to do)."""
    from specialists.features.asks.render import ask_lines

    child = _job(store, tmp_path, owner=[BOSS])
    ask(store.root, child.id, "progress_update", "A\x1b[2J\x1b]0;pwned\x07\rB\nC", timeout_s=5)
    (row,), _ = list_asks(store.root, None, include_settled=True)
    shown = ask_lines(row, full=True)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert "A\\e[2J\\e]0;pwned\\x07\\x0dB\nC" in shown  # what it was, kept, and its newline


def test_an_ask_of_a_job_whose_supervisor_died_is_listed_abandoned_not_open(
    store: JobStore, tmp_path: Path
) -> None:
    """Its status still says running (nobody recorded the crash); the listing must not offer
    as open an ask that reply then refuses as abandoned."""
    child = _job(store, tmp_path, owner=[BOSS])
    asked = ask(store.root, child.id, "progress_update", "x", timeout_s=5)
    files.create(
        store.job_dir(child.id),
        lambda seq: Ask(f"ask-{child.id}-{seq}", child.id, "need_decision", "?", 1, 60.0, [BOSS]),
    )
    assert [r.state for r in list_asks(store.root, None, include_settled=False)[0]] == ["open"]
    write_status(
        store.jobs_dir, child.id, status="running", supervisor_pid=999_999_999,
        supervisor_start_time=1,
    )  # fmt: skip
    assert list_asks(store.root, None, include_settled=False)[0] == []
    rows, _ = list_asks(store.root, None, include_settled=True)
    assert {(r.ask.id, r.state) for r in rows} == {
        (asked.ask.id, "progress"), (f"ask-{child.id}-2", "abandoned")
    }  # fmt: skip
    with pytest.raises(UserError, match="abandoned"):
        reply(store.root, f"ask-{child.id}-2", "late", by=BOSS, owners=None)


def test_a_models_listing_is_bounded_to_the_newest_asks(store: JobStore, tmp_path: Path) -> None:
    """A long history of asks (each message up to 64 KiB) never floods a model's context:
    list_asks gives it the newest MAX_LISTED and says how many it left out; a person at the
    CLI still sees them all."""
    from specialists.features.asks.verbs import MAX_LISTED
    from specialists.native.agent_tools import Caller

    child = _job(store, tmp_path, owner=[BOSS])
    for n in range(MAX_LISTED + 3):
        ask(store.root, child.id, "progress_update", f"step {n}", timeout_s=5)
    listed = _call("list_asks", {"all": True}, Caller(store.root, BOSS, tmp_path))
    assert not listed.is_error  # type: ignore[attr-defined]
    data = listed.data  # type: ignore[attr-defined]
    assert len(data["asks"]) == MAX_LISTED and data["more"] == 3
    assert data["asks"][-1]["ask_id"] == f"ask-{child.id}-{MAX_LISTED + 3}"
    assert "3 older asks not shown" in listed.text and "step 0\n" not in listed.text  # type: ignore[attr-defined]
    person = Caller(store.root, BOSS, tmp_path, person=True)
    assert len(_call("list_asks", {"all": True}, person).data["asks"]) == MAX_LISTED + 3  # type: ignore[attr-defined]
    same_ms = _job(store, tmp_path, owner=[BOSS])  # ask 10 is newer than ask 9, not older
    for _ in range(MAX_LISTED + 1):
        files.create(
            store.job_dir(same_ms.id),
            lambda seq: Ask(
                f"ask-{same_ms.id}-{seq}", same_ms.id, "progress_update", "x", 1, 0, []
            ),
        )
    rows, _ = list_asks(store.root, None, include_settled=True)
    seqs = [parse_ask_id(r.ask.id)[1] for r in rows if r.ask.job_id == same_ms.id]
    assert seqs == list(range(1, MAX_LISTED + 2))


def test_a_job_directory_that_is_a_link_is_not_followed(store: JobStore, tmp_path: Path) -> None:
    """jobs/<id> planted as a link to a directory outside the store, holding an ask that
    names itself rightly: a reply is refused as unknown and writes nothing there (the store
    lists no such job either: list_ids skips links)."""
    outside = tmp_path / "outside"
    job_id = "deadbeef"
    files.create(
        outside,
        lambda seq: Ask(f"ask-{job_id}-{seq}", job_id, "need_decision", "?", 1, 60.0, [BOSS]),
    )
    os.symlink(outside, store.job_dir(job_id))
    with pytest.raises(NotFound, match=f"no ask ask-{job_id}-1"):
        reply(store.root, f"ask-{job_id}-1", "x", by=BOSS, owners=None)
    assert sorted(os.listdir(outside / "asks" / "1")) == ["ask.json"]
    with pytest.raises(StoreError, match="symbolic link"):
        files.create(store.job_dir(job_id), lambda seq: Ask(f"ask-{job_id}-{seq}", job_id,
                     "progress_update", "x", 1, 0.0, [BOSS]))  # fmt: skip
    with pytest.raises(StoreError, match="not followed"):
        files.list_seqs(store.job_dir(job_id))
    assert sorted(os.listdir(outside / "asks")) == ["1"]
