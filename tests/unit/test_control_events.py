"""Control requests as events addressed to a job (store/control.py): in the job's inbox, read
by its supervisor through a cursor of its own, acted on once per request id, never delivered
to its agent. A real kill -9 and senders in many processes: test_control_processes.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.events.inbox import COMPACT_BYTES, Inbox
from specialists.events.model import EventSource, event_from_dict
from specialists.store.control import (
    ControlRequest,
    post_request,
    read_requests,
    stop_pending,
)
from specialists.store.jobs import JobStore
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job, take_requests


class Killed(BaseException):
    """What a kill -9 does to the supervisor's stack: nothing after it runs."""


@pytest.fixture
def job(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = new_job(store, tmp_path)
    yield store, record.id
    lock.release()


def inbox_path(store: JobStore, job_id: str) -> Path:
    return store.root / "owners" / f"job-{job_id}" / "events.jsonl"


def test_a_request_is_an_event_for_the_supervisor_never_for_the_agent(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    steer = post_request(store.job_dir(job_id), "steer", "look left")
    assert not (store.job_dir(job_id) / "control").exists()  # no 0.1.0 file written
    (line,) = inbox_path(store, job_id).read_text().splitlines()
    event, bad = event_from_dict(json.loads(line))
    assert bad is None and event is not None  # the one event format
    assert event.kind == "control" and event.owner == f"job-{job_id}" and event.body == "look left"
    agent = Inbox(store.root, f"job-{job_id}")
    assert not agent.has_pending() and agent.take().events == ()
    assert not stop_pending(store.job_dir(job_id))
    stop = post_request(store.job_dir(job_id), "stop")
    assert stop_pending(store.job_dir(job_id))  # read, not taken
    assert stop_pending(store.job_dir(job_id))
    requests, problems = take_requests(store.job_dir(job_id))
    assert [(r.id, r.kind, r.message) for r in requests] == [
        (steer.id, "steer", "look left"),
        (stop.id, "stop", ""),
    ]
    assert problems == [] and not stop_pending(store.job_dir(job_id))
    assert take_requests(store.job_dir(job_id)) == ([], [])


def test_a_request_written_twice_is_acted_on_once(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    post_request(store.job_dir(job_id), "follow_up", "again")
    path = inbox_path(store, job_id)
    line = path.read_text()
    assert len(take_requests(store.job_dir(job_id))[0]) == 1
    with path.open("a") as f:  # a sender that retried after its first append
        f.write(line)
    assert take_requests(store.job_dir(job_id)) == ([], [])
    with path.open("a") as f:  # twice within one read
        f.write(line.replace('"request":"', '"request":"b').replace('"id":"', '"id":"b') * 2)
    assert len(take_requests(store.job_dir(job_id))[0]) == 1


def test_a_supervisor_killed_between_acting_and_moving_on_is_not_acted_on_again(job) -> None:  # type: ignore[no-untyped-def]
    """Its ack is in the job's log: its successor finds it there. A supervisor killed before
    it acted (no ack) leaves the request to its successor."""
    store, job_id = job
    first = post_request(store.job_dir(job_id), "steer", "one")
    second = post_request(store.job_dir(job_id), "steer", "two")
    writer = JobWriter(store, job_id)
    acted: list[str] = []

    def act_then_die(request: ControlRequest) -> None:
        acted.append(request.id)
        writer.append_event("steer_ack", request=request.id, delivered=True)
        raise Killed

    with pytest.raises(Killed):
        read_requests(store.job_dir(job_id), act_then_die)

    def die_before_acting(request: ControlRequest) -> None:
        raise Killed

    with pytest.raises(Killed):  # the successor dies too, before it acts on `second`
        read_requests(store.job_dir(job_id), die_before_acting)
    assert stop_pending(store.job_dir(job_id)) is False
    requests, problems = take_requests(store.job_dir(job_id))
    assert acted == [first.id] and [r.id for r in requests] == [second.id] and problems == []
    writer.close()


def test_a_damaged_cursor_acts_again_on_no_request_the_job_answered(job) -> None:  # type: ignore[no-untyped-def]
    """control.json damaged (a torn write, a person's edit): the inbox is read from its start,
    but a request whose answer is in the job's log is not acted on a second time."""
    store, job_id = job
    first = post_request(store.job_dir(job_id), "steer", "one")
    writer = JobWriter(store, job_id)

    def act(request: ControlRequest) -> None:
        writer.append_event("steer_ack", request=request.id, delivered=True)

    assert read_requests(store.job_dir(job_id), act) == []
    cursor = store.root / "owners" / f"job-{job_id}" / "control.json"
    cursor.write_text('{"offset": ')
    second = post_request(store.job_dir(job_id), "steer", "two")
    requests, _ = take_requests(store.job_dir(job_id))
    assert [r.id for r in requests] == [second.id] and first.id != second.id
    writer.close()


def test_senders_at_once_lose_nothing_and_keep_their_order(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    sent: dict[int, list[str]] = {}

    def send(n: int) -> None:
        sent[n] = [post_request(store.job_dir(job_id), "steer", f"{n}-{i}").id for i in range(30)]

    threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    got: list[str] = []
    while any(t.is_alive() for t in threads):  # read while they write
        got += [r.id for r in take_requests(store.job_dir(job_id))[0]]
    for t in threads:
        t.join()
    # A look takes at most MAX_BATCH (100) of the 120: a slow reader drains the rest in more.
    while batch := [r.id for r in take_requests(store.job_dir(job_id))[0]]:
        got += batch
    assert sorted(got) == sorted(i for ids in sent.values() for i in ids)  # each once
    for ids in sent.values():
        assert [i for i in got if i in ids] == ids


def test_a_torn_last_line_is_reported_once_and_the_next_request_is_read(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    path = inbox_path(store, job_id)
    post_request(store.job_dir(job_id), "steer", "before")
    assert len(take_requests(store.job_dir(job_id))[0]) == 1
    with path.open("a") as f:
        f.write('{"id":"x:control:1","kind":"control","details":{"requ')  # a sender died here
    assert take_requests(store.job_dir(job_id)) == ([], [])  # may still be being written
    after = post_request(store.job_dir(job_id), "stop")
    requests, problems = take_requests(store.job_dir(job_id))
    assert [r.id for r in requests] == [after.id]
    assert len(problems) == 1 and "JSON" in problems[0]
    assert take_requests(store.job_dir(job_id)) == ([], [])


def test_a_huge_request_is_kept_whole_or_refused_whole(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    text = 'é\n"' * 150_000  # 900 kB of text that JSON escapes
    post_request(store.job_dir(job_id), "steer", text)
    with pytest.raises(UserError, match="too long"):
        post_request(store.job_dir(job_id), "steer", "\x01" * 200_000)  # 1.2 MB escaped
    (request,) = take_requests(store.job_dir(job_id))[0]
    assert request.message == text


def test_the_inbox_is_emptied_only_when_no_request_waits(job) -> None:  # type: ignore[no-untyped-def]
    store, job_id = job
    owner = f"job-{job_id}"
    agent = Inbox(store.root, owner)
    body = "x" * 3000
    n = COMPACT_BYTES // 3000 + 2
    for seq in range(1, n):
        agent.append("notice", EventSource("t"), body, source_id="s", seq=seq)
    request = post_request(store.job_dir(job_id), "steer", "wait for me")
    assert len(agent.take(max_events=n).events) == n - 1
    assert agent.events_path.stat().st_size >= COMPACT_BYTES  # not emptied: a request waits
    assert [r.id for r in take_requests(store.job_dir(job_id))[0]] == [request.id]
    agent.append("notice", EventSource("t"), body, source_id="s", seq=n)
    assert len(agent.take().events) == 1
    assert agent.events_path.stat().st_size == 0  # emptied, the supervisor's cursor rewound
    later = post_request(store.job_dir(job_id), "stop")
    assert [r.id for r in take_requests(store.job_dir(job_id))[0]] == [later.id]
