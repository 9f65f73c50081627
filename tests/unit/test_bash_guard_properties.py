"""The bash guard, generated (issue 21 item 7): a blocking idiom stays blocked however it is
wrapped (shells' -c, env, timeout, nice, nohup, xargs, chains, subshells, substitutions),
interpreters' blocking idioms are seen, and ordinary commands, wrapped the same ways, are
never refused. Hypothesis builds the commands; the named cases pin what each wrapper does."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.toolset.bash_guard import classify_bash

LIMIT = 20

BLOCKING = [
    "sleep 60",
    "sleep 1m",
    "sleep infinity",
    "tail -f build.log",
    "tail -fn 20 x.log",
    "journalctl -fu nginx",
    "docker logs -f web",
    "kubectl logs --follow pod/x",
    "watch -n1 ls",
    "npm run dev",
    "python3 -m http.server",
    "docker compose up",
    "python3 -c 'import time; time.sleep(60)'",
    "python -c 'from time import sleep; sleep(300)'",
    "python3 -c 'import asyncio; asyncio.run(asyncio.sleep(90))'",
    'python3 -c "while True: pass"',
    "python3 -c 'import http.server as h; h.HTTPServer((\"\", 8000), None).serve_forever()'",
    "node -e 'setTimeout(() => {}, 60000)'",
    "node -e 'setInterval(() => console.log(1), 1000)'",
    "node -e 'require(\"http\").createServer().listen(3000)'",
    "perl -e 'sleep 60'",
    "perl -le 'sleep(120)'",
    "ruby -e 'sleep 30'",
    "ruby -e 'loop do; end'",
    "php -r 'sleep(45);'",
    "while true; do date; done",
    "while sleep 5; do date; done",
    "until false; do date; done",
    "for ((;;)); do date; done",
]

ORDINARY = [
    "ls -la",
    "git status",
    "git log --oneline -5",
    "make",
    "pytest -q tests/unit",
    "npm test",
    "npm run build",
    "grep -rn 'sleep 60' src",
    "echo 'while true; do x; done'",
    "sleep 2",
    "sleep 0.5",
    "tail -n 50 build.log",
    "python3 -c 'print(1 + 1)'",
    "python3 -c 'import time; time.sleep(0.5)'",
    "python3 -c 'for i in range(3): print(i)'",
    "python3 -c 'while True:\n    break'",
    "node -e 'console.log(42)'",
    "node -e 'setTimeout(() => console.log(1), 100)'",
    "perl -e 'print 1'",
    "ruby -e 'puts 1'",
    "cat <<EOF\nsleep 600\ntail -f x\nEOF",
    "docker compose up -d",
    "while read line; do echo $line; done < f",
    "for f in *.py; do wc -l $f; done",
    "sleep 300 & echo $!",
    "command -v sleep",
]


EXEC_WRAPPERS = {"env", "env -i", "nice", "nohup", "timeout long", "timeout -s", "stdbuf"}
EXEC_WRAPPERS |= {"sudo", "assignment"}  # they run one program: a compound goes in `sh -c`


def _simple(command: str) -> bool:
    return not set(command) & set(";|&()`{}\n") and not command.startswith(
        ("for ", "while ", "until ", "if ")
    )


def _wrap(inner: str, wrapper: str) -> str:
    if wrapper in EXEC_WRAPPERS and not _simple(inner):
        inner = f"sh -c {shlex.quote(inner)}"
    return {
        "plain": inner,
        "bash -c": f"bash -c {shlex.quote(inner)}",
        "sh -c": f"sh -c {shlex.quote(inner)}",
        "bash -lc": f"bash -lc {shlex.quote(inner)}",
        "zsh -c": f"zsh -c {shlex.quote(inner)}",
        "env": f"env FOO=1 BAR=2 {inner}",
        "env -i": f"env -i PATH=/usr/bin {inner}",
        "nice": f"nice -n 10 {inner}",
        "nohup": f"nohup {inner}",
        "timeout long": f"timeout 300 {inner}",
        "timeout -s": f"timeout -s KILL 10m {inner}",
        "stdbuf": f"stdbuf -oL {inner}",
        "time": f"time {inner}",
        "sudo": f"sudo -u nobody {inner}",
        "chain ;": f"echo start; {inner}",
        "chain &&": f"make && {inner} && echo done",
        "chain ||": f"false || {inner}",
        "pipe": f"{inner} | tee out.log",
        "subshell": f"( {inner} )",
        "group": f"{{ {inner}; }}",
        "if": f"if true; then {inner}; fi",
        "substitution": f'echo "$( {inner} )"',
        "backticks": f"echo `{inner}`" if "`" not in inner and "'" not in inner else inner,
        "eval": f"eval {shlex.quote(inner)}",
        "redirect": f"{inner} > out.log 2>&1",
        "assignment": f"FOO=bar {inner}",
        "cd first": f"cd /tmp && {inner}",
    }[wrapper]


WRAPPERS = [
    "plain", "bash -c", "sh -c", "bash -lc", "zsh -c", "env", "env -i", "nice", "nohup",
    "timeout long", "timeout -s", "stdbuf", "time", "sudo", "chain ;", "chain &&", "chain ||",
    "pipe", "subshell", "group", "if", "substitution", "backticks", "eval", "redirect",
    "assignment", "cd first",
]  # fmt: skip


@settings(max_examples=250, deadline=None)
@given(
    st.sampled_from(BLOCKING),
    st.lists(st.sampled_from(WRAPPERS), min_size=1, max_size=3),
)
def test_a_blocking_idiom_stays_blocked_however_it_is_wrapped(
    inner: str, wrappers: list[str]
) -> None:
    command = inner
    for wrapper in wrappers:
        command = _wrap(command, wrapper)
    verdict = classify_bash(command, sleep_limit_s=LIMIT)
    assert verdict.flagged, command
    assert "bg_run" in verdict.reason


@settings(max_examples=250, deadline=None)
@given(
    st.sampled_from(ORDINARY),
    st.lists(st.sampled_from(WRAPPERS), min_size=0, max_size=3),
)
def test_an_ordinary_command_is_never_refused_however_it_is_wrapped(
    inner: str, wrappers: list[str]
) -> None:
    command = inner
    for wrapper in wrappers:
        command = _wrap(command, wrapper)
    assert not classify_bash(command, sleep_limit_s=LIMIT).flagged, command


@settings(max_examples=250, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_classified_without_an_error(text: str) -> None:
    classify_bash(text)  # never raises, whatever the bytes


@pytest.mark.parametrize(
    ("command", "flagged"),
    [
        ("timeout 5 sleep 60", False),  # bounded below the limit
        ("timeout 19 tail -f x", False),
        ("timeout 20 tail -f x", True),
        ("timeout 1h tail -f x", True),
        ("timeout $T sleep 60", True),  # an unknown bound does not excuse it
        ("setsid -f vite", False),  # forks: returns at once
        ("nohup sleep 600 &", False),
        ("(sleep 60 &)", False),
        ("sleep 60 & wait", True),
        ("sleep 60 & wait $!", True),
        ("make 2>&1 | tee log", False),
        ("npm run dev 2>&1 | tee log", True),  # `2>&1` is no background `&`
        ("sleep 5; sleep 300 &", False),
        ("sleep 300; make &", True),  # only the last part goes to the background
        ("xargs -n1 sleep 60 < list", True),
        ("find . -name '*.log' | xargs tail -f", True),
        ("flock -w 5 /tmp/lock sleep 60", True),
        ("taskset -c 0 sleep 60", True),
        ("chrt -f 10 sleep 60", True),
        ("env -S 'sleep 60'", True),
        ("busybox sh -c 'sleep 60'", True),
        ("bash -o pipefail -c 'sleep 60 | cat'", True),
        ("bash script.sh", False),  # a script file is not read
        ("python3 script.py", False),
        ("while true; do if done_yet; then break; fi; sleep 1; done", False),
        ("python3 -c 'import time\nwhile True:\n    time.sleep(1)'", True),
        ('bash -c "bash -c \\"sh -c \'sleep 60\'\\""', True),
        ("echo $((60 * 2))", False),  # arithmetic, not a substitution
    ],
)
def test_each_wrapper_case(command: str, flagged: bool) -> None:
    assert classify_bash(command, sleep_limit_s=LIMIT).flagged is flagged, command
