"""The supervisor loop never dies and never hangs (issue 7 item 5).

Whatever a bad control request, a damaged job file or a broken runner does, a failing step
is logged, becomes a notice event, and the job still ends through one `_finish`. A
supervisor stuck in a step still answers SIGTERM promptly and ends `cancelled` itself.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from specialists.runners.base import Activity, RunFinished
from specialists.runners.testing import Call
from specialists.supervise import control_inbox
from specialists.supervise import supervisor as supervisor_module
from specialists.supervise.launch import spawn_supervisor
from tests.support.jobs import new_job
from tests.support.supervising import Harness


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def notices(h: Harness) -> list[str]:
    return [str(e.get("message")) for e in h.events() if e["event"] == "notice"]


def test_an_inbox_that_fails_on_every_tick_is_reported_once_and_the_job_ends(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(job_dir: Path, act: object) -> list[str]:
        raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")

    monkeypatch.setattr(control_inbox, "read_requests", broken)
    status = h.run(h.runner([Activity("thinking"), 2.0, RunFinished(text="fine")]))
    assert status.status == "done" and h.result() == "fine"
    failures = [n for n in notices(h) if n.startswith("inbox failed")]
    assert failures == ["inbox failed: RecursionError: maximum recursion depth exceeded "
                        "while decoding a JSON object"]  # fmt: skip
    assert h.kinds()[-1] == "done"


def test_a_signal_still_stops_a_job_whose_inbox_fails_on_every_tick(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop request cannot be read, but SIGTERM does not depend on the inbox."""

    def broken(job_dir: Path, act: object) -> list[str]:
        raise OSError(5, "Input/output error")

    def sigterm() -> None:
        assert h.supervisor is not None
        h.supervisor.guard.signal = signal.SIGTERM  # what the handler records

    monkeypatch.setattr(control_inbox, "read_requests", broken)
    runner = h.runner([Activity("thinking"), Call(sigterm), 1e9])
    status = h.run(runner)
    assert status.status == "cancelled"
    assert runner.commands[0].kind == "abort"
    assert h.kinds()[-2:] == ["stopping", "cancelled"]
    assert h.clock.slept < 10  # the stop ladder, not the scripted forever


