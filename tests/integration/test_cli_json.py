"""Every reader's `--json` has the shape docs/cli.md's tables give it (issue 22 item 3): one
JSON document per reader (JSON Lines for the two streams), one shape per noun, ids alone on
stdout from commands that start something, and a newline at the end of whatever is printed.
The tables are read from the docs, so a reader that changes its shape fails here until the
docs say so."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobs import echo_project, wait_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
JOB_ID = re.compile(r"[0-9a-f]{8}")

# The concrete command for each row of the readers table ({job}, {mission}, ... filled in).
READERS: dict[str, list[list[str]]] = {
    "`list`": [["list"]],
    "`show NAME`": [["show", "echo"]],
    "`status`": [["status"]],
    "`status JOB`": [["status", "{job}"]],
    "`result JOB`": [["result", "{job}"]],
    "`run --prompt ...` (foreground), `workflow run NAME`": [
        ["run", "echo", "--prompt", "again"],
        ["workflow", "run", "{workflow}", "--no-mission"],
    ],
    "`run --background`, `resume --background`, `bg run`, `workflow run --detach`, `timer set`": [
        ["run", "echo", "--prompt", "hi", "--background"],
        ["bg", "run", "true"],
        ["workflow", "run", "{workflow}", "--detach"],
        ["timer", "set", "600"],
    ],
    "`feed`": [["feed", "--job", "{job}"]],
    "`events`": [["events", "--all"]],
    "`timer list`": [["timer", "list"]],
    "`bg list`": [["bg", "list", "--all"]],
    "`wait`": [["wait", "{job}"]],
    "`asks`": [["asks", "--all"]],
    "`children`": [["children", "{job}"]],
    "`mission list`": [["mission", "list"]],
    "`mission show ID`": [["mission", "show", "{mission}"]],
    "`schedule list`": [["schedule", "list"]],
    "`schedule show ID`": [["schedule", "show", "nightly"]],
    "`workflow list`": [["workflow", "list"]],
    "`workflow show ID`": [["workflow", "show", "{workflow_job}"]],
    "`agents list`": [["agents", "list"]],
    "`doctor`": [["doctor"]],
    "`threads`": [["threads"]],
    "`sandboxes`": [["sandboxes"]],
    "`worktree list`": [["worktree", "list"]],
    "`claims`": [["claims"]],
    "`merge list`": [["merge", "list"]],
    "`clean`": [["clean", "--dry-run"], ["gc", "--days", "30"]],
}

WORKFLOW = "steps:\n  - run: {key: a, agent: echo, task: one}\n"


def tables() -> tuple[dict[str, list[str]], dict[str, str]]:
    """(noun -> keys, reader -> what it prints) from docs/cli.md."""
    text = DOCS.read_text().split("## Output: ids, JSON, newlines", 1)[1].split("\n## ", 1)[0]
    nouns: dict[str, list[str]] = {}
    readers: dict[str, str] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or set(cells[0]) <= {"-"}:
            continue
        if re.fullmatch(r"[a-z ]+", cells[0]) and cells[1].startswith("`"):
            nouns[cells[0]] = re.findall(r"`(\w+)`", cells[1])
        elif cells[0].startswith("`") and cells[0] not in ("`--json`",):
            readers[cells[0]] = cells[1]
    return nouns, readers


def check_noun(obj: Any, noun: str, nouns: dict[str, list[str]], where: str) -> None:
    assert isinstance(obj, dict), f"{where}: a {noun} must be an object, got {obj!r:.100}"
    missing = [k for k in nouns[noun] if k not in obj]
    assert not missing, f"{where}: a {noun} lacks {missing}: {sorted(obj)}"


def check_shape(out: str, shape: str, nouns: dict[str, list[str]], where: str) -> None:
    assert out.endswith("\n"), f"{where}: no newline at the end"
    lines_of = re.fullmatch(r"JSON Lines of ([a-z ]+)", shape)
    if lines_of:
        rows = [json.loads(x) for x in out.splitlines()]
        assert rows, f"{where}: no lines"
        for row in rows:
            check_noun(row, lines_of.group(1), nouns, where)
        return
    data = json.loads(out)  # one document
    noun = re.match(r"([a-z ]+?)(?: \(|$)", shape)
    if noun and noun.group(1) in nouns:
        check_noun(data, noun.group(1), nouns, where)
        return
    assert isinstance(data, dict), f"{where}: a list must be an object"
    for key, inner in re.findall(
        r'"(\w+)": (\[[a-z ]+\]|[a-z ]+|\[\.\.\.\]|bool|\{\.\.\.\})', shape
    ):
        assert key in data, f"{where}: no {key!r} in {sorted(data)}"
        listed = re.fullmatch(r"\[([a-z ]+)\]", inner)
        if listed and listed.group(1) in nouns:
            assert isinstance(data[key], list), f"{where}: {key} is not a list"
            for item in data[key]:
                check_noun(item, listed.group(1), nouns, f"{where} {key}[]")
        elif inner in nouns:
            check_noun(data[key], inner, nouns, f"{where} {key}")


def sp(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *argv],
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_docs_list_every_reader_this_test_runs():
    _, readers = tables()
    assert set(readers) == set(READERS)


@pytest.mark.timeout(600)
def test_every_reader_prints_the_documented_shape_and_starters_print_the_id_alone():
    nouns, readers = tables()
    root = echo_project()
    (root / ".specialists" / "workflows").mkdir(parents=True, exist_ok=True)
    (root / ".specialists" / "workflows" / "one.yaml").write_text(WORKFLOW)
    job = sp("run", "echo", "--prompt", "hi", "--background").stdout.strip()
    assert JOB_ID.fullmatch(job)
    wait_for(lambda: sp("result", job).returncode == 0, 60, "the job's answer")
    mission = sp("mission", "new", "Ship it").stdout.split()[0]
    made = sp("schedule", "create", "nightly", "--every", "1d", "--specialist", "echo",
              "--prompt", "hi")  # fmt: skip
    assert made.returncode == 0, made.stderr
    wf_job = sp("workflow", "run", "one", "--detach").stdout.strip()
    wait_for(lambda: json.loads(sp("status", wf_job, "--json").stdout)["status"] == "done",
             120, "the workflow")  # fmt: skip
    values = {"job": job, "mission": mission, "workflow": "one", "workflow_job": wf_job}
    for row, commands in READERS.items():
        for argv in commands:
            filled = [a.format(**values) for a in argv]
            out = sp(*filled, "--json")
            where = "specialists " + " ".join(filled) + " --json"
            assert out.returncode == 0, f"{where}: exit {out.returncode}: {out.stderr}"
            check_shape(out.stdout, readers[row], nouns, where)
            if readers[row] == "started":
                plain = sp(*filled)  # without --json: the id alone on one line
                assert plain.returncode == 0, plain.stderr
                assert len(plain.stdout.split()) == 1 and plain.stdout.endswith("\n"), (
                    f"specialists {' '.join(filled)}: stdout is {plain.stdout!r}"
                )
