"""The CLI's contract: every exit code of docs/cli.md, the one error-line shape, the catch-all
that logs a bug's traceback, agent text made safe for a terminal, and hostile arguments
(empty, huge, NUL, undecodable, escape-laden) through every command. In-process `main`."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from specialists.base.display import for_terminal
from specialists.base.errors import Bug
from specialists.fronts.cli import cmd_status
from specialists.fronts.cli.commands import COMMANDS
from specialists.fronts.cli.foreground import shown
from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from specialists.store.liveness import process_start_time
from specialists.store.news import NEWS
from specialists.store.paths import state_dir, user_state_dir
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job

ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
MISSING = (
    "metadata: {name: gone}\nexecution:\n  runner: {type: command, command: no-such-agent-cli}\n"
)
ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x08"


@pytest.fixture
def root() -> Path:
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (project / "specialists").mkdir()
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    (project / "specialists" / "gone.specialist.yaml").write_text(MISSING)
    return project


@pytest.fixture
def store(root: Path) -> JobStore:
    return JobStore(state_dir(root), news=NEWS)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def error_line(err: str) -> str:
    """Exactly one line, `error: <what>`, nothing raw from a terminal's point of view."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "\x1b" not in err
    return lines[0]


def job_with(store: JobStore, cwd: Path, **fields: object) -> str:
    record, lock = new_job(store, cwd)
    writer = JobWriter(store, record.id)
    writer.write_status(JobStatus(id=record.id, specialist="echo", **fields))
    writer.close()
    lock.release()
    return record.id


# --- exit codes -----------------------------------------------------------------------------


def test_exit_0_and_1(capsys, store, root):
    assert cli(capsys, "status")[0] == 0
    job_id = job_with(store, root, status="error", error="boom")
    code, _, err = cli(capsys, "result", job_id)
    assert code == 1 and "ended error: boom" in error_line(err)


def test_exit_2_bad_input_and_usage(capsys, root):
    code, _, err = cli(capsys, "run", "nobody", "--prompt", "x")
    assert code == 2 and "nobody" in error_line(err)
    code, _, err = cli(capsys, "run")  # argparse's own error, in our shape
    assert code == 2 and "(see: specialists run --help)" in error_line(err)
    code, _, err = cli(capsys, "no-such-command")
    assert code == 2 and error_line(err)


def test_exit_3_agent_missing_before_any_job(capsys, store):
    code, _, err = cli(capsys, "run", "gone", "--prompt", "x")
    assert code == 3 and "no-such-agent-cli" in error_line(err)
    code, _, err = cli(capsys, "run", "gone", "--prompt", "x", "--background")
    assert code == 3 and store.list_ids() == []


def test_exit_4_store_unreadable(capsys, root):
    (root / ".specialists").write_text("a file where the store belongs")
    code, _, err = cli(capsys, "status")
    assert code == 4 and ".specialists" in error_line(err)


def test_exit_70_a_bug_is_logged_with_its_traceback(capsys, root, monkeypatch):
    def broken(args: object, project: object) -> int:
        raise KeyError("impossible")

    monkeypatch.setattr(cmd_status, "run", broken)
    code, _, err = cli(capsys, "status")
    line = error_line(err)
    assert code == 70 and line.startswith("error: bug: KeyError: 'impossible' (traceback in ")
    log = Path(user_state_dir()) / "errors.log"
    assert str(log) in line
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "argv=['status']" in text

    def impossible(args: object, project: object) -> int:
        raise Bug("a state that cannot be")

    monkeypatch.setattr(cmd_status, "run", impossible)
    code, _, err = cli(capsys, "status")
    assert code == 70 and error_line(err).startswith("error: bug: a state that cannot be")


def test_exit_130_interrupted(capsys, root, monkeypatch):
    def interrupted(args: object, project: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd_status, "run", interrupted)
    code, _, err = cli(capsys, "status")
    assert code == 130 and error_line(err) == "error: interrupted"


def test_the_exit_code_table_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 70 |", "| 130 |"):
        assert code in doc, code


# --- values refused where they enter --------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--timeout", ""],
        ["--timeout=--"],
        ["--timeout", "-5"],
        ["--runner", ""],
        ["--runner", "  "],
        ["--model", ""],
        ["--model", "a\x00b"],
        ["--cwd", ""],
        ["--prompt", "a\x00b"],
    ],
    ids=repr,
)
def test_empty_and_nul_values_are_refused(capsys, store, args):
    argv = ["run", "echo", *(["--prompt", "x"] if "--prompt" not in args else []), *args]
    code, _, err = cli(capsys, *argv)
    assert code == 2, err
    error_line(err)
    assert store.list_ids() == []


@pytest.mark.parametrize(
    "value",
    ["", "x" * 100_000, "\x1b[31m\x1b]0;t\x07", "a\udcffb", "-", "../../etc/passwd"],
    ids=["empty", "huge", "escapes", "undecodable", "dash", "path"],
)
@pytest.mark.parametrize(
    "command", ["show", "result", "stop", "steer", "status --job", "feed --job"]
)
def test_hostile_names_and_ids_get_one_clean_line(capsys, root, value, command):
    argv = [*command.split(), value]
    if command == "steer":
        argv.append("message")
    code, out, err = cli(capsys, *argv)
    assert code == 2, (code, err)
    line = error_line(err)
    assert len(line) <= 2100 and "\x1b" not in line
    assert out == ""


