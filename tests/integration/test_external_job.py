"""External-job profiles (seed 004) through the CLI, with a fake provider command: a job is
dispatched, watched and collected; a crashed one is reattached by its provider job id, never
dispatched again, and a continuation whose prompt digest differs is refused before any
provider call. Hostile provider answers (a job id with path characters, a capacity conflict,
a digest that is not ours) end the job with one clear reason."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

PROVIDER = Path(__file__).parent.parent / "support" / "fake_provider.py"


def _root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


@pytest.fixture
def provider_dir(tmp_path: Path) -> Path:
    state = tmp_path / "provider"
    root = _root()
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        "[external_job_providers.fake]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(PROVIDER))}, {json.dumps(str(state))}]\n"
    )
    return state


def _spec(name: str, options: dict[str, object], provider: str = "fake") -> None:
    folder = _root() / "specialists"
    folder.mkdir(exist_ok=True)
    runner = {"type": "external-job", "provider": provider, "options": options, "poll_s": 0.05}
    (folder / f"{name}.specialist.yaml").write_text(
        f"metadata: {{name: {name}}}\nexecution: {{runner: {json.dumps(runner)}}}\n"
        'prompt: {task_template: "$prompt"}\n'
    )


def _calls(state: Path) -> list[str]:
    return (state / "calls.log").read_text().splitlines() if (state / "calls.log").exists() else []


def _status(job: str) -> dict:
    out = sp("status", "--job", job, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _record(job: str) -> dict:
    return json.loads((_root() / ".specialists" / "jobs" / job / "external-job.json").read_text())


def test_dispatch_watch_collect(provider_dir: Path) -> None:
    _spec("pro", {"polls": 2})
    out = sp("run", "pro", "--prompt", "Is the plan sound?")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ANSWER: Is the plan sound?"
    assert _calls(provider_dir) == ["dispatch", *["reattach pj-1"] * 3, "result pj-1"]
    (job,) = os.listdir(_root() / ".specialists" / "jobs")
    record = _record(job)
    assert record["provider"] == "fake" and record["provider_job_id"] == "pj-1"
    assert record["state"] == "done" and len(record["prompt_digest"]) == 64
    assert record["url"] == "https://provider.test/c/pj-1"
    feed = sp("feed", "--job", job, "--json").stdout
    assert "dispatched to fake as job pj-1" in feed


def test_an_unknown_provider_is_refused_before_a_job_exists(provider_dir: Path) -> None:
    _spec("ghost", {}, provider="nobody")
    out = sp("run", "ghost", "--prompt", "x")
    assert out.returncode == 2
    assert "external-job provider 'nobody' is not registered (registered: fake)" in out.stderr
    assert not (_root() / ".specialists" / "jobs").exists() or not os.listdir(
        _root() / ".specialists" / "jobs"
    )


@pytest.mark.parametrize("bad", ["../../etc/passwd", "a/b", "x" * 200, "id with space", "--help"])
def test_a_provider_job_id_that_is_not_one_fails_the_job(provider_dir: Path, bad: str) -> None:
    _spec("pro", {"job_id": bad})
    out = sp("run", "pro", "--prompt", "x")
    assert out.returncode == 1
    assert "the provider gave a job id that is not one" in out.stderr
    assert [c for c in _calls(provider_dir) if not c.startswith("dispatch")] == []


def test_a_capacity_conflict_fails_closed_naming_the_blocking_job(provider_dir: Path) -> None:
    _spec("pro", {"capacity": "pj-77"})
    out = sp("run", "pro", "--prompt", "x")
    assert out.returncode == 1
    assert "capacity all seats busy (blocked by provider job pj-77)" in out.stderr


def test_a_job_the_provider_failed_or_that_answers_for_another_prompt(provider_dir: Path) -> None:
    _spec("failing", {"fail": "quota", "polls": 0})
    out = sp("run", "failing", "--prompt", "x")
    assert out.returncode == 1 and "fake job pj-1 failed: quota the provider gave up" in out.stderr
    _spec("swapped", {"digest": "0" * 64, "polls": 0})
    out = sp("run", "swapped", "--prompt", "x")
    assert out.returncode == 1 and "is for another prompt" in out.stderr
    assert "result pj-2" not in _calls(provider_dir)  # never collected


def test_a_crashed_job_is_reattached_not_redispatched(provider_dir: Path) -> None:
    _spec("pro", {"hold": True})
    out = sp("run", "pro", "--prompt", "Long question", "--background")
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip()
    wait_until(lambda: "reattach pj-1" in _calls(provider_dir), 60, "the first look")
    supervisor = _status(job)["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: _status(job)["status"] == "error", 60, "recovery")
    assert _record(job)["provider_job_id"] == "pj-1"

    # Another prompt: refused before any provider call, nothing dispatched.
    before = len(_calls(provider_dir))
    other = sp("run", "pro", "--continue", job, "--prompt", "Another question")
    assert other.returncode == 1 and "refusing to redispatch" in other.stderr, other.stderr
    assert len(_calls(provider_dir)) == before

    # The same prompt: reattached by its provider job id, collected when it is done.
    (provider_dir / "release-pj-1").write_text("")
    again = sp("run", "pro", "--continue", job, "--prompt", "Long question")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "ANSWER: Long question"
    assert [c for c in _calls(provider_dir) if c.startswith("dispatch")] == ["dispatch"]


def test_stop_cancels_at_the_provider(provider_dir: Path) -> None:
    _spec("pro", {"hold": True})
    job = sp("run", "pro", "--prompt", "x", "--background").stdout.strip()
    wait_until(lambda: "reattach pj-1" in _calls(provider_dir), 60, "the first look")
    assert sp("stop", job).returncode == 0
    wait_until(lambda: _status(job)["status"] == "cancelled", 60, "the stop")
    assert "cancel pj-1" in _calls(provider_dir)
    assert _record(job)["state"] == "cancelled"


def test_a_workflow_resume_reattaches_a_key_whose_supervisor_died(
    provider_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key's child dies with its supervisor while its provider job runs; `workflow
    resume` re-runs the key by reattaching to that provider job: one dispatch in all."""
    from specialists.fronts.cli.main import main
    from tests.support.workflows import keys, result, store, wait_ended

    _spec("pro", {"hold": True})
    folder = _root() / ".specialists" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ask.yaml").write_text("steps:\n  - run: {key: ask, agent: pro, task: Deep one}\n")
    assert main(["workflow", "run", "ask", "--detach"]) == 0
    wf = capsys.readouterr().out.strip()
    project = _root()
    wait_until(lambda: keys(project, wf).get("ask") is not None, 60, "the child's launch")
    child = keys(project, wf)["ask"].job
    wait_until(lambda: "reattach pj-1" in _calls(provider_dir), 60, "the first look")
    os.kill(_status(child)["supervisor_pid"], signal.SIGKILL)
    assert wait_ended(project, wf).status == "error"
    (provider_dir / "release-pj-1").write_text("")
    assert main(["workflow", "resume", wf, "--detach"]) == 0
    again = capsys.readouterr().out.strip()
    assert wait_ended(project, again).status == "done"
    assert result(project, again)["ask"]["output"] == "ANSWER: Deep one"
    assert [c for c in _calls(provider_dir) if c.startswith("dispatch")] == ["dispatch"]
    newest = keys(project, again)["ask"]
    assert newest.resolved_context == "continued"
    assert store(project).read_record(newest.job).thread["continues"] == child
    assert _record(newest.job)["reattached_from"] == child
