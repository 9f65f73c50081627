"""File claims (issue 23 item 4): keys across worktrees, all-or-nothing claims, live holders
only, a holder's descendants, the guard's one line, the agent tools and the end hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.native.agent_table import tool_named
from specialists.native.agent_tools import Caller, ToolCall, call_tool
from specialists.native.guards import claim_refusal
from specialists.native.messages import ToolCall as NativeCall
from specialists.native.tools import ALL_TOOLS, execute
from specialists.native.tools.base import ToolContext
from specialists.store.claims import Claim, Claims, claim_key, key_of_arg
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from tests.support.jobs import new_job


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".specialists").mkdir(parents=True)
    (root / ".git").mkdir()
    return root


def _job(project: Path, **extra: object) -> str:
    store = JobStore(project / ".specialists", news=None)
    record, lock = new_job(store, project, **extra)
    lock.release()  # its status names this very process as its supervisor: live
    return record.id


def _kill(project: Path, job_id: str) -> None:
    """The job's supervisor is gone (a pid nobody has): as after kill -9."""
    path = project / ".specialists" / "jobs" / job_id / "status.json"
    data = json.loads(path.read_text())
    data["supervisor_pid"], data["supervisor_start_time"] = 2**22 + 7, 1
    path.write_text(json.dumps(data))


def _end(project: Path, job_id: str) -> None:
    path = project / ".specialists" / "jobs" / job_id / "status.json"
    data = json.loads(path.read_text())
    data["status"] = "done"
    path.write_text(json.dumps(data))


def test_one_file_in_many_worktrees_is_one_key(project: Path) -> None:
    sandboxes = project / ".specialists" / "sandboxes"
    assert claim_key(project / "src" / "a.py", project) == "src/a.py"
    assert claim_key(sandboxes / "t-1" / "src" / "a.py", project) == "src/a.py"
    assert claim_key(sandboxes / "hw-2" / "src" / "a.py", project) == "src/a.py"
    assert claim_key(project / ".github" / "ci.yml", project) == ".github/ci.yml"
    assert claim_key(project, project) == ""
    link = project / "via-link"
    (project / "real").mkdir()
    link.symlink_to(project / "real")
    assert claim_key(link / "x.py", project) == "real/x.py"  # symlinks resolved
    elsewhere = project.parent / "other"
    (elsewhere / ".git").mkdir(parents=True)
    assert claim_key(elsewhere / "b.py", project) == "b.py"


def test_an_agent_names_paths_from_its_own_directory(project: Path) -> None:
    cwd = project / ".specialists" / "sandboxes" / "t-1"
    (cwd / "pkg").mkdir(parents=True)
    assert key_of_arg("pkg/m.py", cwd, project) == ("pkg/m.py", False)
    assert key_of_arg("pkg", cwd, project) == ("pkg", True)  # an existing directory
    assert key_of_arg("docs/", cwd, project) == ("docs", True)
    for bad in ("", ".", "a\0b", "x" * 2000):
        with pytest.raises(UserError):
            key_of_arg(bad, cwd, project)


def test_a_claim_is_all_or_nothing_and_names_the_holder(project: Path) -> None:
    a, b = _job(project), _job(project)
    claims = Claims(project / ".specialists")
    claims.claim(a, [("src/a.py", False)], specialist="executor", note="parser", now_ms=1)
    with pytest.raises(UserError) as refused:
        claims.claim(b, [("src/b.py", False), ("src/a.py", False)], now_ms=2)
    assert f"src/a.py is claimed by job {a} (executor): parser" in refused.value.message
    assert [c.path for c in claims.live()] == ["src/a.py"]  # b got nothing, not even b.py
    # a directory claim covers what is below it, both ways round
    with pytest.raises(UserError, match="is claimed by"):
        claims.claim(b, [("src", True)], now_ms=3)
    claims.claim(b, [("docs", True)], now_ms=4)
    with pytest.raises(UserError, match=r"docs/guide\.md is claimed"):
        claims.claim(a, [("docs/guide.md", False)], now_ms=5)
    # claiming again what one holds is no change
    claims.claim(a, [("src/a.py", False)], now_ms=6)
    assert len([c for c in claims.live() if c.job == a]) == 1