def test_every_command_answers_help(capsys):
    for name in COMMANDS:
        assert main([name, "--help"]) == 0, name
        assert capsys.readouterr().out.startswith("usage: specialists")


# --- agent text on a terminal ---------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_escapes_from_an_agent_are_shown_not_obeyed(capsys, store, root):
    job_id = job_with(
        store,
        root,
        status="running",
        current_tool=f"bash({ESC})",
        error=ESC,
        started_at_ms=1,
        supervisor_pid=os.getpid(),  # alive: shown as running, not recovered
        supervisor_start_time=process_start_time(os.getpid()),
    )
    for argv in (["status"], ["status", "--job", job_id]):
        code, out, _ = cli(capsys, *argv)
        assert code == 0
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out
        assert "\\e]0;pwned" in out
    assert "\x1b" not in shown(ESC, Tty()) and shown(ESC, io.StringIO()) == ESC


def test_status_says_what_each_job_is_and_rolls_a_workflows_spending_up(capsys, store, root):
    """Rows name a workflow child's key or a job's task; a workflow's progress and its
    children's spending are in the text and in --json (one shape: jobs/rollup.py)."""
    alive = {
        "supervisor_pid": os.getpid(),
        "supervisor_start_time": process_start_time(os.getpid()),
    }
    children = {
        "tokens": {"input": 40, "output": 4, "cache_read": 0, "cache_write": 0},
        "cost_usd": 0.02,
        "jobs": 2,
    }
    progress = {"total": 3, "done": 1, "running": 1, "queued": 1, "phase": "review",
                "concurrency": 8, "children": children}  # fmt: skip
    wf = job_with(
        store, root, status="running", title="parallel_review", progress=progress,
        tokens={"input": 1, "output": 1}, **alive,
    )  # fmt: skip
    child = job_with(
        store, root, status="running", workflow_key="review-tests", parent_id=wf,
        current_event="text", last_text=f"hello {ESC}", **alive,
    )  # fmt: skip
    job_with(store, root, status="done", title="Review the last commit")
    code, out, _ = cli(capsys, "status")
    assert code == 0 and "\x1b" not in out
    assert "1/3 done · 1 running · 1 queued · phase review · up to 8 at once" in out
    assert "review-tests" in out and "says: hello \\e]0;pwned" in out
    assert "Review the last commit · ✓" in out
    code, out, _ = cli(capsys, "status", "--json")
    by_id = {s["id"]: s for s in json.loads(out)["active"]}
    assert by_id[wf]["rollup"] == {
        "tokens": {"input": 41, "output": 5, "cache_read": 0, "cache_write": 0},
        "cost_usd": 0.02,
        "jobs": 3,
    }
    assert by_id[child]["rollup"]["jobs"] == 1 and by_id[child]["workflow_key"] == "review-tests"
    code, out, _ = cli(capsys, "status", wf)
    assert "Progress: 1/3 done" in out and "With its children: 3 jobs, tokens 41 in / 5 out" in out
    code, out, _ = cli(capsys, "status", wf, "--json")
    assert json.loads(out)["rollup"]["jobs"] == 3


def test_result_raw_keeps_the_exact_text(capsys, store, root):
    record, lock = new_job(store, root)
    writer = JobWriter(store, record.id)
    writer.write_result(ESC + "\n")
    writer.write_status(JobStatus(id=record.id, specialist="echo", status="done"))
    writer.close()
    lock.release()
    code, out, _ = cli(capsys, "result", record.id, "--raw")
    assert code == 0 and out == ESC + "\n"


def test_for_terminal_escapes_controls_and_keeps_text():
    assert for_terminal("plain\ttext\nnext") == "plain\ttext\nnext"
    assert for_terminal("\x1b[31mred") == "\\e[31mred"
    assert for_terminal("\x9b2J") == "\\x9b2J"  # a C1 CSI
    assert for_terminal("a\udcffb") == "a\\udcffb"
    assert for_terminal("x\ny", keep_newlines=False) == "x\\ny"


# --- feed -----------------------------------------------------------------------------------


def _events(store: JobStore, job_id: str, count: int, *, final: str | None) -> None:
    writer = JobWriter(store, job_id)
    for _ in range(count):
        writer.append_event("text")
    if final:
        writer.append_event(final)
    writer.close()


def test_a_hostile_definition_is_shown_not_obeyed(capsys, root):
    """Definition files are anyone's text: list and show print their escapes visibly."""
    (root / "specialists" / "evil.specialist.yaml").write_text(
        'metadata: {name: evil, description: "\\e]0;pwned\\a\\e[2Jgone"}\n'
        "execution:\n  runner: {type: command, command: cat}\n"
    )
    for argv in (["list"], ["show", "evil"]):
        code, out, err = cli(capsys, *argv)
        assert code == 0, err
        assert "\x1b" not in out + err and "\x07" not in out + err
        assert "\\e]0;pwned" in out
