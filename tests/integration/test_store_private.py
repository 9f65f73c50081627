"""Job data is private (issue 7 item 7): prompts, answers and logs are readable by their
owner alone. `.specialists/`, every job directory and every file in them are 0700/0600
whatever the umask; a store made by an older version is tightened when next used."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from specialists.store.view import current_status
from tests.support.jobs import echo_project, wait_for


@pytest.fixture
def root() -> Path:
    return echo_project()


def modes(top: Path) -> dict[str, int]:
    """Mode of every directory and file under `top` (symlinks have no mode of their own)."""
    found = {".": stat.S_IMODE(top.lstat().st_mode)}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except FileNotFoundError:  # the job's supervisor, still exiting, removed it
                continue
            if not stat.S_ISLNK(st.st_mode):
                found[str(path.relative_to(top))] = stat.S_IMODE(st.st_mode)
    return found


def wanted_mode(path: Path) -> int:
    if path.is_dir():
        return 0o700
    # The job's git hook script (process/jobenv.py) must run: executable, by its owner only.
    return 0o700 if path.parent.name == "git-hooks" else 0o600


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=["umask 000", "umask 022"])
def test_everything_in_the_store_is_private_whatever_the_umask(capsys, root, umask):
    store = JobStore(state_dir(root), news=NEWS)
    old = os.umask(umask)
    try:
        assert main(["run", "echo", "--prompt", "in the foreground"]) == 0
        assert main(["run", "echo", "--background", "--prompt", "in the background"]) == 0
        job_id = capsys.readouterr().out.strip().splitlines()[-1]
        wait_for(lambda: not current_status(store, job_id).active, 60, "the background job")
        assert main(["status"]) == 0  # writes the finished-jobs cache
        post_request(store.job_dir(job_id), "steer", "a request file")
    finally:
        os.umask(old)
    found = modes(store.root)
    wanted = {name: wanted_mode(store.root / name) for name in found if name != "."}
    wanted["."] = 0o700
    assert {k: oct(v) for k, v in found.items()} == {k: oct(v) for k, v in wanted.items()}
    names = {Path(n).name for n in found}
    for expected in (
        "job.json",
        "status.json",
        "events.jsonl",
        "result.txt",
        "stdout.log",
        "stderr.log",
        "supervisor.log",
        ".finished.json",
        job_id,
    ):
        assert expected in names, expected  # the walk saw each kind of file


def test_an_older_open_store_is_tightened(capsys, root):
    store = JobStore(state_dir(root), news=NEWS)
    (store.jobs_dir).mkdir(parents=True)
    os.chmod(store.root, 0o755)
    os.chmod(store.jobs_dir, 0o755)
    assert main(["run", "echo", "--prompt", "hi"]) == 0
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.jobs_dir.stat().st_mode) == 0o700
