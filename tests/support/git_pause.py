"""A `git` that stops at one chosen call, so a test can `kill -9` whoever ran it right there.

Put the directory holding this wrapper (`install(dir)`) first on PATH. With
GIT_PAUSE_AT="before:<words>" the first git call whose subcommand starts with <words> (e.g.
"read-tree", "worktree remove") does not run: the wrapper writes its pid to
$GIT_PAUSE_DIR/paused and waits to be killed. With "after:<words>" it runs the real git
first, then stops the same way, its caller still waiting for it. Every other call runs the
real git ($GIT_PAUSE_REAL) unchanged.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

WRAPPER = """#!{python}
import os, subprocess, sys, time
args = sys.argv[1:]
words, i = [], 0
while i < len(args):
    if args[i] == "-c":
        i += 2
        continue
    if args[i].startswith("-") and not words:
        i += 1
        continue
    words.append(args[i])
    i += 1
phase, _, want = os.environ.get("GIT_PAUSE_AT", "").partition(":")
hit = bool(want) and words[: len(want.split())] == want.split()
marker = os.path.join(os.environ.get("GIT_PAUSE_DIR", "/nonexistent"), "paused")
if hit and os.path.exists(marker):
    hit = False  # only the first matching call stops
def stop():
    with open(marker + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(marker + ".tmp", marker)
    while True:
        time.sleep(60)
if hit and phase == "before":
    stop()
code = subprocess.call([os.environ["GIT_PAUSE_REAL"], *args])
if hit and phase == "after":
    sys.stdout.flush()
    stop()
sys.exit(code)
"""


def install(bin_dir: Path) -> dict[str, str]:
    """Write the wrapper as `bin_dir/git`; the environment that puts it in front of git."""
    real = shutil.which("git")
    assert real is not None, "git is not installed"
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "git"
    path.write_text(WRAPPER.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GIT_PAUSE_REAL": real}


def run_until_paused(
    argv: list[str], *, cwd: Path, env: dict[str, str], pause_dir: Path, timeout: float = 60
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `argv`; wait until the paused git says so: (the process, the wrapper's pid)."""
    marker = pause_dir / "paused"
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"it ended before git paused ({proc.returncode}): {out!r} {err!r}")
        assert time.monotonic() < deadline, "git never paused"
        time.sleep(0.02)
    return proc, int(marker.read_text())
