"""Bad input through the CLI: one `error:` line on stderr, a non-zero exit, no traceback,
nothing changed on disk. `main(argv)` runs in-process; no agent is ever started."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import ECHO_SPEC as ECHO
from tests.support.jobs import new_job


@pytest.fixture
def root() -> Path:
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir()
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    return project


@pytest.fixture
def store(root: Path) -> JobStore:
    return JobStore(state_dir(root), news=NEWS)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def finished_job(store: JobStore, cwd: Path, *, status: str = "done") -> str:
    record, lock = new_job(store, cwd)
    writer = JobWriter(store, record.id)
    writer.write_status(JobStatus(id=record.id, specialist="echo", status=status))
    writer.close()
    lock.release()
    return record.id


class _BinaryStdin:
    """A stdin whose bytes are not UTF-8, as a pipe from a latin-1 file gives."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)

    def isatty(self) -> bool:
        return False

    def read(self) -> str:  # what sys.stdin.read() gives under surrogateescape
        return self.buffer.getvalue().decode("utf-8", "surrogateescape")


def test_prompt_on_stdin_that_is_not_utf8_is_refused_before_a_job_exists(
    capsys, monkeypatch, store
):
    monkeypatch.setattr("sys.stdin", _BinaryStdin(b"hi \xff\xfe there"))
    code, _, err = run_cli(capsys, "run", "echo")
    assert code == 2
    assert "not valid UTF-8" in one_error_line(err)
    assert store.list_ids() == []


