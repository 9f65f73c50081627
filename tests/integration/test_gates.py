"""Gates on real git repositories with real commands (issue 11 item 3): verdicts, the memo and
its key, timeouts that kill the whole process group, bounded output, and a hostile store."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from specialists.features.gates import memo as memo_mod
from specialists.features.gates.run import OUTPUT_CAP, TAIL_BYTES, run_gate
from specialists.features.gates.spec import GateError, GateSpec, parse_gate
from specialists.features.gates.state import workspace_state
from specialists.store.files import ensure_dir

pytestmark = pytest.mark.integration


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def new_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` with `files` committed on `main`."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(
        tmp_path / "repo", {".gitignore": "build/\n.specialists/\n", "ok.txt": "fail\n"}
    )


def job_dir(repo: Path, name: str = "job-1") -> Path:
    path = repo / ".specialists" / "jobs" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# The gate passes when ok.txt says "pass"; it counts its runs in a file outside the repo.
def counting_gate(tmp_path: Path) -> GateSpec:
    counter = tmp_path / "runs"
    return GateSpec(
        f"echo run >> {counter}; grep -q pass ok.txt || {{ echo 'FAILED: ok.txt'; exit 3; }}"
    )


def runs(tmp_path: Path) -> int:
    counter = tmp_path / "runs"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_a_gate_fails_then_passes_then_is_a_memo_hit(repo: Path, tmp_path: Path):
    """The failure carries the command's tail; once fixed it passes and is memoized; the same
    state again is a hit that does not run the command, and its evidence says so."""
    spec = counting_gate(tmp_path)
    first = run_gate(spec, repo, project=repo, job_dir=job_dir(repo, "j1"))
    assert first.outcome == "failed" and first.exit_code == 3 and first.memo == "miss"
    assert "FAILED: ok.txt" in first.reason() and "exit 3" in first.reason()
    (repo / "ok.txt").write_text("pass\n")
    second = run_gate(spec, repo, project=repo, job_dir=job_dir(repo, "j2"))
    assert second.passed and second.memo == "miss" and runs(tmp_path) == 2
    third = run_gate(spec, repo, project=repo, job_dir=job_dir(repo, "j3"))
    assert third.passed and third.memo == "hit" and runs(tmp_path) == 2
    assert third.memo_of == str(second.evidence)
    evidence = json.loads(third.evidence.read_text())  # type: ignore[union-attr]
    assert evidence["memo"] == "hit" and evidence["memo_of"] == str(second.evidence)
    assert evidence["workspace_key"] == second.workspace_key and evidence["exit_code"] == 0
    failed = json.loads(first.evidence.read_text())  # type: ignore[union-attr]
    assert failed["outcome"] == "failed" and "FAILED: ok.txt" in failed["tail"]
    assert failed["command"] == spec.command and failed["duration_ms"] >= 0
    assert oct(first.evidence.stat().st_mode & 0o777) == "0o600"  # type: ignore[union-attr]


def test_failures_are_never_memoized(repo: Path, tmp_path: Path):
    """A failing gate on an unchanged tree runs again each time (a flaky failure kept would
    block forever)."""
    spec = counting_gate(tmp_path)
    for _ in range(2):
        assert run_gate(spec, repo, project=repo).memo == "miss"
    assert runs(tmp_path) == 2


def test_the_memo_follows_tracked_changes_and_the_environment_not_ignored_files(
    repo: Path, tmp_path: Path
):
    (repo / "ok.txt").write_text("pass\n")
    spec = counting_gate(tmp_path)
    env = dict(os.environ)
    assert run_gate(spec, repo, project=repo, environ=env).memo == "miss"
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored")
    assert run_gate(spec, repo, project=repo, environ=env).memo == "hit"  # ignored: same key
    (repo / "ok.txt").write_text("pass\nmore\n")  # a tracked change
    assert run_gate(spec, repo, project=repo, environ=env).memo == "miss"
    assert run_gate(spec, repo, project=repo, environ=env).memo == "hit"
    env["NODE_ENV"] = "production"  # one of the variables that count
    assert run_gate(spec, repo, project=repo, environ=env).memo == "miss"
    env["UNRELATED_VARIABLE"] = "x"  # not one of them
    assert run_gate(spec, repo, project=repo, environ=env).memo == "hit"
    named = GateSpec(spec.command, env=("UNRELATED_VARIABLE",))
    assert run_gate(named, repo, project=repo, environ=env).memo == "miss"  # named: counts
    (repo / "new_test.py").write_text("untracked, not ignored")
    assert run_gate(spec, repo, project=repo, environ=env).memo == "miss"
    assert runs(tmp_path) == 5


def test_the_key_is_content_only_staged_committed_or_not(repo: Path):
    """The same files give the same key whether they are committed, staged or only on disk;
    our own .specialists/ state never counts even when nothing ignores it."""
    (repo / ".gitignore").write_text("build/\n")  # .specialists/ no longer ignored
    git(repo, "commit", "-qam", "stop ignoring")
    base = workspace_state(repo).key
    (repo / "ok.txt").write_text("changed\n")
    on_disk = workspace_state(repo).key
    assert on_disk != base
    git(repo, "add", "ok.txt")
    assert workspace_state(repo).key == on_disk
    git(repo, "commit", "-qm", "c")
    assert workspace_state(repo).key == on_disk
    job_dir(repo, "churn")
    (repo / ".specialists" / "jobs" / "churn" / "events.jsonl").write_text("{}\n")
    assert workspace_state(repo).key == on_disk
    (repo / "ok.txt").unlink()
    gone = workspace_state(repo)
    assert gone.key not in (on_disk, base) and gone.changed == 1


def test_a_hanging_gate_is_killed_with_its_process_group(repo: Path, tmp_path: Path):
    """The timeout kills the command and what it started in the background; the reason
    says it timed out, and a timeout is never memoized."""
    pidfile = tmp_path / "bg.pid"
    spec = GateSpec(f"sleep 300 & echo $! > {pidfile}; echo started; sleep 300", timeout_s=1)
    started = time.monotonic()
    result = run_gate(spec, repo, project=repo, job_dir=job_dir(repo))
    assert time.monotonic() - started < 30
    assert result.outcome == "timed_out" and not result.passed and result.exit_code is None
    assert "timed out after 1s" in result.reason() and "started" in result.reason()
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the gate's background child survived"
        time.sleep(0.02)
    assert not list(memo_mod.memo_dir(repo).glob("*.json"))  # nothing kept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_a_huge_output_is_bounded(repo: Path):
    """Hundreds of MiB of output cost a bounded tail, in memory and in the evidence."""
    spec = GateSpec("head -c 300000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST LINE; exit 1")
    result = run_gate(spec, repo, project=repo, job_dir=job_dir(repo))
    assert result.outcome == "failed" and result.output_bytes <= OUTPUT_CAP
    assert len(result.tail.encode()) <= TAIL_BYTES
    assert result.reason().endswith("LAST LINE") and len(result.reason()) < 2200
    assert result.evidence is not None and result.evidence.stat().st_size < TAIL_BYTES * 2


def test_a_planted_memo_file_is_a_miss_with_a_warning(repo: Path, tmp_path: Path):
    """A symlink, a FIFO or garbage where a memo entry belongs is never trusted nor
    followed: the gate runs, says why, and its pass replaces the planted name."""
    (repo / "ok.txt").write_text("pass\n")
    spec = counting_gate(tmp_path)
    first = run_gate(spec, repo, project=repo)
    assert first.memo_key is not None
    entry = memo_mod.memo_dir(repo) / f"{first.memo_key}.json"
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({**json.loads(entry.read_text()), "tail": "from a link"}))
    for plant in ("symlink", "fifo", "garbage", "other key"):
        entry.unlink()
        if plant == "symlink":
            entry.symlink_to(secret)
        elif plant == "fifo":
            os.mkfifo(entry)
        elif plant == "garbage":
            entry.write_bytes(b"\xff{not json")
        else:
            entry.write_text(json.dumps({**json.loads(secret.read_text()), "key": "0" * 64}))
        result = run_gate(spec, repo, project=repo)
        assert result.passed and result.memo == "miss", plant
        assert any("memo entry ignored" in w for w in result.warnings), plant
        assert entry.is_file() and not entry.is_symlink(), plant
    assert json.loads(secret.read_text())["tail"] == "from a link"  # never written through
    assert runs(tmp_path) == 5


def test_a_symlinked_memo_directory_is_refused_not_followed(repo: Path, tmp_path: Path):
    (repo / "ok.txt").write_text("pass\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ensure_dir(repo / ".specialists")
    (repo / ".specialists" / "gates").symlink_to(elsewhere)
    result = run_gate(counting_gate(tmp_path), repo, project=repo)
    assert result.passed
    assert any("memo not written" in w and "symbolic link" in w for w in result.warnings)
    assert not any(elsewhere.iterdir())


def test_outside_a_repository_the_gate_runs_unmemoized(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_gate(GateSpec("true"), plain, project=plain)
    assert result.passed and result.memo == "unkeyed" and result.workspace_key is None
    assert any("not in a git working copy" in w for w in result.warnings)


def test_memo_off_always_runs(repo: Path, tmp_path: Path):
    (repo / "ok.txt").write_text("pass\n")
    spec = GateSpec(counting_gate(tmp_path).command, memo=False)
    assert [run_gate(spec, repo, project=repo).memo for _ in range(2)] == ["off", "off"]
    assert runs(tmp_path) == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "non-empty command"),
        ({"command": "x", "timeout_s": 0}, "timeout_s"),
        ({"command": "x", "timeout_s": True}, "timeout_s"),
        ({"command": "x", "bogus": 1}, "unknown field 'bogus'"),
        ({"command": "x", "timeout": 2, "timeout_s": 3}, "both timeout and timeout_s"),
        ({"command": "x", "timeout": "2s"}, "timeout_s must be a number of seconds"),
        ({"command": "x", "env": ["A=B"]}, "not a variable name"),
        (["x"], "command string or an object"),
        ("a\0b", "NUL"),
    ],
)
def test_bad_gate_options_are_one_clear_error(value: object, message: str):
    with pytest.raises(GateError, match=message):
        parse_gate(value)


def test_a_gate_timeout_is_in_seconds_under_either_name():
    """`timeout` reads as a child's own option does; `timeout_s` is the same field."""
    assert parse_gate({"command": "x", "timeout": 2}).timeout_s == 2.0
    assert parse_gate({"command": "x", "timeout_s": 3}).timeout_s == 3.0


