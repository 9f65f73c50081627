"""`status`, `result`, `feed` and the hooks must start fast: no heavy imports on that path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

HEAVY = (
    *("mcp", "openai", "anthropic", "ray", "pydantic", "rich", "httpx", "yaml", "asyncio"),
    "argcomplete",  # shell completion: only when the shell asks (_ARGCOMPLETE)
)

FAST_COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["feed"],
    ["result", "00000000"],
    ["hook", "user-prompt-submit"],
    ["hook", "session-start"],
    ["hook", "pre-tool-use"],
    ["hook", "post-tool-use"],
    ["hook", "stop"],
    ["steer", "00000000", "x"],
    ["stop", "00000000"],
    ["mcp"],  # an MCP client waits for its start (stdin ends at once here)
    ["mcp", "--tools", "core"],
]


def imported_modules(args: list[str], cwd: Path) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "specialists", *args],
        cwd=cwd,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
        input="",
    )
    names = set()
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S.*)$", line)
        if match:
            names.add(match.group(1).strip())
    assert names, f"no -X importtime output; stderr was: {proc.stderr[-500:]}"
    return names


@pytest.mark.parametrize("args", FAST_COMMANDS, ids=lambda a: " ".join(a))
def test_fast_path_imports_nothing_heavy(args, tmp_path):
    names = imported_modules(args, tmp_path)
    heavy = sorted({n for n in names if n.split(".")[0] in HEAVY})
    assert heavy == [], f"`specialists {' '.join(args)}` imports heavy modules: {heavy}"


# What a person waiting on a read verb never pays for: argparse (a plain form is read without
# it), `typing` and `datetime`, and the features (booted only when a job's news needs them).
READ_COMMANDS = [["status"], ["status", "--json"], ["status", "--all"], ["feed"]]
READ_COMMANDS += [["result", "00000000"], ["result", "00000000", "--raw"]]
READ_COMMANDS += [["status", "--job", "00000000"], ["feed", "-j", "00000000"]]
NOT_FOR_READS = ("argparse", "typing", "datetime", "specialists.features", "specialists.supervise")


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a))
def test_a_read_verb_parses_and_boots_nothing_it_does_not_need(args, tmp_path):
    names = imported_modules(args, tmp_path)
    loaded = sorted(n for n in names if n.startswith(NOT_FOR_READS))
    assert loaded == [], f"`specialists {' '.join(args)}` imports {loaded}"


# `status`, `result` and `feed` read the store by text paths: `pathlib` (with `urllib.parse`
# and `ipaddress`, some 5 ms of CPU) would be a sixth of what `status` costs (issue 20: at
# most 3x a bare interpreter's; benchmarks/bench_status.py). Reading an answer clears its
# notices without booting the features.
TEXT_PATH_READS = [["status"], ["status", "--json"], ["status", "00000002"], ["feed"]]
TEXT_PATH_READS += [["feed", "--job", "00000002"], ["feed", "--job", "00000001"]]
TEXT_PATH_READS += [["result", "00000001"], ["result", "00000001", "--json"]]


@pytest.mark.parametrize("args", TEXT_PATH_READS, ids=lambda a: " ".join(a))
def test_the_read_verbs_over_live_and_ended_jobs_never_import_pathlib(args, tmp_path):
    from specialists.store.records import JobStatus

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    jobs = root / ".specialists" / "jobs"
    now = int(time.time() * 1000)
    for n, state in enumerate(("running", "done", "error")):
        job = jobs / f"0000000{n}"
        job.mkdir(parents=True)
        status = JobStatus(
            id=job.name,
            specialist="reviewer",
            status=state,
            started_at_ms=now,
            supervisor_pid=os.getpid(),  # alive: nothing to recover
            runner="pi",
        )
        (job / "status.json").write_text(json.dumps(status.to_dict()))
        (job / "events.jsonl").write_text(
            json.dumps({"seq": 1, "ts": now, "event": "start"}) + "\n"
        )
    (jobs / "00000001" / "result.txt").write_text("the answer\n")
    owned = {"id": "00000001", "owner": ["cli-reader"]}  # reading it clears its notices
    (jobs / "00000001" / "job.json").write_text(json.dumps(owned))
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])  # the user's registration is looked up
    claude.mkdir(parents=True, exist_ok=True)
    (claude / ".claude.json").write_text(json.dumps({"mcpServers": {"specialists": {}}}))
    for _ in range(2):  # the first run writes the finished-jobs index and the health cache
        names = imported_modules(args, root)
    loaded = sorted(n for n in names if n == "pathlib" or n.startswith(NOT_FOR_READS))
    assert loaded == [], f"`specialists {' '.join(args)}` imports {loaded}"
    assert "specialists.store.view" in names or args[0] == "feed"


# The job-control verbs a person waits on, and the listings they look at, are ops of the
# operations table: typed in a plain form they are read without argparse (fronts/cli/
# generated.py), their schema is read from the op's code object (base/opschema.py) and their
# values are NamedTuples, so neither argparse nor `dataclasses` (with the `inspect` it
# imports, some 12 ms, and ~1 ms a class) is on their path (benchmarks/bench_ops.py).
OP_COMMANDS = [["stop", "00000000"], ["steer", "00000000", "x"], ["follow-up", "00000000", "x"]]
OP_COMMANDS += [["interrupt", "00000000"], ["children"], ["timer", "list"], ["asks"]]


@pytest.mark.parametrize("args", OP_COMMANDS, ids=lambda a: " ".join(a))
def test_a_job_control_op_never_imports_argparse_or_dataclasses(args, tmp_path):
    names = imported_modules(args, tmp_path)
    assert "specialists.base.opschema" in names  # the op ran through the table
    loaded = sorted(n for n in names if n in ("argparse", "dataclasses", "inspect"))
    assert loaded == [], f"`specialists {' '.join(args)}` imports {loaded}"


# A hook with nothing to deliver runs on every prompt and tool call: its state directory is
# text too (fronts/hooks/common.py), and the PreToolUse bash guard's settings are NamedTuples
# read only when a config file exists. The events room, which takes Paths, loads only when
# something waits.
QUIET_HOOKS = {
    "user-prompt-submit": {"prompt": "x"},
    "session-start": {"source": "startup"},
    "stop": {"stop_hook_active": False},
    "post-tool-use": {"tool_name": "Bash", "tool_response": {"stdout": "a small result"}},
    "pre-tool-use": {"tool_name": "Write", "tool_input": {"file_path": "a.txt"}},
    "pre-tool-use Bash": {"tool_name": "Bash", "tool_input": {"command": "sleep 600"}},
}
HOOK_NEVER = ("pathlib", "typing", "dataclasses", "inspect")


@pytest.mark.parametrize("case", sorted(QUIET_HOOKS))
def test_a_hook_with_nothing_to_deliver_never_imports_pathlib_or_typing(case, tmp_path):
    hook = case.split()[0]
    data = {"session_id": "quiet", "cwd": str(tmp_path), **QUIET_HOOKS[case]}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "specialists", "hook", hook],
        cwd=tmp_path,
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "specialists.fronts.hooks.common" in names
    loaded = [n for n in HOOK_NEVER if n in names]
    assert loaded == [], f"`specialists hook {case}` imports {loaded}"
    if case == "pre-tool-use Bash":  # the guard did run: the sleep is refused
        assert '"permissionDecision": "deny"' in proc.stdout


# A foreground run loads what its job needs and no more (issue 20: at most 0.15 s of CPU over
# the agent alone; benchmarks/bench_overhead.py measures it). Its budget, tightened to what a
# pi job loads now: a module added to the path must be worth its milliseconds.
RUN_NEVER = (
    *HEAVY,
    "dataclasses",  # some 1 ms a class at import: the path's values are NamedTuples
    "argparse",  # a plain form of `run` is read without it (fronts/cli/commands.py)
    "logging",  # with traceback and tokenize: loaded only when something is logged (base/lazy.py)
    "inspect",
    "difflib",  # a typo's suggestion only
    "tomllib",  # a config file only
    "statistics",  # a spend estimate only
    "hashlib",
    "shutil",  # with bz2 and lzma, some 5 ms: process/lookup.py `which`; a tree removed only
    "specialists.features.missions",  # a run on a mission only
    "specialists.features.asks",  # a job that asked only
    "specialists.features.usage_limits.parse",  # a failed run only
    "specialists.catalog.markdown",  # an agent file only
    "specialists.executors",  # a remote executor only
    "specialists.native.loop",  # the native runner only (the tool table's registry loads)
    "specialists.native.providers",
)
RUN_OURS_BUDGET = 129  # our modules a foreground pi job imports (126 when set: no parser, and
# beads' client only when bd is installed)

PI_SPEC = """\
metadata: {name: tester}
execution: {runner: pi, model: mock/mock-model, permission_required: LOW}
prompt: {system: "Be brief.", task_template: "$prompt"}
"""


def test_a_foreground_pi_run_imports_only_what_its_job_needs(mock_llm, isolated_env):
    from tests.support.mock_llm import Reply

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "tester.specialist.yaml").write_text(PI_SPEC)
    mock_llm.enqueue(Reply("hi"), Reply("hi"))
    # The first run (in a project whose state directory exists) keeps what its definitions
    # parsed to; the second is the one measured: every later run of unchanged definitions.
    (root / ".specialists").mkdir(exist_ok=True)
    argv = ["run", "tester", "--prompt", "hello"]
    first = subprocess.run(
        [sys.executable, "-m", "specialists", *argv], cwd=root, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    names = imported_modules(argv, root)
    loaded = sorted(n for n in names if any(n == m or n.startswith(m + ".") for m in RUN_NEVER))
    assert loaded == [], f"a foreground pi run imports {loaded}"
    ours = sorted(n for n in names if n.split(".")[0] == "specialists")
    assert len(ours) <= RUN_OURS_BUDGET, f"{len(ours)} of our modules: {ours}"
