"""Screenshots of every view on a real, live workflow: `scripts/screens [--out DIR]`.

A throwaway project (git repository, a `checker` specialist on the native runner) runs the
shipped `parallel_review` recipe and one plain job, their model turns replayed from a
recording (no key, no network; the tools, supervisors and files are real). While the
workflow is under way it captures:

- `top`:  a real `specialists top` in tmux (`tmux capture-pane -e`), drawn to PNG by a
          headless Chromium (top-running.png, top.ansi beside it);
- `web`:  the fleet page and the workflow's page in a headless Chromium (web-fleet.png,
          web-workflow.png);
- `feed`: `specialists feed WF --tree` (feed.txt) and a foreground run's stderr
          (foreground.txt), also drawn to PNG.

`--src DIR` runs another checkout's code with this tool (e.g. `--src /work/main/src` for
"before" pictures). Needs tmux and Debian's chromium. Everything runs with HOME, XDG and
the project in a temporary directory; nothing outside it is touched.
"""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.cdp import Chromium, chromium_path  # noqa: E402

SPECIALIST = """\
specialist:
  metadata:
    name: checker
    description: Reviews a change and runs read-only commands (a demo specialist).
  execution:
    runner: native
    model: replay/{recording}
    permission_required: BASH_ONLY
    timeout_ms: 600000
  prompt:
    system: You check code changes.
"""
ANSWER = {
    "findings": [{"id": "F1", "where": "app.py:3", "problem": "division by zero when n == 0"}],
    "confirmed": ["F1"],
    "refuted": [],
}
# One recording serves every child: its final answer satisfies both recipe schemas.
TURNS = [
    {
        "thinking": "Start from the diff.",
        "text": "I'll read the uncommitted change first, then check the tests.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "git diff HEAD --stat"}}],
        "usage": {"input_tokens": 1800, "output_tokens": 120},
        "delay_ms": 6000,
    },
    {
        "text": "The mean() change divides by len(xs). Waiting for CI before going on.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 120"}}],
        "usage": {"input_tokens": 2300, "output_tokens": 90},
        "delay_ms": 6000,
    },
    {
        "text": "The guard refused the wait; reading the file instead.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "cat missing_file.py"}}],
        "usage": {"input_tokens": 2600, "output_tokens": 80},
        "delay_ms": 6000,
    },
    {
        "text": "Found one real problem: mean([]) raises ZeroDivisionError.\x1b[31m (red?)\x1b[0m",
        "tool_calls": [{"name": "final_answer", "arguments": ANSWER}],
        "usage": {"input_tokens": 2900, "output_tokens": 200},
        "delay_ms": 1500,
    },
    {"text": json.dumps(ANSWER), "usage": {"input_tokens": 3000, "output_tokens": 60}},
]
CONFIG = """\
default_runner = "native"
[providers.replay]
input_price_per_mtok = 3.0
output_price_per_mtok = 15.0
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/screens", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "screens", help="where images go")
    parser.add_argument("--src", type=Path, help="run this source tree's code (a src/ dir)")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway project")
    args = parser.parse_args(argv)
    for tool in ("tmux",):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")
    if chromium_path() is None:
        parser.error("chromium is not installed (apt-get install chromium)")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="sp-screens-"))
    scene = Scene(tmp, args.src.resolve() if args.src else None)
    try:
        scene.run(out)
    finally:
        scene.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"screens: project kept at {tmp / 'proj'}", file=sys.stderr)
    for path in sorted(out.iterdir()):
        print(path)
    return 0


class Scene:
    def __init__(self, tmp: Path, src: Path | None) -> None:
        self.tmp = tmp
        self.proj = tmp / "proj"
        self.env = _env(tmp, src)
        self.sp = [str(REPO / ".venv" / "bin" / "python"), "-m", "specialists"]
        self.tmux = f"sp-screens-{os.getpid()}"
        self.web: subprocess.Popen[str] | None = None
        self.browser: Chromium | None = None

    def cmd(self, *argv: str, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.sp, *argv],
            cwd=self.proj,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            **kw,
        )
        if check and done.returncode != 0:
            raise SystemExit(f"screens: sp {' '.join(argv)} failed: {done.stderr.strip()}")
        return done

    def setup(self) -> None:
        self.proj.mkdir()
        git = ["git", "-c", "user.name=screens", "-c", "user.email=s@example.invalid"]
        subprocess.run(["git", "init", "-q"], cwd=self.proj, check=True)
        (self.proj / "app.py").write_text("def mean(xs):\n    return sum(xs)\n")
        subprocess.run([*git, "add", "."], cwd=self.proj, check=True)
        subprocess.run([*git, "commit", "-qm", "first"], cwd=self.proj, check=True)
        (self.proj / "app.py").write_text(
            "def mean(xs):\n    # the average\n    return sum(xs) / len(xs)\n"
        )
        recording = self.tmp / "review.jsonl"
        recording.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
        (self.proj / "specialists").mkdir()
        (self.proj / "specialists" / "checker.specialist.yaml").write_text(
            SPECIALIST.format(recording=recording)
        )
        (self.proj / ".specialists").mkdir()
        (self.proj / ".specialists" / "config.toml").write_text(CONFIG)

    def run(self, out: Path) -> None:
        self.setup()
        wf = self.cmd(
            "workflow", "run", "parallel_review", "--arg", "reviewer=checker", "--detach"
        ).stdout.split()[-1]
        plain = self.cmd(
            "run",
            "checker",
            "--prompt",
            "Review the last commit for error handling",
            "--background",
        ).stdout.split()[-1]
        print(f"screens: workflow {wf}, plain job {plain}", file=sys.stderr)
        self.wait_for(lambda s: _children(s, wf, "done") >= 4 and _children(s, wf, "running"))
        self.top(out / "top-running", wf, down=5)  # the first child of the second stage
        self.start_web()
        self.web_pages(out, wf)
        feed = self.cmd("feed", wf, "--tree").stdout
        _write_text(out / "feed", feed)
        fg = self.cmd("run", "checker", "--prompt", "Check app.py", check=False)
        _write_text(out / "foreground", fg.stderr + "\n--- stdout ---\n" + fg.stdout)
        self.wait_for(lambda s: s.get(wf, {}).get("status") in ("done", "error", "cancelled"))
        self.top(out / "top-done", wf)
        self.shoot_file(out / "feed.html", out / "feed.png")
        self.shoot_file(out / "foreground.html", out / "foreground.png")
        _write_text(out / "status", self.cmd("status").stdout)

    def statuses(self) -> dict[str, dict[str, Any]]:
        out = {}
        for path in (self.proj / ".specialists" / "jobs").glob("*/status.json"):
            try:
                out[path.parent.name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        return out

    def wait_for(self, predicate: Any, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.statuses()):
            if time.monotonic() > deadline:
                raise SystemExit("screens: timed out waiting for the jobs")
            time.sleep(0.2)

    def _drawn(self, want: str, timeout: float = 90) -> str:
        """The pane once `top` drew its rows and key bar (a loaded machine takes a while)."""
        deadline = time.monotonic() + timeout
        while True:
            ansi = subprocess.run(
                ["tmux", "capture-pane", "-p", "-e", "-t", self.tmux],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            if (want in ansi and "quit" in ansi) or time.monotonic() > deadline:
                time.sleep(2)  # the feed pane fills on its next poll
                return subprocess.run(
                    ["tmux", "capture-pane", "-p", "-e", "-t", self.tmux],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            time.sleep(0.5)

    def top(self, stem: Path, want: str, down: int = 0) -> None:
        """`top` in tmux; `down` presses of the arrow key select a row (its feed shows)."""
        env = " ".join(f"{k}={_sh(v)}" for k, v in self.env.items())
        command = f"cd {_sh(str(self.proj))} && env -i {env} TERM=xterm-256color " + " ".join(
            _sh(a) for a in [*self.sp, "top"]
        )
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.tmux, "-x", "160", "-y", "44", command],
            check=True,
        )
        try:
            self._drawn(want)
            for _ in range(down):
                subprocess.run(["tmux", "send-keys", "-t", self.tmux, "Down"], check=True)
            ansi = self._drawn(want)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", self.tmux], check=False)
        stem.with_suffix(".ansi").write_text(ansi)
        html_path = stem.with_suffix(".html")
        html_path.write_text(_ansi_html(ansi))
        self.shoot_file(html_path, stem.with_suffix(".png"))

    def start_web(self) -> None:
        self.web = subprocess.Popen(
            [*self.sp, "web", "--port", "0"],
            cwd=self.proj,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.web.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.web.stdout.readline()
            found = re.search(r"(http://\S+\?token=\S+)", line)
            if found:
                self.url = found.group(1)
                self.browser = Chromium(self.tmp / "profile", width=1400, height=900)
                return
        raise SystemExit("screens: specialists web printed no URL")

    def web_pages(self, out: Path, wf: str) -> None:
        assert self.browser is not None
        b = self.browser
        b.navigate(self.url)
        b.wait_for("document.querySelectorAll('#fleet tbody tr').length > 2", 30, "rows")
        time.sleep(1)
        b.screenshot(out / "web-fleet.png")
        base, token = self.url.split("/?token=")
        b.navigate(f"{base}/job/{wf}?token={token}")
        b.wait_for("document.querySelectorAll('#feed *').length > 3", 30, "the feed")
        time.sleep(1)
        b.screenshot(out / "web-workflow.png", full_page=True)

    def shoot_file(self, page: Path, png: Path) -> None:
        if self.browser is None:
            self.browser = Chromium(self.tmp / "profile", width=1400, height=900)
        self.browser.navigate(page.as_uri())
        time.sleep(0.5)
        self.browser.screenshot(png, full_page=True)

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()
        if self.web is not None and self.web.poll() is None:
            self.web.send_signal(signal.SIGINT)
            try:
                self.web.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.web.kill()
        if self.proj.is_dir():
            for job, st in self.statuses().items():
                if st.get("status") in ("starting", "running", "waiting"):
                    self.cmd("stop", job, check=False)


def _children(statuses: dict[str, dict[str, Any]], parent: str, status: str) -> int:
    return sum(
        1 for s in statuses.values() if s.get("parent_id") == parent and s.get("status") == status
    )


def _env(tmp: Path, src: Path | None) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "SPECIALISTS_OWNER": "cli-screens",
    }
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _ansi_html(ansi: str) -> str:
    """A terminal capture as a page: rich reads the escapes and writes styled HTML."""
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=160, force_terminal=True, file=io.StringIO())
    for line in ansi.splitlines():
        console.print(Text.from_ansi(line), overflow="ignore", crop=True, no_wrap=True)
    return console.export_html(inline_styles=True, theme=None).replace(
        "<body>", "<body style='background:#101418;color:#e6e6e6'>"
    )


def _write_text(stem: Path, text: str) -> None:
    stem.with_suffix(".txt").write_text(text)
    stem.with_suffix(".html").write_text(
        "<!doctype html><meta charset=utf-8><body style='background:#101418;color:#e6e6e6'>"
        f"<pre style='font:13px monospace'>{html.escape(text)}</pre>"
    )


if __name__ == "__main__":
    sys.exit(main())