def test_the_clean_and_the_overlaid_key_agree_on_tricky_names(repo: Path):
    """A clean tree's key hashes git's listing as it is; a dirty one re-serializes it sorted.
    They must agree byte for byte (names whose order differs between git's tree order and a
    naive sort, a space, an executable bit, a symlink), or the key would not be
    content-only."""
    from specialists.features.gates import state

    for name in ("a-b", "a.c", "a0", "a b", "z"):
        (repo / name).write_text(name)
    (repo / "a").mkdir()
    (repo / "a" / "b").write_text("in a dir")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("a/b")
    uncommitted = workspace_state(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tricky")
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", "HEAD"],
        cwd=repo, capture_output=True, check=True,
    ).stdout  # fmt: skip
    entries = state._parse_ls_tree(listing)
    assert b"".join(b"%s\t%s\0" % (entries[p], p) for p in sorted(entries)) == listing
    committed = workspace_state(repo)
    assert committed.changed == 0 and uncommitted.changed > 0
    assert committed.key == uncommitted.key


def test_a_full_disk_under_the_memo_keeps_the_verdict(repo: Path, tmp_path: Path):
    """No room for the memo or the evidence: the gate still passes, and each store that could
    not be written is a warning, never an exception."""
    from tests.support.tmpfs import fill, small_tmpfs

    (repo / "ok.txt").write_text("pass\n")
    ensure_dir(repo / ".specialists")
    with small_tmpfs(repo / ".specialists" / "gates", size="64k") as full:
        fill(full)
        result = run_gate(counting_gate(tmp_path), repo, project=repo)
        assert result.passed and result.memo == "miss"
        assert any("memo not written" in w for w in result.warnings)
        assert not list(memo_mod.memo_dir(repo).glob("*.json"))
