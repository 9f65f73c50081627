"""Commits made inside a job carry the job (and bead) as git trailers, and the repository's own
hooks still run (process/jobenv.py). Real git, real hook scripts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from specialists.process.jobenv import GIT_PARAMETERS_ENV, agent_env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, os.environ, "init", "-q", "-b", "main")
    git(path, os.environ, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def job(tmp_path: Path, job_id: str = "0badc0de", bead: str | None = "proj-7") -> Path:
    job_dir = tmp_path / ".specialists" / "jobs" / job_id
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(json.dumps({"id": job_id, "bead_id": bead}))
    return job_dir


def git(repo: Path, env: dict[str, str] | os._Environ[str], *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=repo, env=dict(env), capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", "--allow-empty", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def message(repo: Path) -> str:
    return git(repo, os.environ, "log", "-1", "--format=%B")


def hook(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_a_commit_carries_the_job_and_bead(repo: Path, tmp_path: Path) -> None:
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "fix the thing").returncode == 0
    assert message(repo) == (
        "fix the thing\n\nSpecialists-Job: 0badc0de\nSpecialists-Bead: proj-7\n\n"
    )


def test_without_a_bead_only_the_job(repo: Path, tmp_path: Path) -> None:
    env = agent_env(job(tmp_path, bead=None))
    assert commit(repo, env, "-m", "x").returncode == 0
    assert message(repo).strip().splitlines()[-1] == "Specialists-Job: 0badc0de"
    assert "Bead" not in message(repo)


def test_the_repositorys_own_hooks_still_run_and_can_refuse(repo: Path, tmp_path: Path) -> None:
    ran = tmp_path / "pre-commit-ran"
    hook(repo / ".git" / "hooks" / "pre-commit", f"touch {ran}\n")
    hook(
        repo / ".git" / "hooks" / "commit-msg",
        'grep -q WIP "$1" && { echo "no WIP commits" >&2; exit 1; }\n'
        "printf '\\nReviewed-By: the hook\\n' >> \"$1\"\n",
    )
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "real work").returncode == 0
    assert ran.exists()
    text = message(repo)
    assert "Reviewed-By: the hook" in text and "Specialists-Job: 0badc0de" in text
    refused = commit(repo, env, "-m", "WIP")
    assert refused.returncode != 0 and "no WIP commits" in refused.stderr
    assert message(repo) == text  # no new commit


def test_a_repository_hooks_path_such_as_husky_is_honoured(repo: Path, tmp_path: Path) -> None:
    ran = tmp_path / "husky-ran"
    hook(repo / ".husky" / "pre-commit", f"touch {ran}\n")
    git(repo, os.environ, "config", "core.hooksPath", ".husky")
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "x").returncode == 0
    assert ran.exists() and "Specialists-Job: 0badc0de" in message(repo)


def test_no_verify_skips_their_checks_but_keeps_the_trailer(repo: Path, tmp_path: Path) -> None:
    hook(repo / ".git" / "hooks" / "pre-commit", "exit 1\n")
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "x").returncode != 0
    assert commit(repo, env, "--no-verify", "-m", "x").returncode == 0
    assert "Specialists-Job: 0badc0de" in message(repo)


def test_an_amend_does_not_repeat_the_trailers(repo: Path, tmp_path: Path) -> None:
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "x").returncode == 0
    assert commit(repo, env, "--amend", "--no-edit").returncode == 0
    assert message(repo).count("Specialists-Job:") == 1


def test_the_users_own_git_parameters_still_apply(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(GIT_PARAMETERS_ENV, "'user.name=Param Person'")
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-m", "x").returncode == 0
    assert git(repo, os.environ, "log", "-1", "--format=%an").strip() == "Param Person"
    assert "Specialists-Job" in message(repo)


def test_a_job_inside_a_job_signs_with_its_own_id_and_keeps_the_users_hooks(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    hook(repo / ".git" / "hooks" / "pre-commit", f"echo x >> {ran}\n")
    outer = agent_env(job(tmp_path, "aaaaaaaa", bead="b-outer"))
    monkeypatch.setattr(os, "environ", outer)  # the nested supervisor runs in the outer agent
    inner = agent_env(job(tmp_path, "bbbbbbbb", bead=None))
    assert commit(repo, inner, "-m", "x").returncode == 0
    text = message(repo)
    assert "Specialists-Job: bbbbbbbb" in text
    assert "aaaaaaaa" not in text and "b-outer" not in text
    assert ran.read_text() == "x\n"  # the repository's hook ran once, not once per job


def test_an_editor_template_with_comments_keeps_the_trailer_in_the_message(
    repo: Path, tmp_path: Path
) -> None:
    template = tmp_path / "msg.txt"
    template.write_text("subject line\n\nbody\n# a comment git strips\n")
    env = agent_env(job(tmp_path))
    assert commit(repo, env, "-F", str(template), "--cleanup=strip").returncode == 0
    assert message(repo) == (
        "subject line\n\nbody\n\nSpecialists-Job: 0badc0de\nSpecialists-Bead: proj-7\n\n"
    )
