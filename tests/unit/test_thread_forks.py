"""Forks (threads/forks.py): a pi session branched for the child, a Claude Code session staged
for `--fork-session`, and the refusals (a fork across runners, a Codex parent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.errors import ConfigError, UserError
from specialists.jobs.store import JobStore
from specialists.runners.base import LaunchSpec
from specialists.runners.claude import claude_argv, session_file, stage_fork
from specialists.threads.forks import fork_pi_session
from specialists.threads.spawn import check_same_runner
from specialists.threads.transports import supports, transport
from tests.support.jobs import new_job
from tests.support.threads import job_caller, spawn, thread_project

HEADER = {"type": "session", "version": 3, "id": "parent-id", "timestamp": "t", "cwd": "/parent"}


def _message(i: int, role: str, **extra: object) -> dict[str, object]:
    return {
        "type": "message",
        "id": f"e{i}",
        "parentId": f"e{i - 1}",
        "message": {"role": role, **extra},
    }


def _write(path: Path, entries: list[dict[str, object]], tail: str = "") -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_pi_fork_gets_a_new_header_in_the_childs_directory_and_no_turn_in_progress(
    tmp_path: Path,
) -> None:
    """What pi --fork does (new id, the child's cwd, parentSession), and the parent's turn in
    progress (an assistant message whose tool call has no result) is cut, with what
    followed it; a finished tool round stays. A line a crash cut short is skipped."""
    done_call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}}
    open_call = {"type": "toolCall", "id": "c2", "name": "spawn_thread", "arguments": {}}
    entries = [
        HEADER,
        _message(1, "user", content="The secret is 4217."),
        _message(2, "assistant", content=[done_call]),
        _message(3, "toolResult", toolCallId="c1", content=[{"type": "text", "text": "ok"}]),
        _message(4, "assistant", content=[{"type": "text", "text": "now splitting"}, open_call]),
        {"type": "custom_message", "id": "e5", "parentId": "e4"},
    ]
    session = tmp_path / "session.jsonl"
    _write(session, entries, tail='{"type": "mess')
    fork_pi_session(session, tmp_path / "child", "/parent/session.jsonl")
    out = _read(session)
    header = out[0]
    assert header["type"] == "session" and header["cwd"] == str(tmp_path / "child")
    assert header["id"] != "parent-id" and header["parentSession"] == "/parent/session.jsonl"
    assert [e["id"] for e in out[1:]] == ["e1", "e2", "e3"]


def test_a_pi_fork_of_a_finished_conversation_keeps_it_whole(tmp_path: Path) -> None:
    entries = [HEADER, _message(1, "user", content="hi"), _message(2, "assistant", content=[])]
    session = tmp_path / "s.jsonl"
    _write(session, entries)
    fork_pi_session(session, tmp_path, "src")
    assert [e.get("id") for e in _read(session)[1:]] == ["e1", "e2"]


def test_a_pi_session_without_a_header_is_refused(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    _write(session, [_message(1, "user", content="hi")])
    with pytest.raises(UserError, match="no header"):
        fork_pi_session(session, tmp_path, "src")
    assert _read(session) == [_message(1, "user", content="hi")]  # untouched


def test_a_claude_fork_is_staged_among_the_childs_directory_sessions(tmp_path: Path) -> None:
    """Claude Code looks for a session to resume only in its directory's folder: the
    snapshot is copied there under a new id, and the first run forks it."""
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    snapshot = tmp_path / "snap.jsonl"
    snapshot.write_text('{"type":"user"}\n')
    child_cwd = tmp_path / "sand box"
    child_cwd.mkdir()
    staged = stage_fork(snapshot, child_cwd, env)
    name = "".join(c if c.isalnum() else "-" for c in str(child_cwd.resolve()))
    assert (
        tmp_path / "cfg" / "projects" / name / f"{staged}.jsonl"
    ).read_text() == snapshot.read_text()
    assert session_file(staged, env) == tmp_path / "cfg" / "projects" / name / f"{staged}.jsonl"
    assert session_file("../../etc/passwd", env) is None
    spec = LaunchSpec(
        job_id="j", job_dir=tmp_path, cwd=child_cwd, prompt="p", system_prompt="", model=None
    )
    argv = claude_argv(spec, session_id="new-id", resume=True, as_root=False, fork_from=staged)
    at = argv.index("--resume")
    assert argv[at : at + 5] == ["--resume", staged, "--fork-session", "--session-id", "new-id"]


def test_a_claude_fork_into_a_path_claude_would_hash_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    snapshot = tmp_path / "snap.jsonl"
    snapshot.write_text("{}\n")
    with pytest.raises(ConfigError, match="too long"):
        stage_fork(snapshot, deep, {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")})


def test_a_fork_across_runners_is_refused_with_the_advice() -> None:
    with pytest.raises(UserError) as caught:
        check_same_runner("native", "pi")
    text = caught.value.one_line()
    assert "cannot fork your native conversation into a pi child" in text
    assert "fresh_context: true" in text
    check_same_runner("pi", "pi")


@pytest.mark.parametrize(
    ("runner", "why"),
    [("codex", "codex exec fork forks the live session"), ("command", "no session")],
)
def test_a_parent_whose_runner_cannot_fork_is_refused_before_anything_exists(
    runner: str, why: str
) -> None:
    project = thread_project()
    record, lock = new_job(JobStore(project / ".specialists", news=None), project, runner=runner)
    reply = spawn(job_caller(project, record.id), fresh_context=None)
    lock.release()
    assert reply.is_error and why in reply.text and "fresh_context: true" in reply.text
    assert not (project / ".specialists" / "threads").exists() or not [
        p for p in (project / ".specialists" / "threads").iterdir() if p.name.startswith("t-")
    ]


def test_the_transports_say_what_they_support() -> None:
    assert transport("pi").fork and transport("claude").fork and transport("native").fork
    assert not transport("codex").fork and not transport("command").fork
    assert "fork" in supports("claude") and "fork" not in supports("codex")
    assert "specialists mcp --job" in supports("codex")


def test_a_claude_snapshot_leaves_out_the_parents_turn_in_progress(tmp_path: Path) -> None:
    """Claude Code 2.1.332 keeps an unanswered tool use on resume, so the snapshot cuts the
    parent's last assistant message (every entry of it: Claude Code writes one per content
    block) when it calls a tool with no result yet; a finished tool round stays."""
    from specialists.threads.forks import snapshot_claude_session

    def assistant(uuid: str, msg: str, block: dict[str, object]) -> dict[str, object]:
        return {"type": "assistant", "uuid": uuid, "message": {"id": msg, "content": [block]}}

    session = "0b6d3f3e-1111-4222-8333-944455556666"
    projects = tmp_path / "config" / "projects" / "-parent"
    projects.mkdir(parents=True)
    entries = [
        {"type": "user", "uuid": "u1", "message": {"content": "The secret is 4217."}},
        assistant("a1", "m1", {"type": "tool_use", "id": "t1", "name": "Bash"}),
        {
            "type": "user",
            "uuid": "u2",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        },
        assistant("a2", "m2", {"type": "text", "text": "splitting now"}),
        assistant("a3", "m2", {"type": "tool_use", "id": "t2", "name": "spawn_thread"}),
    ]
    _write(projects / f"{session}.jsonl", entries, tail='{"type": "assis\n')
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    target = snapshot_claude_session(session, tmp_path / "snap.jsonl", env)
    assert [e["uuid"] for e in _read(target)] == ["u1", "a1", "u2"]
    _write(projects / f"{session}.jsonl", entries[:3])  # nothing in progress: copied whole
    target = snapshot_claude_session(session, tmp_path / "snap2.jsonl", env)
    assert [e["uuid"] for e in _read(target)] == ["u1", "a1", "u2"]