def test_a_request_that_breaks_its_handler_does_not_stop_the_next_one(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specialists.supervise import requests

    real = requests.decide

    def decide(kind: str, message: str, situation: requests.Situation) -> requests.Decision:
        if message == "poison":
            raise OverflowError("int too large to convert")
        return real(kind, message, situation)

    monkeypatch.setattr(control_inbox, "decide", decide)
    script = [h.post("steer", "poison"), h.post("steer", "fine"), 0.2, RunFinished(text="ok")]
    runner = h.runner(script)
    status = h.run(runner)
    assert status.status == "done"
    assert [c.kind for c in runner.sent("steer")] == ["steer"]
    assert any(n.startswith("request failed: OverflowError") for n in notices(h))


def test_a_runner_whose_poll_raises_is_killed_and_the_job_ends_in_error(h: Harness) -> None:
    runner = h.runner([Activity("thinking")])
    calls = 0
    real_poll = runner.poll

    def poll(timeout: float) -> list[object]:
        nonlocal calls
        calls += 1
        if calls >= 2:
            raise ValueError("agent stream is corrupt")
        return real_poll(timeout)  # type: ignore[return-value]

    runner.poll = poll  # type: ignore[method-assign]
    status = h.run(runner)
    assert (status.status, status.error) == ("error", "bug: the scripted runner failed")
    assert "runner failed: ValueError: agent stream is corrupt" in notices(h)
    assert h.kinds().count("error") == 1  # one end, through _finish


def test_a_damaged_status_json_at_start_is_replaced_and_said(h: Harness) -> None:
    record, lock = new_job(h.store, h.tmp_path)
    (h.store.job_dir(record.id) / "status.json").write_text('{"id": 3, "specialist": []}')
    h.job_id = record.id
    runner = h.runner([RunFinished(text="ok")])
    sup = supervisor_module.Supervisor(h.store, record, runner, clock=h.clock, handle_signals=False)
    try:
        status = sup.run()
    finally:
        lock.release()
    assert status.status == "done"
    assert any(n.startswith("status.json was unreadable") for n in notices(h))


def test_a_planted_result_txt_is_moved_aside_and_the_answer_kept(h: Harness) -> None:
    """A result.txt put there by someone else neither ends the job in error nor costs the
    answer: it is moved aside (kept) and reported, and the job's own answer is written."""
    runner = h.runner([RunFinished(text="mine")])
    record, lock = new_job(h.store, h.tmp_path)
    h.job_id = record.id
    (h.store.job_dir(record.id) / "result.txt").write_text("planted")
    sup = supervisor_module.Supervisor(h.store, record, runner, clock=h.clock, handle_signals=False)
    try:
        status = sup.run()
    finally:
        lock.release()
    assert status.status == "done", status.error
    assert h.store.read_result(record.id) == "mine"
    on_disk = h.store.read_status(record.id)
    assert on_disk is not None and on_disk.status == "done"
    aside = [p for p in h.store.job_dir(record.id).iterdir() if ".displaced-" in p.name]
    assert [p.read_text() for p in aside] == ["planted"]
    assert any("result.txt" in n for n in notices(h))


def test_failing_post_scripts_and_bead_never_keep_the_job_from_ending(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specialists.supervise import ending

    def explode(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ending, "run_post_scripts", explode)
    status = h.run(h.runner([RunFinished(text="ok")]))
    assert status.status == "done" and h.result() == "ok"
    assert any(n.startswith("post-scripts failed: PermissionError") for n in notices(h))


# --- a real supervisor process, stuck ---------------------------------------------------------


def _detached_job(h: Harness, **record: object) -> str:
    rec, lock = new_job(h.store, h.tmp_path, runner="command", **record)
    spawn_supervisor(h.store, rec, lock)
    return rec.id


def _final_event(h: Harness, job_id: str) -> dict[str, object]:
    return h.store.read_events(job_id)[-1]


def _state(h: Harness, job_id: str) -> str:
    status = h.store.read_status(job_id)
    return status.status if status else "being created"


ENDED = ("done", "error", "cancelled")


class _BrokenObserver:
    """A foreground observer that fails on what it is shown."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def on_text(self, text: str) -> None:
        raise UnicodeEncodeError("ascii", text, 0, 1, "the terminal cannot show it")

    def on_event(self, event: dict[str, object]) -> None:
        if event.get("event") == self.fail_on:
            raise BrokenPipeError(32, "Broken pipe")


def _run_observed(h: Harness, observer: _BrokenObserver, script: list[object]) -> str:
    record, lock = new_job(h.store, h.tmp_path)
    h.job_id = record.id
    sup = supervisor_module.Supervisor(
        h.store,
        record,
        h.runner(script),  # type: ignore[arg-type]
        observer=observer,
        clock=h.clock,
        sleep=h.clock.sleep,
        handle_signals=False,
    )
    try:
        return sup.run().status
    finally:
        lock.release()


def test_a_failing_foreground_display_is_dropped_and_the_job_goes_on(h: Harness) -> None:
    from specialists.runners.base import AnswerDelta

    script = [AnswerDelta("é"), Activity("thinking"), RunFinished(text="ok")]
    assert _run_observed(h, _BrokenObserver(fail_on="thinking"), script) == "done"
    assert h.result() == "ok"
    [dropped] = [n for n in notices(h) if "foreground display failed" in n]
    assert "UnicodeEncodeError" in dropped


def test_an_event_whose_handling_fails_is_a_notice_and_the_run_goes_on(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = supervisor_module.note_activity

    def note(st: object, ev: Activity) -> None:
        if ev.event == "thinking":
            raise KeyError("current_tool")
        real(st, ev)  # type: ignore[arg-type]

    monkeypatch.setattr(supervisor_module, "note_activity", note)
    status = h.run(h.runner([Activity("thinking"), Activity("text"), RunFinished(text="ok")]))
    assert status.status == "done" and h.result() == "ok"
    assert "event failed: KeyError: 'current_tool'" in notices(h)


def test_an_answer_whose_handling_fails_still_ends_the_job_with_it(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing a keep-alive answer failed half-way through handling it: the agent is killed
    (nothing else would end the job) and the answer already taken is the result."""

    from specialists.store.writer import JobWriter

    def unwritable(self: object, number: int, text: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(JobWriter, "write_answer", unwritable)
    status = h.run(h.runner([RunFinished(text="ok"), 30.0]), keep_alive=True)
    assert status.status == "done" and h.result() == "ok"
    assert any(n.startswith("event failed: PermissionError") for n in notices(h))
