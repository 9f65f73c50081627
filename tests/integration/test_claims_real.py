"""File claims on real jobs (issue 23 item 4): a native job claims through its tool and keeps
living; another native job's write, a real pi job's write and a real Claude Code session's
Write are refused with the holder's name; the holder's end releases its claims; a holder
killed with SIGKILL blocks nothing, before anything cleans up after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from specialists.store.claims import Claims
from tests.integration.test_job_processes import root, sp, status, wait_until, write_spec
from tests.support.agent_env import CLAUDE_MOCK_MODEL, AgentEnv
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.processes import wait_dead

pytestmark = pytest.mark.integration
WHY = "(api; its claim of src/)"


def replay(name: str, *turns: dict) -> str:
    """A native specialist `name` whose model turns are `turns` (replay/...)."""
    path = root() / f"{name}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    write_spec(name, f"{{runner: native, model: replay/{path}, permission_required: MEDIUM}}")
    return name


def holder(name: str = "holder") -> str:
    """A live keep-alive job that claimed src/a.py through claim_files (its own tool call)."""
    replay(
        name,
        {"tool_calls": [{"name": "claim_files", "arguments": {"paths": ["src/"], "note": "api"}}]},
        {"text": "claimed"},
    )
    out = sp("run", name, "--prompt", "claim", "--background", "--keep-alive")
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip()
    wait_until(lambda: status(job)["status"] == "waiting", 60, "the holder to wait")
    assert [(c.path, c.job) for c in Claims(root() / ".specialists").live()] == [("src", job)]
    return job


def write_with_native(name: str) -> tuple[str, str]:
    """A native job that writes src/a.py; (its final status, its session's text)."""
    replay(
        name,
        {"tool_calls": [{"name": "write", "arguments": {"path": "src/a.py", "content": "b\n"}}]},
        {"text": "tried"},
    )
    out = sp("run", name, "--prompt", "write", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["id"]
    session = root() / ".specialists" / "jobs" / job / "session.jsonl"
    return status(job)["status"], session.read_text()


@pytest.fixture
def tree() -> Path:
    (root() / "src").mkdir()
    (root() / "src" / "a.py").write_text("a\n")
    return root() / "src" / "a.py"


def test_a_native_claim_refuses_another_native_write_until_the_holder_ends(tree: Path) -> None:
    job = holder()
    state, session = write_with_native("writer")
    assert state == "done"
    assert f"src/a.py is claimed by job {job} (holder) {WHY}; not written" in session
    assert tree.read_text() == "a\n"
    listed = json.loads(sp("claims", "--json").stdout)["claims"]
    assert [(c["path"], c["job"], c["dir"]) for c in listed] == [("src", job, True)]
    assert sp("stop", job).returncode == 0
    wait_until(lambda: status(job)["status"] not in ("waiting", "running"), 60, "the stop")
    assert Claims(root() / ".specialists").all() == []  # released by its end, not just dead
    _, session = write_with_native("writer2")
    assert "Wrote 2 bytes" in session and tree.read_text() == "b\n"


def test_a_holder_killed_with_sigkill_blocks_nothing(tree: Path) -> None:
    job = holder()
    pid = status(job)["supervisor_pid"]
    os.killpg(os.getpgid(pid), signal.SIGKILL)  # the supervisor and its agent, no cleanup
    wait_dead(pid)
    assert [c.job for c in Claims(root() / ".specialists").all()] == [job]  # still on disk
    _, session = write_with_native("writer")
    assert "Wrote 2 bytes" in session and tree.read_text() == "b\n"


PI_SPEC = """\
metadata: {name: pier, description: a pi specialist with our extension}
execution:
  runner: {type: pi, specialists_extension: true}
  model: mock/mock-model
  permission_required: MEDIUM
prompt: {system: "Be brief.", task_template: "$prompt"}
"""


def test_a_real_pi_jobs_write_and_edit_are_refused_with_the_holders_name(
    pi_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv, tree: Path
) -> None:
    job = holder()
    (root() / "specialists" / "pier.specialist.yaml").write_text(PI_SPEC)
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("write", {"path": "src/a.py", "content": "pi\n"})]),
        Reply(
            tool_calls=[
                ToolCall("edit", {"path": "src/a.py", "edits": [{"oldText": "a", "newText": "e"}]})
            ]
        ),
        Reply(tool_calls=[ToolCall("write", {"path": "b.py", "content": "free\n"})]),
        Reply("DONE"),
    )
    out = sp("run", "pier", "--prompt", "change a.py", timeout=180)
    assert out.returncode == 0, out.stderr
    results = [r.tool_results()[-1] for r in mock_llm.model_requests[1:]]  # each call's
    for refused in results[:2]:
        assert f"src/a.py is claimed by job {job} (holder) {WHY}; not written" in refused
    assert results[2] == "Successfully wrote to b.py"
    assert tree.read_text() == "a\n" and (root() / "b.py").read_text() == "free\n"


def test_claude_codes_write_is_denied_by_the_pretooluse_hook_with_the_holders_name(
    claude_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv, tree: Path
) -> None:
    """The person's own Claude Code session, with the hooks `specialists init` installs."""
    assert sp("init").returncode == 0
    job = holder()
    new = tree.parent / "new.py"  # Claude Code writes an existing file only after reading it
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("Write", {"file_path": str(new), "content": "cc\n"})]),
        Reply("DONE"),
    )
    out = subprocess.run(
        [str(claude_bin), "-p", "--model", CLAUDE_MOCK_MODEL, "--permission-mode", "acceptEdits"],
        input="rewrite src/a.py",
        cwd=root(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (refused,) = mock_llm.model_requests[-1].tool_results()
    assert f"src/new.py is claimed by job {job} (holder) {WHY}; not written" in refused
    assert not new.exists()


def test_the_claims_command_lists_and_a_person_releases(tree: Path) -> None:
    job = holder()
    text = sp("claims").stdout
    assert f"src/  job {job} (holder)  api" in text
    refused = sp("claims", "release", "src/")
    assert refused.returncode == 2 and "--job" in refused.stderr
    out = sp("claims", "release", "--job", job)
    assert out.returncode == 0, out.stderr
    assert "released 1 claim" in out.stdout
    assert sp("claims").stdout.strip() == "no files are claimed"