class _EndlessStdin:
    """`yes | specialists run ...`: a stdin that never ends; counts what was asked of it."""

    def __init__(self) -> None:
        self.asked = 0
        self.buffer = self

    def isatty(self) -> bool:
        return False

    def read(self, size: int = -1) -> bytes:
        assert size > 0, "stdin read to its end: it has none"
        self.asked += size
        return b"y\n" * (size // 2 + 1)


def test_a_prompt_on_stdin_past_what_a_job_holds_is_one_line_not_endless(
    capsys, monkeypatch, store
):
    from specialists.store.jobs import MAX_RECORD

    endless = _EndlessStdin()
    monkeypatch.setattr("sys.stdin", endless)
    code, _, err = run_cli(capsys, "run", "echo")
    assert code == 2
    assert "the prompt on stdin is over 32 MiB" in one_error_line(err)
    assert endless.asked == MAX_RECORD + 1
    assert store.list_ids() == []


def test_prompt_argument_with_undecodable_bytes_is_refused(capsys, store):
    code, _, err = run_cli(capsys, "run", "echo", "--prompt", "a\udcffb")
    assert code == 2
    assert "not valid UTF-8" in one_error_line(err)
    assert store.list_ids() == []


@pytest.mark.parametrize(
    "value", ["0", "-1", "1e400", "abc", "nan", "0.0001ms", "5S", "", "--", " ", "31d", "999h"]
)
def test_bad_timeouts_are_refused(capsys, store, value):
    code, _, err = run_cli(capsys, "run", "echo", "--prompt", "x", f"--timeout={value}")
    assert code == 2
    assert "invalid duration" in one_error_line(err)
    assert store.list_ids() == []


def test_empty_continue_is_a_bad_id_not_a_fresh_run(capsys, store):
    code, _, err = run_cli(capsys, "run", "echo", "--prompt", "x", "--continue", "")
    assert code == 2
    assert "invalid job id ''" in one_error_line(err)
    assert store.list_ids() == []


def test_cwd_that_is_a_file_says_so(capsys, root):
    (root / "afile").write_text("x")
    code, _, err = run_cli(capsys, "run", "echo", "--prompt", "x", "--cwd", str(root / "afile"))
    assert code == 2
    assert "is not a directory" in one_error_line(err)


@pytest.mark.parametrize("command", [["status", "--job", ""], ["feed", "--job", ""]])
def test_empty_job_id_is_refused_not_read_as_all_jobs(capsys, store, root, command):
    finished_job(store, root)
    code, out, err = run_cli(capsys, *command)
    assert code == 2
    assert "invalid job id" in one_error_line(err)
    assert out == ""


@pytest.mark.parametrize("value", ["-5", "nan", "", "--"])
def test_result_wait_with_negative_or_nan_timeout_is_refused(capsys, store, root, value):
    job_id = finished_job(store, root, status="running")
    code, _, err = run_cli(capsys, "result", job_id, "--wait", f"--timeout={value}")
    assert code == 2
    assert "invalid duration" in one_error_line(err)


def test_gc_days_nan_is_refused(capsys, store, root):
    job_id = finished_job(store, root)
    code, _, err = run_cli(capsys, "gc", "--days", "nan")
    assert code == 2
    one_error_line(err)
    assert store.list_ids() == [job_id]


@pytest.mark.parametrize("command", [["status"], ["feed"], ["gc"], ["result", "abcd1234"]])
def test_state_dir_that_is_a_file_is_one_line_exit_4(capsys, root, command):
    (root / ".specialists").write_text("not a directory")
    code, _, err = run_cli(capsys, *command)
    assert code == 4
    assert "Not a directory" in one_error_line(err)
    assert (root / ".specialists").read_text() == "not a directory"


@pytest.mark.parametrize("name", ["status.json", "job.json", "events.jsonl"])
def test_job_file_replaced_by_a_directory_is_one_line(capsys, store, root, name):
    job_id = finished_job(store, root)
    path = store.job_dir(job_id) / name
    if path.exists():
        path.unlink()
    path.mkdir()
    command = {
        "status.json": ["status", "--job", job_id],
        "job.json": ["resume", job_id, "--prompt", "again"],
        "events.jsonl": ["feed", "--job", job_id],
    }[name]
    code, _, err = run_cli(capsys, *command)
    assert code == 4
    assert name in one_error_line(err)


def test_resume_with_job_json_missing_is_one_line(capsys, store, root):
    job_id = finished_job(store, root)
    (store.job_dir(job_id) / "job.json").unlink()
    code, _, err = run_cli(capsys, "resume", job_id, "--prompt", "again")
    assert code == 4
    assert "job.json" in one_error_line(err)
    assert store.list_ids() == [job_id]


def test_resume_when_the_session_file_was_deleted_is_refused(capsys, store, root, tmp_path):
    record, lock = new_job(store, root, runner="command", specialist="echo")
    writer = JobWriter(store, record.id)
    gone = tmp_path / "deleted-session.jsonl"
    writer.write_status(
        JobStatus(id=record.id, specialist="echo", status="done", session_file=str(gone))
    )
    writer.close()
    lock.release()
    code, _, err = run_cli(capsys, "resume", record.id, "--prompt", "again")
    assert code == 2
    assert "is gone" in one_error_line(err)
    assert store.list_ids() == [record.id]


def test_result_that_is_not_utf8_is_one_line_and_kept(capsys, store, root):
    job_id = finished_job(store, root)
    path = store.job_dir(job_id) / "result.txt"
    path.write_bytes(b"ok \xff bad")
    code, _, err = run_cli(capsys, "result", job_id)
    assert code == 4
    assert "not valid UTF-8" in one_error_line(err)
    assert path.read_bytes() == b"ok \xff bad"


def test_init_keeps_a_gitignore_that_is_not_utf8(capsys, root):
    gitignore = root / ".gitignore"
    gitignore.write_bytes(b"a\xffb\n")
    code, _, err = run_cli(capsys, "init", "--no-register")
    assert code == 0, err
    assert gitignore.read_bytes() == b"a\xffb\n.specialists/\nspecialists/config.local.toml\n"


@pytest.mark.parametrize("content", ["[1, 2]", json.dumps({"hooks": "str"}), "garbage", "\udcff"])
def test_install_refuses_malformed_settings_untouched(capsys, root, content):
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir()
    data = content.encode("utf-8", "surrogateescape")
    settings.write_bytes(data)
    code, _, err = run_cli(capsys, "install")
    assert code == 2
    one_error_line(err)
    assert settings.read_bytes() == data
    assert not (root / ".mcp.json").exists()
