"""Attention and watchdog settings through `specialists run` and definitions: bad values are
one clear line and no job; good ones land resolved in job.json. `main(argv)` in-process;
the echo specialist (command runner) needs no model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.cli.main import main
from tests.support.jobs import ECHO_SPEC


@pytest.fixture
def root() -> Path:
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir()
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO_SPEC)
    return project


def jobs(root: Path) -> list[Path]:
    where = root / ".specialists" / "jobs"
    return [p for p in where.iterdir() if p.is_dir()] if where.is_dir() else []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--attention-after", "5 minutes"], "--attention-after: invalid duration '5 minutes'"),
        (["--attention-after", "10ms"], "--attention-after: '10ms' is under a second"),
        (["--attention-after", "9d"], "longer than a week"),
    ],
)
def test_a_bad_attention_after_is_one_line_and_no_job(root, capsys, args, message):
    code = main(["run", "echo", "--prompt", "hi", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert jobs(root) == []


def test_a_bad_definition_field_names_it(root, capsys):
    spec = ECHO_SPEC.replace("execution:\n", "execution:\n  attention: {after: 5m, tol: 1}\n")
    (root / "specialists" / "echo.specialist.yaml").write_text(spec)
    code = main(["run", "echo", "--prompt", "hi"])
    err = capsys.readouterr().err
    assert code == 2 and "execution.attention: unknown key 'tol'" in err
    assert jobs(root) == []


def test_a_bad_config_table_names_it(root, capsys):
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text("[watchdog]\nmax_reviews = 0\n")
    code = main(["run", "echo", "--prompt", "hi", "--watchdog"])
    err = capsys.readouterr().err
    assert code == 2 and "config.toml [watchdog].max_reviews: expected 1 to 50" in err
    assert jobs(root) == []


def _record(root: Path, job_id: str) -> dict:
    return json.loads((root / ".specialists" / "jobs" / job_id / "job.json").read_text())


def test_resume_takes_the_attention_settings(root, capsys, monkeypatch):
    """`resume` of an ended job makes a new job with the flags (the request it plans carries
    them); a paused job continues in place and says the flags do not apply to it."""
    from specialists.jobs.store import JobStore
    from tests.support.fleet import write_status
    from tests.support.jobs import new_job

    store = JobStore(root / ".specialists", news=None)
    record, lock = new_job(store, root, specialist="echo")
    lock.release()
    session = root / "session.jsonl"
    session.write_text("")
    write_status(store.jobs_dir, record.id, status="done", session_file=str(session))
    planned = []
    monkeypatch.setattr(
        "specialists.cli.cmd_run.plan_and_launch",
        lambda _p, request, **_: planned.append(request) or 0,
    )
    args = ["resume", record.id, "--prompt", "more", "--attention-after", "3m", "--no-watchdog"]
    assert main(args) == 0, capsys.readouterr().err
    (request,) = planned
    assert (request.attention_after, request.watchdog) == ("3m", False)
    write_status(store.jobs_dir, record.id, status="waiting")
    monkeypatch.setattr(
        "specialists.jobs.actions.send_message",
        lambda *a, **k: type("Sent", (), {"state": "delivered", "reason": None})(),
    )
    assert main(args) == 0
    assert "apply to a new job; job " in capsys.readouterr().err
