"""The supervisor looks at its control inbox every step, which is every batch of the agent's
output; a full look (the cursor read, the paths built) cost most of a streaming job's CPU. It
now reads the inbox only when the inbox's mark (store/control.py `InboxMark`) moved since a
look that took everything: these tests hold that it still takes every request, at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.runners.base import Activity, AnswerDelta, RunFinished
from specialists.store import control
from specialists.store.control import MAX_BATCH, InboxMark, post_request
from specialists.supervise import control_inbox
from tests.support.supervising import Harness


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the supervisor's full looks at its inbox."""
    counted: list[int] = []
    real = control.read_requests

    def counting(job_dir, act):  # type: ignore[no-untyped-def]
        counted.append(1)
        return real(job_dir, act)

    monkeypatch.setattr(control_inbox, "read_requests", counting)
    return counted


def test_a_stream_with_no_request_costs_one_full_look_not_one_per_step(
    tmp_path: Path, looks: list[int]
) -> None:
    h = Harness(tmp_path)
    deltas = [AnswerDelta("word ") for _ in range(500)]
    status = h.run(h.runner([Activity("text"), *deltas, RunFinished(text="word " * 500)]))
    assert status.status == "done"
    assert len(looks) <= 3, len(looks)  # the first look, and one after the job's own writes


def test_a_request_in_the_middle_of_a_stream_is_still_taken_at_once(
    tmp_path: Path, looks: list[int]
) -> None:
    h = Harness(tmp_path)
    before = [AnswerDelta("a ") for _ in range(200)]
    after = [AnswerDelta("b ") for _ in range(200)]
    script = [Activity("text"), *before, h.post("steer", "look again"), *after]
    h.run(h.runner([*script, RunFinished(text="done")]))
    kinds = h.kinds()
    assert kinds.count("steer_ack") == 1
    (ack,) = h.acks("steer")
    assert ack["delivered"] is True
    assert len(looks) <= 6, len(looks)


def test_more_requests_than_one_look_takes_are_all_taken_with_nothing_new_arriving(
    tmp_path: Path,
) -> None:
    """A look takes at most MAX_BATCH: after a full batch the mark is not taken as settled,
    so the rest are taken by the next steps though the inbox does not change again."""
    h = Harness(tmp_path)
    h.run(h.runner([1.0, RunFinished(text="first")]), pending=["steer"] * (MAX_BATCH + 30))
    assert len(h.acks("steer")) == MAX_BATCH + 30


def test_the_mark_moves_on_an_append_and_on_an_emptied_inbox(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.run(h.runner([RunFinished(text="x")]))
    job_dir = h.store.job_dir(h.job_id)
    mark = InboxMark(job_dir)
    empty = mark.now()
    post_request(job_dir, "steer", "one")
    one = mark.now()
    assert one is not None and one != empty and mark.now() == one  # steady while nothing comes
    post_request(job_dir, "steer", "two")
    two = mark.now()
    assert two not in (one, empty)
    log = Path(mark.log)
    same = log.read_bytes()
    log.unlink()  # emptied and refilled to the same size, as a new file (events/inbox.py)
    log.write_bytes(same)
    assert mark.now() not in (two, None)
    (job_dir / "control").mkdir()  # 0.1.0's request directory: always looked at
    assert mark.now() is None
