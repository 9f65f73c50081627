"""The README's examples run as written (issue 22 item 4, issue 19 item 7): the "Use" block
runs whole, offline, in a fresh git project (the replay model it sets up, no key), and every
`sp` / `specialists` command in any of its code blocks parses, so none names a workflow,
command or option that does not exist."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.cli.parser import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
STOPS = ("|", ">", "<", ")", "$(", ";", "&&", "||", "\\")


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def use_block() -> str:
    section = README.read_text().split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    return bash_blocks(section)[0]


def commands(block: str) -> list[list[str]]:
    """Each `sp ...` / `specialists ...` as the shell would split it (up to a pipe, a
    redirection, a `;` or the end of a `$(...)`), with $id as a job id."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        code = line.split("  #", 1)[0].replace("$id", "1a2b3c4d").replace("$wf", "1a2b3c4d")
        lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
        lexer.wordchars += "$=~/.*:-,{}[]\"'"
        lexer.wordchars = lexer.wordchars.replace('"', "").replace("'", "")
        tokens = list(lexer)
        for at, token in enumerate(tokens):
            if token in ("sp", "specialists") and (at == 0 or tokens[at - 1] in (*STOPS, "(")):
                words = []
                for word in tokens[at + 1 :]:
                    if word in STOPS:
                        break
                    words.append(word)
                found.append(words)
    return found


def test_every_command_in_the_readme_parses():
    seen = 0
    for block in bash_blocks(README.read_text()):
        for words in commands(block):
            seen += 1
            try:
                build_parser().parse_args(words)
            except SystemExit as exc:
                pytest.fail(f"README: `sp {' '.join(words)}` does not parse (exit {exc.code})")
    assert seen > 30


@pytest.mark.timeout(600)
def test_the_use_block_runs_offline_in_a_new_project(tmp_path: Path) -> None:
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    lines = [
        line
        for line in use_block().replace("\\\n", " ").splitlines()
        if line.strip() and not line.startswith(("pip install", "cd "))
    ]
    script = tmp_path / "use.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(lines) + "\n")
    bindir = str(Path(sys.executable).parent)  # the venv's `specialists` and `sp`
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    out = subprocess.run(
        ["bash", str(script)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, f"stdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}"
    assert "## Findings (a recorded answer)" in out.stdout  # the reviewer's answer
    assert "(recorded) The first" in out.stdout  # the continued session's next turn
    assert '"status": "done"' in out.stdout  # `sp status $id --json`
    assert "mission" not in out.stderr  # plain runs make no mission (issue 22 item 2)
    assert (project / "specialists" / "config.local.toml").is_file()
    assert "specialists/config.local.toml" in (project / ".gitignore").read_text()
