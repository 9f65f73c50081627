"""Hooks and beads runs through real processes: `python -m specialists ...` as Claude Code and
a user would run it, with jobs run by the `command` runner and `bd` played by
tests/support/fake_bd.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specialists.base.owner import agent_ancestor
from specialists.events import notices
from specialists.events.inbox import Inbox
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from specialists.store.writer import JobWriter
from specialists.supervise.launch import create_job
from tests.support import fake_bd
from tests.support.jobs import TEST_OWNER, make_record

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: {name}
  description: test specialist
execution:
  runner:
    type: command
    command: {command}
    args: {args}
  permission_required: LOW
beads_integration: {beads}
prompt:
  system: SYS
  task_template: "$prompt"
"""


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    for name, command, args, beads in (
        ("echoer", "cat", "[]", "always"),
        ("failer", "sh", '["-c", "echo boom >&2; exit 3"]', "always"),
        ("quiet", "cat", "[]", "never"),
    ):
        (root / "specialists" / f"{name}.specialist.yaml").write_text(
            SPEC.format(name=name, command=command, args=args, beads=beads)
        )
    return root


def sp(*args: str, input: str | None = "", env: dict | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=cwd or os.environ["SPECIALISTS_PROJECT_ROOT"],
        capture_output=True,
        text=True,
        input=input,
        timeout=60,
        env=env,
    )


def context(proc: subprocess.CompletedProcess, event: str) -> str:
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == event
    return doc["hookSpecificOutput"]["additionalContext"]


def in_session(session: str) -> dict[str, str]:
    """The environment Claude Code 2.1.197 gives its Bash tool and hooks: its session id."""
    return {**os.environ, "CLAUDE_CODE_SESSION_ID": session}


def notice_ids(project: Path, session: str) -> list[str]:
    inbox = Inbox(state_dir(project), f"claude-{session}")
    return [e.id for e in inbox.pending().events]


def prompt_hook(project: Path, session: str) -> subprocess.CompletedProcess:
    hook_input = json.dumps(
        {
            "session_id": session,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "next",
            "cwd": str(project),
        }
    )
    return sp("hook", "user-prompt-submit", input=hook_input, env=in_session(session))


def wait_done(job_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = sp("status", "--job", job_id, "--json")
        if out.returncode == 0 and json.loads(out.stdout)["status"] in ("done", "error"):
            return
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def test_finished_jobs_from_real_runs_are_announced_once(project):
    """Jobs started in session s are announced to s, once; session t hears nothing of them."""
    ok = sp("run", "echoer", "--prompt", "hello", "--no-beads", "-b", env=in_session("s"))
    bad = sp("run", "failer", "--prompt", "x", "--no-beads", "-b", env=in_session("s"))
    ok_id, bad_id = ok.stdout.strip(), bad.stdout.strip()
    wait_done(ok_id)
    wait_done(bad_id)
    other = prompt_hook(project, "t")
    assert other.returncode == 0 and other.stdout == ""  # not t's jobs
    text = context(prompt_hook(project, "s"), "UserPromptSubmit")
    lines = text.splitlines()
    assert any(
        re.fullmatch(
            rf"Specialist 'echoer' completed \(job {ok_id}, 0m0\ds\). "
            rf"Run: specialists result {ok_id} \(MCP tool: result\)",
            line,
        )
        for line in lines
    ), lines
    assert f"[specialists event] notice from run ({ok_id})" in lines
    failed = next(ln for ln in lines if bad_id in ln and ln.startswith("Specialist"))
    assert re.fullmatch(
        rf"Specialist 'failer' failed \(job {bad_id}, 0m0\ds\): .*exit.* 3.*boom.*\. "
        rf"Run: specialists feed --job {bad_id} \(MCP tool: feed\)",
        failed,
    ), failed
    again = prompt_hook(project, "s")
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
    assert sp("result", ok_id).stdout.endswith("hello\n")  # the banner's command works


def test_reading_a_result_clears_its_notice(project):
    """Whoever read the answer (result, a foreground run) is not told about it again."""
    job_id = sp("run", "echoer", "--prompt", "hi", "--no-beads", "-b", env=in_session("s"))
    job_id_text = job_id.stdout.strip()
    wait_done(job_id_text)
    assert job_id_text in "".join(notice_ids(project, "s"))
    assert sp("result", job_id_text).stdout.endswith("hi\n")
    assert notice_ids(project, "s") == []
    fg = sp("run", "echoer", "--prompt", "fg", "--no-beads", "--json", env=in_session("s"))
    assert json.loads(fg.stdout)["result"].endswith("fg")
    assert prompt_hook(project, "s").stdout == ""  # neither job is announced


def test_a_job_without_an_owner_posts_no_notice(project):
    """A person at a terminal (no session, no agent above) reads results with `result`."""
    if agent_ancestor() is not None:
        pytest.skip("the tests run under an agent CLI, which would own the job")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CODE_SESSION_ID"}
    job_id = sp("run", "echoer", "--prompt", "x", "--no-beads", "-b", env=env).stdout.strip()
    wait_done(job_id)
    assert not (project / ".specialists" / "owners").exists()


def test_a_notice_from_a_writer_and_non_json_stdin(project):
    store = JobStore(state_dir(project), news=NEWS)
    record, lock = create_job(store, make_record(project, specialist="overthinker"))
    writer = JobWriter(store, record.id)
    status = store.read_status(record.id)
    assert status is not None
    status.status, status.elapsed_s = "done", 107.0
    writer.write_status(status)
    notices.retell(store.root, record.id)
    writer.close()
    lock.release()
    session = TEST_OWNER.removeprefix("claude-")
    proc = sp("hook", "user-prompt-submit", input="this is not json", env=in_session(session))
    assert context(proc, "UserPromptSubmit").endswith(
        f"Specialist 'overthinker' completed (job {record.id}, 1m47s). "
        f"Run: specialists result {record.id} (MCP tool: result)"
    )
    log = Path(os.environ["XDG_STATE_HOME"]) / "specialists" / "hooks.log"
    assert "stdin is not JSON" in log.read_text()


def test_session_start_lists_a_running_job_and_specialists(project):
    (project / "specialists" / "sleeper.specialist.yaml").write_text(
        SPEC.format(name="sleeper", command="sleep", args='["30"]', beads="never")
    )
    started = sp("run", "sleeper", "--prompt", "wait", "-b", "--json")
    job_id = json.loads(started.stdout)["id"]
    try:
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline:
            text = context(
                sp("hook", "session-start", input='{"source":"startup"}'), "SessionStart"
            )
            if f"{job_id} sleeper running" in text:
                break
            time.sleep(0.1)
        assert f"1 active job(s): {job_id} sleeper running" in text
        assert "available: " in text and "echoer" in text and "sleeper" in text
    finally:
        sp("stop", job_id)


def test_hooks_never_fail_their_host_on_a_broken_store(project):
    (project / ".specialists").mkdir()
    (project / ".specialists" / "owners").write_text("not a directory")
    (project / ".specialists" / "jobs").write_text("not a directory")
    for event in ("user-prompt-submit", "session-start", "pre-tool-use", "post-tool-use", "stop"):
        proc = sp("hook", event, input="{}")
        assert proc.returncode == 0 and proc.stderr == ""


def test_hook_imports_stay_light(project):
    for event in ("user-prompt-submit", "session-start", "pre-tool-use", "post-tool-use", "stop"):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "specialists", "hook", event],
            cwd=project,
            capture_output=True,
            text=True,
            input="{}",
            timeout=60,
        )
        names = {ln.rsplit("|", 1)[-1].strip() for ln in proc.stderr.splitlines() if "|" in ln}
        heavy = {n for n in names if n.split(".")[0] in ("yaml", "mcp", "openai", "asyncio")}
        heavy |= {n for n in names if n.startswith("specialists.catalog") or n == "dataclasses"}
        assert not heavy, f"hook {event} imports {sorted(heavy)}"