def test_a_crashed_or_ended_holder_blocks_nothing(project: Path) -> None:
    a, b, c = _job(project), _job(project), _job(project)
    claims = Claims(project / ".specialists")
    claims.claim(a, [("x.py", False)], now_ms=1)
    claims.claim(b, [("y.py", False)], now_ms=1)
    _kill(project, a)  # no cleanup ran: its claim is on disk and blocks nothing
    _end(project, b)
    assert [cl.path for cl in claims.all()] == ["x.py", "y.py"]
    assert claims.live() == []
    assert claims.holder(project / "x.py", writer=c) is None
    claims.claim(c, [("x.py", False), ("y.py", False)], now_ms=2)  # and the dead ones go
    assert {(cl.path, cl.job) for cl in claims.all()} == {("x.py", c), ("y.py", c)}


def test_a_holder_and_its_descendants_may_write(project: Path) -> None:
    parent = _job(project)
    child = _job(project, thread={"id": "t-1", "parent": f"job-{parent}"})
    grandchild = _job(project, parent_id=child, thread={"id": "t-2", "parent": f"job-{child}"})
    other = _job(project)
    claims = Claims(project / ".specialists")
    claims.claim(parent, [("lib", True)], specialist="planner", now_ms=1)
    assert claims.lineage(grandchild) == [grandchild, child, parent]
    target = project / "lib" / "m.py"
    assert claims.holder(target, writer=grandchild) is None
    assert claims.holder(target, writer=None) is not None  # the person's own session too
    refused = claim_refusal(project / ".specialists", target, other)
    assert refused is not None and refused.startswith(
        f"lib/m.py is claimed by job {parent} (planner) (its claim of lib/); not written"
    )
    claims.claim(child, [("lib/m.py", False)], now_ms=2)  # under its ancestor's claim


def test_release_some_or_all(project: Path) -> None:
    a = _job(project)
    claims = Claims(project / ".specialists")
    claims.claim(a, [("p.py", False), ("q.py", False), ("r", True)], now_ms=1)
    assert [c.path for c in claims.release(a, [("q.py", False)])] == ["q.py"]
    assert sorted(c.path for c in claims.release(a)) == ["p.py", "r"]
    assert claims.release(a) == []


def test_a_damaged_or_planted_claims_file_holds_nothing(project: Path) -> None:
    a = _job(project)
    folder = project / ".specialists" / "claims"
    folder.mkdir(mode=0o700)
    (folder / "claims.json").write_text("{not json")
    claims = Claims(project / ".specialists")
    assert claims.all() == [] and claims.holder(project / "a.py", writer=None) is None
    (folder / "claims.json").unlink()
    os.mkfifo(folder / "claims.json")  # a FIFO is never opened (it would block the guard)
    assert claims.all() == []
    (folder / "claims.json").unlink()
    (folder / "claims.json").write_text(json.dumps({"schema": 1, "claims": [1, {"path": 2}]}))
    assert claims.all() == []
    claims.claim(a, [("ok.py", False)], now_ms=1)  # a damaged file is replaced whole
    assert [c.path for c in claims.all()] == ["ok.py"]


def test_a_claim_covers_exactly_what_it_names() -> None:
    file = Claim("src/a.py", False, "j")
    folder = Claim("src", True, "j")
    assert file.covers("src/a.py") and not file.covers("src/a.pyc")
    assert folder.covers("src/a.py") and not folder.covers("srcx/a.py")
    assert file.covers("src", is_dir=True) and not file.covers("sr", is_dir=True)


# --- the tools and the guards ----------------------------------------------------------------


def _caller(project: Path, job: str | None, cwd: Path | None = None) -> Caller:
    owner = f"job-{job}" if job else "claude-session"
    return Caller(project / ".specialists", owner, cwd or project, job_id=job)


def _call(name: str, caller: Caller, **args: object):
    tool = tool_named(name)
    assert tool is not None
    return call_tool(tool, ToolCall(args, caller))


def test_the_agent_tools(project: Path) -> None:
    a, b = _job(project, specialist="executor"), _job(project)
    reply = _call("claim_files", _caller(project, a), paths=["src/a.py", "docs/"], note="api")
    assert not reply.is_error, reply.text
    assert [c["path"] for c in reply.data["held"]] == ["src/a.py", "docs"]
    refused = _call("claim_files", _caller(project, b), paths=["docs/x.md"])
    assert refused.is_error and f"docs/x.md is claimed by job {a} (executor): api" in refused.text
    listed = _call("list_claims", _caller(project, None))
    assert f"src/a.py: job {a} (executor) (api)" in listed.text
    not_a_job = _call("claim_files", _caller(project, None), paths=["z.py"])
    assert not_a_job.is_error and "only a job" in not_a_job.text
    released = _call("release_files", _caller(project, a), paths=["docs/"])
    assert [c["path"] for c in released.data["released"]] == ["docs"]
    read_only = _job(project, permission="READ_ONLY")
    denied = _call("claim_files", _caller(project, read_only), paths=["q.py"])
    assert denied.is_error and "not available to a READ_ONLY job" in denied.text


