"""The bash guard (R-B1..R-B5) and the oversized-result guard (R-O1..R-O3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.events.spill import SpillLimits
from specialists.native.bash_guard import classify_bash
from specialists.native.guards import guard_result

BLOCKED = [
    ("sleep 60", "sleep 60"),
    ("sleep 20", "sleep 20"),
    ("sleep 1m", "sleep 1m"),
    ("sleep 2h", "sleep 2h"),
    ("sleep 10 15", "sleep 10 15"),
    ("sleep infinity", "sleep infinity"),
    ("make && sleep 30 && make check", "sleep 30"),
    ("tail -f build.log", "tail -f"),
    ("tail -F x", "tail -f"),
    ("tail --follow=name x", "tail -f"),
    ("watch -n1 ls", "watch"),
    ("while true; do date; done", "while true"),
    ("while :; do date; done", "while :"),
    ("npm run dev", "npm run dev"),
    ("npm start", "npm start"),
    ("pnpm dev", "pnpm dev"),
    ("yarn run serve", "yarn run serve"),
    ("bun start", "bun start"),
    ("PORT=3000 npm run dev", "npm run dev"),
    ("vite", "vite"),
    ("next dev", "next dev"),
    ("python -m http.server 8000", "python -m http.server"),
    ("python3 -m http.server", "python -m http.server"),
    ("php -S localhost:8000", "php -S"),
    ("rails s", "rails s"),
    ("bin/rails server", "rails s"),
    ("docker compose up", "docker compose up"),
    ("docker compose up --detach=false", "docker compose up"),
    ("docker-compose up web", "docker compose up"),
    ("cd app && npm run dev | tee log", "npm run dev"),
    ("/bin/sleep 100", "sleep 100"),
    # wrappers and wrapped idioms (issue 21 item 7; the generated cases are in
    # test_bash_guard_properties.py)
    ("nohup sleep 600", "sleep 600"),  # nohup does not detach: only `&` does
    ("setsid vite", "vite"),  # runs in place unless -f
    ("timeout 60 tail -f log", "timeout 60 tail -f"),
    ("bash -c 'sleep 60'", "sleep 60"),
    ("python3 -c 'import time; time.sleep(60)'", "time.sleep(60)"),
    ("timeout 300 sleep 299", "timeout 300 sleep 299"),
    # an unquoted heredoc's body is expanded: its substitutions run
    ("cat > notes <<EOF\nlog: `tail -f app.log`\nEOF", "tail -f"),
    ("cat > notes <<EOF\nnow: $(sleep 60)\nEOF", "sleep 60"),
]

ALLOWED = [
    "sleep 2",
    "sleep 19",
    "sleep 0.5",
    "sleep $DELAY",
    "echo 'sleep 600'",
    'git commit -m "tail -f and npm run dev"',
    "tail -n 50 build.log",
    "npm run build",
    "npm test",
    "npm dev",  # not an npm command
    "vite build",
    "docker compose up -d",
    "docker compose up --detach",
    "docker compose up -dV",
    "npm run dev &",
    "sleep 300 & echo $! > pid",  # the sleep runs in the background
    "npm run dev & sleep 5",
    "nohup npm run dev > log 2>&1 &",
    "timeout 10 tail -f log",  # ends within the limit
    "while read line; do echo $line; done < f",
    "ls 'unbalanced",
    "",
    # a quoted heredoc's body is data: backticks and $( ) in it never run (a README or a
    # commit message written with one was refused)
    "cat > README.md <<'EOF'\nFollow the log with `tail -f app.log`.\nEOF",
    'git commit -F - <<"EOF"\nStart with `npm run dev`, wait with $(sleep 60)\nEOF',
    "cat <<-'EOF' > doc.md\n\t`while true; do x; done`\n\tEOF\necho ok",
]


@pytest.mark.parametrize(("command", "pattern"), BLOCKED)
def test_blocking_commands_are_flagged_with_a_reason_that_names_the_way_out(
    command: str, pattern: str
) -> None:
    verdict = classify_bash(command)
    assert verdict.pattern == pattern
    assert "bg_run" in verdict.reason and "sleep" in verdict.reason
    assert 'bash.guard to "warn"' in verdict.reason


@pytest.mark.parametrize("command", ALLOWED)
def test_other_commands_are_left_alone(command: str) -> None:
    assert not classify_bash(command).flagged, classify_bash(command)


def test_the_sleep_limit_is_configurable() -> None:
    assert not classify_bash("sleep 30", sleep_limit_s=60).flagged
    assert classify_bash("sleep 5", sleep_limit_s=5).flagged


def test_oversized_results_are_spilled_except_reads(tmp_path: Path) -> None:
    limits = SpillLimits(max_chars=100, head_chars=10, tail_chars=10)
    big = "a" * 50 + "b" * 200 + "c" * 50
    out = guard_result("bash", big, tmp_path, limits=limits)
    assert out.startswith("a" * 10) and out.endswith("c" * 10)
    assert "use the read tool with offset and limit".lower() in out.lower()
    assert guard_result("read", big, tmp_path, limits=limits) == big
    assert guard_result("bash", "small", tmp_path, limits=limits) == "small"
