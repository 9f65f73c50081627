"""`status`, `result` and `feed` read without argparse and without booting the features
(fronts/cli/commands.py `plain_args`, store/news.py `boot`), and say exactly what they said
through argparse; the finished-jobs index they read stays safe against a hostile world."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path

import pytest

from specialists.events import notices
from specialists.fronts.cli import main as cli_main
from specialists.fronts.cli.commands import READS, plain_args
from specialists.store import index
from specialists.store.jobs import JobStore
from specialists.store.paths import state_dir
from specialists.store.records import JobStatus
from specialists.store.view import overview
from specialists.store.writer import JobWriter
from tests.support.jobs import echo_project, new_job
from tests.support.plain import plain_forms_read_as_argparse

pytestmark = pytest.mark.timeout(60)

NOW_MS = 1_796_000_000_000
# Words each read verb may be given: its flags, a job, and what only argparse reads.
WORDS = {
    "status": ["--json", "--all", "-a", "0000abcd", "--js", "-j", "--job", "--", "-x y", "--help"],
    "result": ["0000abcd", "--raw", "--json", "--wait", "-w", "--timeout", "1s", "-wr", "x"],
    "feed": [
        "0000abcd",
        "--tree",
        "--follow",
        "-f",
        "--json",
        "--from",
        "3",
        "-x",
        "-j",
        "--job",
        "",
    ],
}


def _forms(verb: str) -> list[list[str]]:
    words = WORDS[verb]
    forms = [[verb, *c] for n in range(4) for c in itertools.permutations(words, n)]
    return [*forms, [verb, "--json", "--json"], ["-a", verb], [verb, "a", "b"]]


@pytest.mark.parametrize("verb", sorted(READS))
def test_a_plain_form_reads_as_argparse_reads_it(verb, capsys):
    """Every form read plainly gives argparse's namespace; every form argparse refuses (or
    answers itself, as --help) is left to it."""
    plain_count = plain_forms_read_as_argparse(verb, _forms(verb))
    capsys.readouterr()
    assert plain_count > 20  # the plain forms are many: status --json, result ID --raw, ...


# What a read verb's plain form takes that is no argument of its op: how it is shown
# (`--json`, `--raw`, every finished job), and `status --job JOB`, the same as JOB.
SHOWN_ONLY = {"status": {"json", "all", "job"}, "result": {"json", "raw"}}


@pytest.mark.parametrize("verb", sorted(SHOWN_ONLY))
def test_a_read_verbs_plain_form_takes_what_its_op_takes(verb):
    """`status` and `result` call the ops the MCP tools are generated from (fronts/jobs.py):
    the plain form's job is the op's positional, every other value a person can give is one
    of its options, and nothing a person may give is left out."""
    from importlib import import_module

    from specialists.base.opschema import signature
    from specialists.fronts import jobs

    plain = import_module(f"specialists.fronts.cli.cmd_{verb}").PLAIN
    params = signature(getattr(jobs, verb)).params
    assert [p.name for p in params if p.positional] == [plain.job]
    options = {p.name for p in params if not p.positional and not p.cli.hidden}
    given = (set(plain.flags.values()) | set(plain.defaults)) - {plain.job}
    assert given - SHOWN_ONLY[verb] == options
    hidden = {p.name for p in params if p.cli.hidden}
    assert not hidden & given  # a model's argument (status `threads`) is no person's flag


def test_the_read_verbs_have_no_noun_of_the_operations_table():
    from specialists.base import ops

    assert not set(ops.registered()) & READS  # so their parser needs no feature booted


def _store(tmp: Path) -> tuple[JobStore, list[object]]:
    """Active, finished, workflow, keep-alive, usage-limit and mission jobs, with events."""
    root = echo_project()
    store = JobStore(state_dir(root), news=notices)
    held = []
    rows = [
        dict(status="running", title="Review the change", current_event="tool_execution",
             current_tool="bash(ls -la)", progress={"total": 4, "done": 1, "running": 2}),
        dict(status="running", workflow_key="review-1", current_event="text",
             last_text="reading the diff", tokens={"input": 900, "output": 70}, cost_usd=0.01),
        dict(status="waiting", keep_alive=True, title="Answer questions"),
        dict(status="running", current_event="usage_limit", paused_until_ms=NOW_MS + 3_600_000),
        dict(status="done", title="Mission step: ship it", elapsed_s=61.5),
        dict(status="error", error="replay: the model refused the key", elapsed_s=3.0),
        dict(status="cancelled", workflow_key="review-2", elapsed_s=1.0,
             ceilings=[{"of": "0000beef", "tokens": 10}]),
    ]  # fmt: skip
    for n, fields in enumerate(rows):
        record, lock = new_job(store, tmp, specialist="echo")
        status = JobStatus(
            id=record.id,
            specialist="echo",
            model="mock/mock-model",
            runner="command",
            started_at_ms=NOW_MS - (n + 1) * 60_000,
            supervisor_pid=os.getpid(),
            **fields,
        )
        writer = JobWriter(store, record.id)
        writer.append_event("run_start")
        writer.append_event("text", text=f"hello from job {n}")
        if not status.active:
            store.job_dir(record.id).joinpath("result.txt").write_text(f"answer {n}\n")
            writer.append_event(status.status)
        writer.write_status(status)
        writer.close()
        if status.active:
            held.append(lock)  # alive: its lock is held, as by its supervisor
        else:
            lock.release()
    return store, held


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = cli_main.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_read_verbs_say_the_same_through_either_parser(tmp_path, capsys, monkeypatch):
    store, _held = _store(tmp_path)
    monkeypatch.setattr(time, "time", lambda: NOW_MS / 1000)
    ids = sorted(store.list_ids())
    forms = [["status"], ["status", "--json"], ["status", "--all"], ["feed"], ["feed", "--json"]]
    for job_id in ids:
        forms += [["status", job_id], ["result", job_id], ["result", job_id, "--json"]]
        forms += [["feed", job_id], ["result", job_id, "--raw"], ["feed", "--job", job_id]]
        forms += [["status", "-j", job_id, "--json"]]
    for argv in forms:
        assert plain_args(argv) is not None, argv
        plain = _run(capsys, argv)
        with monkeypatch.context() as m:
            m.setattr(cli_main, "plain_args", lambda args: None)
            parsed = _run(capsys, argv)
        assert plain == parsed, argv
    code, out, _ = _run(capsys, ["status"])
    assert code == 0 and "1/4 done · 2 running" in out and "paused until" in out
    assert all(f"1 {outcome}" in out for outcome in ("done", "error", "cancelled"))


# --- the finished-jobs index against a hostile world ------------------------------------------


def _finished(store: JobStore, cwd: Path, n: int) -> list[str]:
    ids = []
    for i in range(n):
        record, lock = new_job(store, cwd, specialist="echo")
        st = JobStatus(id=record.id, specialist="echo", status="done", started_at_ms=1000 + i)
        JobWriter(store, record.id).write_status(st)
        lock.release()
        ids.append(record.id)
    return sorted(ids)


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(state_dir(echo_project()), news=notices)


@pytest.mark.parametrize(
    "plant",
    [
        lambda p: p.write_bytes(p.read_bytes()[:-7]),  # torn: cut short mid-row
        lambda p: (p.unlink(), os.mkfifo(p)),
        lambda p: (p.unlink(), p.symlink_to(p.with_name("elsewhere.json"))),
    ],
    ids=["torn", "FIFO", "symlink"],
)
def test_a_torn_or_planted_index_is_reported_once_and_rebuilt(store, tmp_path, plant):
    ids = _finished(store, tmp_path, 3)
    overview(store)  # writes the index
    path = store.jobs_dir / index.INDEX_NAME
    path.with_name("elsewhere.json").write_text(path.read_text())
    plant(path)
    _, listed, problems = overview(store)
    assert sorted(e.id for e in listed) == ids
    assert len(problems) == 1 and index.INDEX_NAME in problems[0]
    assert overview(store)[2] == []  # rebuilt (the planted file moved aside, never followed)


def test_a_huge_row_is_read_and_clipped_and_a_missing_job_is_dropped(store, tmp_path, capsys):
    ids = _finished(store, tmp_path, 2)
    overview(store)
    path = store.jobs_dir / index.INDEX_NAME
    data = json.loads(path.read_text())
    data["jobs"][0][7] = "t" * 2_000_000  # a title of 2 MB: a string, so a row like any
    data["jobs"].append(["0000dead", "done", "echo", 5, 1.0, None, None, None, 0, 0.0, []])
    path.write_text(json.dumps(data))
    _, listed, problems = overview(store)
    assert sorted(e.id for e in listed) == ids and problems == []  # no directory: gc took it
    assert "0000dead" not in path.read_text()  # and the index forgets it
    code, out, _ = _run(capsys, ["status", "--all"])
    assert code == 0 and max(len(line) for line in out.splitlines()) < 200


def test_readers_beside_a_writer_of_the_index_see_every_job(store, tmp_path):
    """The index is replaced whole (a rename): a reader sees the old or the new one, never
    a part, however often another process rewrites it."""
    ids = _finished(store, tmp_path, 30)
    overview(store)
    entries = index.load(store)
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            index.save(store, entries)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(200):
            problems: list[str] = []
            assert sorted(index.load(store, problems)) == ids and problems == []
    finally:
        stop.set()
        writer.join()


GOOD_ROW = ["0000abcd", "done", "echo", 1000, 1.5, None, "key", "title", 10, 0.25, ["0000beef"]]
# Per field, values the exact check refuses or that the column check must not take on trust.
HOSTILE = {
    0: [None, 12, ["x"], True],
    1: ["running", None, ["done"], 1],
    2: [None, 2.0, {}],
    3: [True, 2**63, -(2**63) - 1, 1.0, "1", None],
    4: [float("inf"), float("-inf"), float("nan"), 1e301, -1e301, 2**63, True, "1.5", None, 3],
    5: [1, True, [], {}],
    8: [-(2**63) - 1, 2**63, False, 0.5],
    9: [float("nan"), 1e300, True, None, 0],
    10: [None, "x", [1], [None], [["x"]], ["x", 2], ()],
}


def test_the_column_check_takes_on_trust_only_what_the_exact_check_takes():
    exact = index._bad_rows()
    assert index._all_fine([GOOD_ROW] * 3) and exact([GOOD_ROW] * 3) == []
    assert not index._all_fine([]) and not index._all_fine([GOOD_ROW[:-1]])
    for field, values in HOSTILE.items():
        for value in values:
            row = [*GOOD_ROW[:field], value, *GOOD_ROW[field + 1 :]]
            rows = [GOOD_ROW, row, GOOD_ROW]
            if exact(rows):  # refused: the column check must have doubted it
                assert not index._all_fine(rows), (field, value)
            else:  # taken (an int where a float is declared): by either check
                assert field in (4, 9) and type(value) is int, (field, value)
