"""Tab completion answers through argcomplete's protocol, as the shell code that
`specialists completion bash|zsh|fish` prints asks it: commands, options, choices, and this
project's job ids (issue 22 item 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.jobs import echo_project, wait_for


def complete(line: str, tmp_path: Path) -> list[str]:
    out = tmp_path / "completions"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_IFS": "\n",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "specialists"],
        env=env, cwd=os.environ["SPECIALISTS_PROJECT_ROOT"], capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [w.strip() for w in out.read_text().split("\n") if w.strip()]


def test_commands_options_choices_and_job_ids_complete(tmp_path):
    assert "status" in complete("sp sta", tmp_path)
    assert complete("sp timer l", tmp_path) == ["list"]
    assert "--json" in complete("sp status --j", tmp_path)
    assert complete("sp completion fi", tmp_path) == ["fish"]
    echo_project()
    started = subprocess.run(
        [sys.executable, "-m", "specialists", "run", "echo", "--prompt", "hi", "-b"],
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    job = started.stdout.strip()
    wait_for(lambda: bool(job), 5, "a job id")
    assert complete(f"sp result {job[:3]}", tmp_path) == [job]
    assert "echo" in complete("sp run ec", tmp_path)
