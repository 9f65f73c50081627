"""Beads runs: pure policy and formatting, then the adapter against the stand-in `bd`.

The adapter tests start tests/support/fake_bd.py as `bd` (a short Python process per call).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.beads import jobs as bead_jobs
from specialists.features.beads import notes as bead_notes
from specialists.features.beads.client import BeadsClient
from specialists.features.beads.notes import Bead, BeadsError
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from specialists.store.records import JobStatus
from tests.support import fake_bd
from tests.support.jobs import make_record

# --------------------------------------------------------------------------- pure


def test_bead_from_show_json_takes_first_issue_and_only_blocking_deps():
    data = [
        {
            "id": "bd-1",
            "title": "T",
            "description": "D",
            "notes": "N",
            "status": "open",
            "dependencies": [
                {"id": "bd-2", "title": "x", "dependency_type": "blocks"},
                {"id": "bd-3", "title": "p", "dependency_type": "parent-child"},
                {"id": "bd-4", "title": "r", "dependency_type": "related"},
            ],
        }
    ]
    bead = Bead.from_json(data)
    assert (bead.id, bead.title, bead.description, bead.notes) == ("bd-1", "T", "D", "N")
    assert bead.blockers == ("bd-2",)


@pytest.mark.parametrize("bad", [[], {}, {"title": "no id"}, "text", [1]])
def test_bead_from_json_refuses_answers_without_an_issue(bad):
    with pytest.raises(BeadsError):
        Bead.from_json(bad)


@pytest.mark.parametrize(
    ("mode", "permission", "uses_beads", "expected"),
    [
        ("never", "HIGH", True, False),
        ("always", "READ_ONLY", False, True),
        ("auto", "READ_ONLY", True, False),
        ("auto", "MEDIUM", True, True),
        ("auto", "MEDIUM", False, False),
    ],
)
def test_should_track(mode, permission, uses_beads, expected):
    assert bead_notes.should_track(mode, permission, uses_beads) is expected


@pytest.mark.parametrize("bad", ["--json", "-x", "", "a b", "x;rm", "../etc"])
def test_bead_ids_that_could_be_flags_or_paths_are_refused(bad):
    with pytest.raises(UserError):
        bead_notes.check_bead_id(bad)


def test_collect_blockers_walks_levels_once_each():
    graph = {
        "a": Bead("a", "A", blockers=("b", "c")),
        "b": Bead("b", "B", blockers=("d", "a")),
        "c": Bead("c", "C", blockers=("d",)),
        "d": Bead("d", "D", blockers=("e",)),
        "e": Bead("e", "E"),
    }
    shown: list[str] = []

    def show(bead_id: str) -> Bead:
        shown.append(bead_id)
        return graph[bead_id]

    assert bead_notes.collect_blockers(show, graph["a"], 0) == []
    assert [b.id for b in bead_notes.collect_blockers(show, graph["a"], 1)] == ["b", "c"]
    assert [b.id for b in bead_notes.collect_blockers(show, graph["a"], 2)] == ["b", "c", "d"]
    assert [b.id for b in bead_notes.collect_blockers(show, graph["a"], 9)] == ["b", "c", "d", "e"]
    assert "a" not in shown  # the bead itself is never shown again (cycles)


def test_bead_prompt_carries_bead_blockers_and_extra_instructions():
    bead = Bead("bd-1", "Fix login", description="It fails on ü", notes="seen twice")
    blocker = Bead(
        "bd-0", "Add logging", description="done first", notes="x" * 10_000, status="closed"
    )
    text = bead_notes.bead_prompt(bead, [blocker], "be brief")
    assert text.startswith("# Task: Fix login\nBead: bd-1\n")
    assert "It fails on ü" in text and "seen twice" in text
    assert "### Add logging (bd-0, closed)" in text
    assert "more chars]" in text and len(text) < 6000  # blocker notes are bounded
    assert text.rstrip().endswith("## Additional instructions\nbe brief")


def test_pin_notes_has_the_metadata_and_bounds_the_output(tmp_path):
    record = make_record(tmp_path, id="a1b2c3d4", specialist="executor", runner="pi")
    status = JobStatus(
        id="a1b2c3d4", specialist="executor", model="anthropic/x", backend="anthropic"
    )
    notes = bead_notes.pin_notes(
        record, status, "done", "R" * 100_000, None, git_sha="abc123", elapsed_ms=1234
    )
    for needle in (
        "job a1b2c3d4: done",
        "model: anthropic/x",
        "backend: anthropic",
        "elapsed_ms: 1234",
        "prompt_hash: sha256:",
        "git_sha: abc123",
        "specialists result a1b2c3d4",
    ):
        assert needle in notes
    assert len(notes) <= bead_notes.MAX_NOTES_CHARS
    failed = bead_notes.pin_notes(record, status, "error", None, "boom", git_sha=None, elapsed_ms=5)
    assert "error: boom" in failed and "git_sha: unknown" in failed


def test_close_reason_says_failed_on_error():
    assert bead_notes.close_reason("error", "exit 3", "j").startswith("failed:")
    assert "completed" in bead_notes.close_reason("done", None, "j")
    assert "cancelled" in bead_notes.close_reason("cancelled", None, "j")


# --------------------------------------------------------------------------- stand-in bd


class FakeBd:
    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.state = root / "bd-state.json"
        self.log = root / "bd-calls.jsonl"
        self.path = fake_bd.install_wrapper(self.bin)

    def calls(self) -> list[list[str]]:
        return fake_bd.read_calls(self.log)

    def issues(self) -> dict:
        return json.loads(self.state.read_text())["issues"]


@pytest.fixture
def bd(tmp_path, monkeypatch) -> FakeBd:
    fake = FakeBd(tmp_path / "fakebd")
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_BD_STATE", str(fake.state))
    monkeypatch.setenv("FAKE_BD_LOG", str(fake.log))
    return fake


@pytest.fixture
def project() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


@pytest.fixture
def store(project) -> JobStore:
    return JobStore(state_dir(project), news=NEWS)


def test_client_round_trip_against_the_stand_in(bd, tmp_path):
    client = BeadsClient(str(bd.path), tmp_path)
    bead_id = client.create("specialist x: do", "desc")
    bead = client.show(bead_id)
    assert (bead.title, bead.description, bead.status) == ("specialist x: do", "desc", "open")
    client.append_notes(bead_id, "first")
    client.append_notes(bead_id, "second")
    client.close(bead_id, "failed: it broke")
    issue = bd.issues()[bead_id]
    assert issue["notes"] == "first\nsecond"
    assert issue["status"] == "closed" and issue["close_reason"] == "failed: it broke"
    assert issue["labels"] == ["specialists"]
    assert [c[0] for c in bd.calls()] == ["create", "show", "update", "update", "close"]


def test_unknown_bead_is_an_error_even_though_bd_exits_zero(bd, tmp_path):
    client = BeadsClient(str(bd.path), tmp_path)
    with pytest.raises(BeadsError, match=r"no answer.*no issue found"):
        client.show("bd-nope")
    with pytest.raises(BeadsError):
        client.close("bd-nope", "x")


def test_a_failing_bd_is_reported_with_its_stderr(bd, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BD_FAIL", "create")
    with pytest.raises(BeadsError, match="exited with code 1: Error: simulated failure"):
        BeadsClient(str(bd.path), tmp_path).create("t", "d")


def test_tracking_is_a_noop_without_bd(project, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    record = make_record(project, specialist="executor", permission="MEDIUM")
    assert bead_jobs.track(record, "always") == (record, None)
    with pytest.raises(UserError, match="needs the `bd` CLI"):
        bead_jobs.bead_prompt_for(project, "bd-1", 1)


def test_auto_tracks_a_writing_specialist_in_a_beads_project(bd, store, project):
    (project / ".beads").mkdir()
    record = make_record(project, specialist="executor", permission="MEDIUM", prompt="Fix it\nmore")
    out, warning = bead_jobs.track(record, "auto")
    assert warning is None
    assert out.owns_bead is True and out.bead_id in bd.issues()
    assert bd.issues()[out.bead_id]["title"] == "specialist executor: Fix it"
    create = bd.calls()[0]
    assert create[:2] == ["create", "specialist executor: Fix it"]
    assert "--json" in create


def test_auto_does_not_track_read_only_or_beadless_projects(bd, store, project):
    record = make_record(project, specialist="executor", permission="MEDIUM")
    assert bead_jobs.track(record, "auto")[0].bead_id is None  # no .beads/
    (project / ".beads").mkdir()
    ro = make_record(project, specialist="reviewer", permission="READ_ONLY")
    assert bead_jobs.track(ro, "auto")[0].bead_id is None
    assert bead_jobs.track(record, "never")[0].bead_id is None
    assert bd.calls() == []


def test_create_failure_runs_untracked_with_a_warning(bd, store, project, monkeypatch, capsys):
    """A tracker failure comes back as a warning for the interface: nothing is printed."""
    (project / ".beads").mkdir()
    monkeypatch.setenv("FAKE_BD_FAIL", "create")
    record = make_record(project, specialist="executor", permission="MEDIUM")
    out, warning = bead_jobs.track(record, "auto")
    assert out.bead_id is None
    assert warning is not None and "not tracked as a bead" in warning
    assert capsys.readouterr() == ("", "")


def test_run_bead_makes_the_bead_the_prompt_with_blocker_context(bd, store, project):
    fake_bd.seed(
        bd.state,
        [
            {
                "id": "bd-9",
                "title": "Ship login",
                "description": "Make login work",
                "dependencies": [
                    {"id": "bd-8", "type": "blocks"},
                    {"id": "bd-1", "type": "parent-child"},
                ],
            },
            {
                "id": "bd-8",
                "title": "Schema",
                "status": "closed",
                "notes": "users table added",
                "dependencies": [{"id": "bd-7", "type": "blocks"}],
            },
            {"id": "bd-7", "title": "Pick DB", "status": "closed", "notes": "postgres"},
            {"id": "bd-1", "title": "Epic"},
        ],
    )
    prompt, bead_id = bead_jobs.bead_prompt_for(project, "bd-9", 1)
    assert bead_id == "bd-9"
    assert "# Task: Ship login" in prompt and "users table added" in prompt
    assert "Make login work" in prompt
    assert "postgres" not in prompt and "Epic" not in prompt
    assert [c[0] for c in bd.calls()] == ["show", "show"]
    deeper, _ = bead_jobs.bead_prompt_for(project, "bd-9", 2)
    assert "postgres" in deeper
    assert not any(c[0] == "create" for c in bd.calls())  # never a second bead


def test_run_bead_with_unknown_id_is_a_user_error(bd, store, project):
    with pytest.raises(UserError, match="cannot read bead bd-404"):
        bead_jobs.bead_prompt_for(project, "bd-404", 1)


def _finished(record_kwargs, project, bd, final, answer, error):
    record = make_record(project, id="a1b2c3d4", specialist="executor", **record_kwargs)
    status = JobStatus(id="a1b2c3d4", specialist="executor", started_at_ms=record.created_at_ms)
    bead_jobs.on_job_finished(
        record, status, final, answer, error, now_ms=record.created_at_ms + 4200
    )
    return bd.issues()


def test_owned_bead_gets_notes_then_is_closed(bd, project):
    fake_bd.seed(bd.state, [{"id": "bd-5", "title": "run"}])
    issues = _finished({"bead_id": "bd-5", "owns_bead": True}, project, bd, "done", "ANSWER", None)
    assert "ANSWER" in issues["bd-5"]["notes"] and "elapsed_ms: 4200" in issues["bd-5"]["notes"]
    assert (
        "git_sha: " in issues["bd-5"]["notes"] and "git_sha: unknown" not in issues["bd-5"]["notes"]
    )
    assert issues["bd-5"]["status"] == "closed"
    assert [c[0] for c in bd.calls()] == ["update", "close"]


def test_failed_run_closes_its_bead_as_failed(bd, project):
    fake_bd.seed(bd.state, [{"id": "bd-5", "title": "run"}])
    issues = _finished({"bead_id": "bd-5", "owns_bead": True}, project, bd, "error", None, "exit 3")
    assert issues["bd-5"]["close_reason"].startswith("failed:")
    assert "error: exit 3" in issues["bd-5"]["notes"]


def test_input_bead_gets_notes_but_stays_open(bd, project):
    fake_bd.seed(bd.state, [{"id": "bd-9", "title": "task", "notes": "mine"}])
    issues = _finished({"bead_id": "bd-9", "owns_bead": False}, project, bd, "done", "OUT", None)
    assert issues["bd-9"]["notes"].startswith("mine\n## specialists job")
    assert issues["bd-9"]["status"] == "open"
    assert [c[0] for c in bd.calls()] == ["update"]


def test_finish_problems_are_raised_after_trying_everything(bd, project, monkeypatch):
    fake_bd.seed(bd.state, [{"id": "bd-5", "title": "run"}])
    monkeypatch.setenv("FAKE_BD_FAIL", "update")
    with pytest.raises(BeadsError, match=r"bead bd-5: .*simulated failure of update"):
        _finished({"bead_id": "bd-5", "owns_bead": True}, project, bd, "done", "x", None)
    assert bd.issues()["bd-5"]["status"] == "closed"  # close still happened


def test_no_bead_id_means_no_bd_call(bd, project):
    record = make_record(project, id="a1b2c3d4")
    bead_jobs.on_job_finished(record, JobStatus(id="a1b2c3d4", specialist="x"), "done", "x", None)
    assert bd.calls() == []


def test_crashed_jobs_get_their_beads_closed_once_at_the_next_run_start(bd, store, project):
    from specialists.store.gc import collect
    from specialists.store.recovery import recover_if_dead
    from specialists.store.writer import JobWriter
    from tests.support.jobs import new_job

    fake_bd.seed(bd.state, [{"id": "bd-3", "title": "tracked run"}])
    record, lock = new_job(store, project, bead_id="bd-3", owns_bead=True)
    lock.release()  # its supervisor "died"
    st = store.read_status(record.id)
    st.status, st.supervisor_pid, st.supervisor_start_time = "running", 999_999_999, 1
    JobWriter(store, record.id).write_status(st)
    assert recover_if_dead(store, record.id, st).status == "error"  # e.g. by `status`
    report = collect(store)
    assert report.crashed == [record.id]
    assert bead_jobs.settle_crashed(store, report.crashed) == []
    closed = bd.issues()["bd-3"]
    assert closed["status"] == "closed" and "supervisor crashed" in closed["notes"]
    calls = len(bd.calls())
    assert bead_jobs.settle_crashed(store, collect(store).crashed) == []
    assert len(bd.calls()) == calls  # once per job


def test_a_hanging_or_missing_bd_is_one_line_not_a_hang(tmp_path, monkeypatch):
    """bd is run by the short-command helper: a timeout kills it and is a BeadsError line."""
    from specialists.features.beads import client as bd_client

    hang = tmp_path / "bd"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    monkeypatch.setattr(bd_client, "BD_TIMEOUT_S", 0.5)
    with pytest.raises(BeadsError, match=r"`bd show` timed out after 0.5s"):
        BeadsClient(str(hang), tmp_path).show("bd-1")
    with pytest.raises(BeadsError, match="not installed"):
        BeadsClient(str(tmp_path / "nowhere" / "bd"), tmp_path).show("bd-1")