# --------------------------------------------------------------------------- beads runs


@pytest.fixture
def bd(tmp_path, project) -> dict:
    bin_dir = tmp_path / "bdbin"
    fake_bd.install_wrapper(bin_dir)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["FAKE_BD_STATE"] = str(tmp_path / "bd-state.json")
    env["FAKE_BD_LOG"] = str(tmp_path / "bd-calls.jsonl")
    (project / ".beads").mkdir()
    return env


def bd_issues(env: dict) -> dict:
    return json.loads(Path(env["FAKE_BD_STATE"]).read_text())["issues"]


def bd_calls(env: dict) -> list[list[str]]:
    return fake_bd.read_calls(Path(env["FAKE_BD_LOG"]))


def test_a_tracked_run_records_pins_and_closes_its_bead(project, bd):
    proc = sp("run", "echoer", "--prompt", "say hi", "--json", env=bd)
    assert proc.returncode == 0, proc.stderr
    job_id = json.loads(proc.stdout)["id"]
    job = json.loads((project / ".specialists" / "jobs" / job_id / "job.json").read_text())
    bead_id = job["bead_id"]
    assert bead_id and job["owns_bead"] is True  # recorded at job creation
    issue = bd_issues(bd)[bead_id]
    assert issue["status"] == "closed" and "completed" in issue["close_reason"]
    assert f"specialists job {job_id}: done" in issue["notes"] and "say hi" in issue["notes"]
    assert "git_sha: " in issue["notes"] and "git_sha: unknown" not in issue["notes"]
    assert [c[0] for c in bd_calls(bd)] == ["create", "update", "close"]


def test_a_failed_run_closes_its_bead_as_failed(project, bd):
    proc = sp("run", "failer", "--prompt", "x", "--json", env=bd)
    job_id = json.loads(proc.stdout)["id"]
    bead_id = json.loads((project / ".specialists" / "jobs" / job_id / "job.json").read_text())[
        "bead_id"
    ]
    issue = bd_issues(bd)[bead_id]
    assert issue["close_reason"].startswith("failed:") and "boom" in issue["notes"]


def test_never_and_no_beads_create_nothing(project, bd):
    assert sp("run", "quiet", "--prompt", "x", env=bd).returncode == 0
    assert sp("run", "echoer", "--prompt", "x", "--no-beads", env=bd).returncode == 0
    assert bd_calls(bd) == []


def test_run_bead_uses_the_bead_as_prompt_and_keeps_it_open(project, bd):
    fake_bd.seed(
        Path(bd["FAKE_BD_STATE"]),
        [
            {
                "id": "bd-9",
                "title": "Ship login",
                "description": "Make login work",
                "dependencies": [{"id": "bd-8", "type": "blocks"}],
            },
            {"id": "bd-8", "title": "Schema", "status": "closed", "notes": "users table added"},
        ],
    )
    proc = sp("run", "echoer", "--bead", "bd-9", "--json", env=bd, input="")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "# Task: Ship login" in out["result"] and "users table added" in out["result"]
    issue = bd_issues(bd)["bd-9"]
    assert issue["status"] == "open"  # the orchestrator owns the input bead
    assert f"specialists job {out['id']}: done" in issue["notes"]
    assert [c[0] for c in bd_calls(bd)] == ["show", "show", "update"]  # no second bead


def test_run_bead_without_bd_is_one_clear_error(project):
    proc = sp("run", "echoer", "--bead", "bd-9", input="")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --bead needs the `bd` CLI")