def test_a_path_that_cannot_be_resolved_is_one_clear_refusal(project: Path) -> None:
    """~name of no such user (RuntimeError) and a name too long (OSError) escaped the tool
    as exceptions: a `bug:` line over MCP, the end of a native run."""
    job = _job(project)
    for raw in ("~no-such-user-here/a.py", "x" * 300 + "/" + "y" * 300):
        for tool in ("claim_files", "release_files"):
            reply = _call(tool, _caller(project, job), paths=[raw])
            assert reply.is_error and f"cannot claim {raw[:60]!r}" in reply.text, reply.text


def test_a_claims_file_that_cannot_be_replaced_is_one_clear_error(project: Path) -> None:
    """A directory where claims.json should be: IsADirectoryError escaped claim_files (a
    `bug:` line over MCP); now the one line names the file, and nothing is claimed."""
    job = _job(project)
    (project / ".specialists" / "claims" / "claims.json").mkdir(parents=True)
    reply = _call("claim_files", _caller(project, job), paths=["a.py"])
    assert reply.is_error and "claims.json could not be written: Is a directory" in reply.text
    assert Claims(project / ".specialists").live() == []


def test_claims_past_the_documents_bound_are_refused_not_all_lost(project: Path) -> None:
    """claims.json past the 1 MiB a reader accepts read as damaged, so it held nothing: the
    next claim wrote only its own, and every other job's claims were gone (another job then
    claimed a held file). Now the claim that would pass the bound is refused."""
    holder, other = _job(project), _job(project)
    claims = Claims(project / ".specialists")
    long = "d" * 900
    with pytest.raises(UserError, match="too many claims"):
        for call in range(10):
            keys = [(f"{long}/{call}/{i}.py", False) for i in range(200)]
            claims.claim(holder, keys, note="n" * 300, now_ms=1)
    assert len(claims.live()) == 200 * call  # the refused call claimed nothing
    with pytest.raises(UserError, match=f"claimed by job {holder}"):
        claims.claim(other, [(f"{long}/0/0.py", False)], now_ms=2)


def test_native_write_and_edit_are_refused_with_the_holders_name(project: Path) -> None:
    holder, writer = _job(project, specialist="executor"), _job(project)
    Claims(project / ".specialists").claim(
        holder, [("src/a.py", False)], specialist="executor", now_ms=1
    )
    worktree = project / ".specialists" / "sandboxes" / "t-9"
    (worktree / "src").mkdir(parents=True)
    (worktree / "src" / "a.py").write_text("old\n")
    ctx = ToolContext(cwd=worktree, spill_dir=worktree / "spill", caller=_caller(project, writer))
    edit = {"path": "src/a.py", "edits": [{"oldText": "old", "newText": "x"}]}
    for call in (
        NativeCall("w1", "write", {"path": "src/a.py", "content": "new\n"}),
        NativeCall("e1", "edit", edit),
    ):
        result = execute(call, ALL_TOOLS, ctx)
        assert result.is_error and f"src/a.py is claimed by job {holder} (executor)" in result.text
    assert (worktree / "src" / "a.py").read_text() == "old\n"
    ok = execute(NativeCall("w2", "write", {"path": "src/b.py", "content": "b"}), ALL_TOOLS, ctx)
    assert not ok.is_error and (worktree / "src" / "b.py").read_text() == "b"
    mine = ToolContext(cwd=worktree, spill_dir=worktree / "spill", caller=_caller(project, holder))
    own = NativeCall("w3", "write", {"path": "src/a.py", "content": "h"})
    assert not execute(own, ALL_TOOLS, mine).is_error


def test_a_jobs_end_releases_its_claims(project: Path) -> None:
    from specialists.features.sandbox.plugin import _release_claims
    from specialists.supervise.hooks import JobEnd

    store = JobStore(project / ".specialists", news=None)
    a = _job(project)
    Claims(store.root).claim(a, [("m.py", False)], now_ms=1)
    events: list[tuple[str, dict[str, object]]] = []
    record = store.read_record(a)
    ending = JobEnd(
        store, record, JobStatus(id=a, specialist="tester"), "done", None, None, 1, 2,
        lambda kind, **fields: events.append((kind, fields)), lambda problem: None,
    )  # fmt: skip
    _release_claims(ending)
    assert Claims(store.root).all() == []
    assert events == [("claims_released", {"paths": ["m.py"], "count": 1})]
