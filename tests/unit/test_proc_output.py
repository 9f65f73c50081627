"""A proc job's output and its account of the end, under a hostile world: a full disk, the
log cap, planted or damaged proc.json files, and a job_exit posted twice."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from specialists.events.inbox import Inbox
from specialists.features.procs.exit import SUMMARY_FILE, ExitSummary, read_summary, write_summary
from specialists.features.procs.feed import OutputFeed
from specialists.features.procs.jobs import proc_record
from specialists.features.procs.watch import WatchBatcher, compile_watch
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.supervise.launch import create_job
from tests.support.jobs import job_end
from tests.support.procs import OWNER, proc_options


def batcher(*patterns: str) -> WatchBatcher:
    return WatchBatcher(compile_watch(list(patterns)), batch_lines=1)


def test_the_log_cap_keeps_the_first_bytes_and_counts_the_rest(tmp_path: Path) -> None:
    feed = OutputFeed(tmp_path / "output.log", batcher(), log_cap=10)
    feed.add(b"0123456789abc\n", 0)
    feed.add(b"more\n", 0)
    feed.finish(0)
    feed.close()
    assert (tmp_path / "output.log").read_bytes() == b"0123456789"
    assert feed.log_problem == "output.log reached its cap of 10 bytes"
    assert (feed.lines, feed.bytes, feed.logged) == (2, 19, 10)


def test_a_last_line_without_newline_counts_once_with_or_without_watch(tmp_path: Path) -> None:
    for patterns in ((), ("x",)):
        feed = OutputFeed(tmp_path / f"log{len(patterns)}", batcher(*patterns))
        feed.add(b"a\nb", 0)
        feed.add(b"c", 0)
        feed.finish(0)
        feed.close()
        assert feed.lines == 2, patterns


def test_a_planted_or_damaged_proc_json_is_no_summary(tmp_path: Path) -> None:
    """A FIFO (reading it must not block), a symlink, garbage, an unknown kind: all None."""
    target = tmp_path / "elsewhere.json"
    write_summary(tmp_path, ExitSummary(kind="exited", exit_code=0))
    target.write_bytes((tmp_path / SUMMARY_FILE).read_bytes())
    assert read_summary(tmp_path) == ExitSummary(kind="exited", exit_code=0)
    for plant in ("fifo", "link", "garbage", "kind"):
        (tmp_path / SUMMARY_FILE).unlink()
        if plant == "fifo":
            os.mkfifo(tmp_path / SUMMARY_FILE)
        elif plant == "link":
            (tmp_path / SUMMARY_FILE).symlink_to(target)
        elif plant == "garbage":
            (tmp_path / SUMMARY_FILE).write_bytes(b"\x00{not json")
        else:
            (tmp_path / SUMMARY_FILE).write_text('{"kind": "vanished"}')
        assert read_summary(tmp_path) is None, plant


def test_job_exit_posted_by_the_supervisor_and_again_by_recovery_is_delivered_once(
    tmp_path: Path,
) -> None:
    """A supervisor killed between posting job_exit and writing its final status: recovery
    posts it again with the same id; the owner reads it once."""
    from specialists.features.procs.exit import render

    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = create_job(store, proc_record(proc_options("echo hi", tmp_path)))
    lock.release()
    job_dir = store.job_dir(record.id)
    (job_dir / "output.log").write_bytes(b"hi\n")
    write_summary(job_dir, ExitSummary(kind="exited", exit_code=0, lines=1, bytes=3, logged=3))
    status = store.read_status(record.id) or JobStatus(id=record.id, specialist="bg")
    (first,) = render(job_end(store, record, "done", status=status))
    (again,) = render(job_end(store, record, "error", status=status, recovered=True))
    first_event, again_event = first.post(store.root), again.post(store.root)
    assert first_event.id == again_event.id and first_event.kind == "job_exit"
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.body.startswith(f"job {record.id} (echo hi) exited with code 0")
    assert event.body.endswith("--- last 40 lines ---\nhi")


@pytest.mark.parametrize("plant", ["link", "dir", "fifo"])
def test_a_log_replaced_by_its_command_still_gets_its_one_job_exit(
    tmp_path: Path, plant: str
) -> None:
    """The command can reach its job directory ($SPECIALISTS_JOB_DIR) and put a symlink, a
    directory or a FIFO where output.log was. Rendering the job_exit raised then, so the owner,
    told never to poll, never heard that the job ended; bg_output raised OSError for a link."""
    from specialists.base.errors import UserError
    from specialists.features.procs.exit import render
    from specialists.features.procs.output import read_since, read_tail

    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = create_job(store, proc_record(proc_options("echo hi", tmp_path)))
    lock.release()
    job_dir = store.job_dir(record.id)
    log = job_dir / "output.log"
    if plant == "link":
        (tmp_path / "secret").write_text("not the log\n")
        log.symlink_to(tmp_path / "secret")
    elif plant == "dir":
        log.mkdir()
    else:
        os.mkfifo(log)
    for read in (lambda: read_tail(log, 5), lambda: read_since(log, 0)):
        with pytest.raises(UserError, match=r"cannot be read|not a regular file"):
            read()
    write_summary(job_dir, ExitSummary(kind="exited", exit_code=0, lines=1, bytes=3, logged=3))
    status = store.read_status(record.id) or JobStatus(id=record.id, specialist="bg")
    (told,) = render(job_end(store, record, "done", status=status))
    told.post(store.root)
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.kind == "job_exit" and event.details["status"] == "exited"
    assert f"{log} cannot be read" in event.body or f"{log} is not a regular file" in event.body
    assert "not the log" not in event.body


def test_a_command_that_never_started_still_gets_its_one_job_exit(tmp_path: Path) -> None:
    """The runner raised before the command ran (no proc.json): the supervisor's ending posts
    an `error` job_exit with the reason, so the owner is never left waiting."""
    from specialists.features.procs.exit import render

    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = create_job(store, proc_record(proc_options("echo hi", tmp_path)))
    lock.release()
    status = store.read_status(record.id) or JobStatus(id=record.id, specialist="bg")
    why = "the command could not start: cwd vanished"
    (told,) = render(job_end(store, record, "error", error=why, status=status))
    told.post(store.root)
    (event,) = Inbox(store.root, OWNER).pending().events
    assert event.details["status"] == "error"
    assert f"job {record.id} (echo hi) failed" in event.body and why in event.body
    assert event.body.endswith("(no output)")


def test_a_proc_job_end_told_is_its_job_exit_and_no_other_notice(tmp_path: Path) -> None:
    """The one teller: a proc job whose owner is a job hears of its end once, as job_exit
    (its rendering), never also as the generic end notice."""
    from specialists.supervise import news

    store = JobStore(tmp_path / ".specialists", news=None)
    options = proc_options("echo hi", tmp_path, owner="job-0123abcd")
    record, lock = create_job(store, proc_record(options))
    lock.release()
    write_summary(store.job_dir(record.id), ExitSummary(kind="exited", exit_code=0))
    assert news.tell(job_end(store, record, "done")) == []
    assert news.tell(job_end(store, record, "error", recovered=True)) == []  # told twice
    (event,) = Inbox(store.root, "job-0123abcd").pending().events
    assert event.kind == "job_exit" and event.details["status"] == "exited"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bg_output_shows_escape_sequences_on_a_terminal_and_keeps_them_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command's output is untrusted: `bg output` at a terminal must not set its title,
    write its clipboard (OSC 52) or clear it; piped, the exact text goes through."""
    from specialists.fronts.cli.cmd_bg import TEXT

    text = "ok\n\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b]0;title\x07done\n"
    data = SimpleNamespace(
        to_dict=lambda: {"id": "1a2b", "state": "exited 0", "size": 9, "next_offset": 9,
                         "text": text}
    )  # fmt: skip
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert TEXT["output"](data, SimpleNamespace()) == 0
    assert "\x1b" not in terminal.getvalue() and "\x07" not in terminal.getvalue()
    assert terminal.getvalue() == "ok\n\\e]52;c;ZWNobyBwd25lZA==\\x07\\e[2J\\e]0;title\\x07done\n"
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    TEXT["output"](data, SimpleNamespace())
    assert piped.getvalue() == text
