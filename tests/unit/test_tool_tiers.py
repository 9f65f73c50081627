"""A job gets only what its permission tier grants, on every front (issue 21 item 1).

The table (toolset/tiers.py) is checked against the registry; then each front is driven
with a READ_ONLY job: the job MCP server, the pi sidecar, the native runtime's tools, the pi
runner's `--tools`, and the call path itself (a front that forgot the filter). A thread
child never gets more than its parent.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.base.vocab import PERMISSION_TIERS, TIER_POWERS, narrower_tier
from specialists.features.sandbox.testing import FakeSandbox
from specialists.features.threads.spawn import SpawnRequest, spawn_thread
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import call_tool as mcp_call
from specialists.fronts.mcp.table import served_tools
from specialists.fronts.pi.ops import Front
from specialists.native import agent_table as registry
from specialists.native.agent_tools import Caller, ToolCall, call_tool
from specialists.native.messages import ToolCall as NativeCall
from specialists.native.tool_settings import Settings
from specialists.native.tool_tiers import NEEDS_NOTHING, TOOL_NEEDS, allowed
from specialists.native.tools import execute
from specialists.project import Project
from specialists.runners.native import job_tools
from specialists.runners.pi_extension import for_pi_job
from specialists.store.jobs import JobStore
from tests.support.agent_env import AgentEnv
from tests.support.jobs import new_job
from tests.support.starting import FakeSupervisors
from tests.unit.test_native_runner import make_spec

RUNS_COMMANDS = {"bg_run", "bg_output", "bg_list", "bg_cancel"}
WRITES = {"squash_sandbox"}
BG_REFUSED = "bg_run is not available to a READ_ONLY job: it runs a command"


def _job(project: Path, permission: str, **extra: object) -> str:
    record, lock = new_job(
        JobStore(project / ".specialists", news=None), project, permission=permission, **extra
    )
    lock.release()
    return record.id


# --- the table ------------------------------------------------------------------------------


def test_every_registry_tool_is_placed_exactly_once() -> None:
    names = {t.name for t in registry.TOOLS}
    assert set(TOOL_NEEDS) | NEEDS_NOTHING == names
    assert not set(TOOL_NEEDS) & NEEDS_NOTHING
    assert set(TOOL_NEEDS.values()) <= set().union(*TIER_POWERS.values())


@pytest.mark.parametrize(
    ("tier", "has", "lacks"),
    [
        ("READ_ONLY", set(), RUNS_COMMANDS | WRITES),
        ("BASH_ONLY", RUNS_COMMANDS, WRITES),
        ("LOW", WRITES, RUNS_COMMANDS),
        ("MEDIUM", RUNS_COMMANDS | WRITES, set()),
        ("HIGH", RUNS_COMMANDS | WRITES, set()),
    ],
)
def test_each_tier_gets_its_tools(tier: str, has: set[str], lacks: set[str]) -> None:
    names = {t.name for t in registry.offered(thread=True, tier=tier, env={})}
    assert has <= names and not lacks & names
    assert {"sleep", "spawn_thread", "report_to_parent", "mission"} <= names
    every = {t.name for t in registry.offered(thread=True, tier=None, env={})}
    assert every == {t.name for t in registry.TOOLS}  # not a job: everything


def test_an_unknown_tier_gets_only_bookkeeping() -> None:
    assert not allowed("bg_run", "SUPERUSER") and allowed("sleep", "SUPERUSER")


def test_the_narrower_tier_grants_nothing_either_side_lacks() -> None:
    for a, b in itertools.product(PERMISSION_TIERS, repeat=2):
        meet = narrower_tier(a, b)
        assert TIER_POWERS[meet] <= TIER_POWERS[a] & TIER_POWERS[b], (a, b)
        assert narrower_tier(b, a) == meet
    assert narrower_tier("LOW", "BASH_ONLY") == "READ_ONLY"
    assert narrower_tier("HIGH", "LOW") == "LOW"
    assert narrower_tier("MEDIUM", "BOGUS") == "READ_ONLY"


# --- the call path (a front that forgot the filter) ------------------------------------------


def test_the_call_path_refuses_a_tool_the_tier_does_not_grant(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _job(project, "READ_ONLY")
    caller = Caller(project / ".specialists", f"job-{job}", project, job_id=job)
    for name in sorted(RUNS_COMMANDS | WRITES):
        tool = registry.tool_named(name)
        assert tool is not None
        reply = call_tool(tool, ToolCall({"command": "touch /tmp/pwned"}, caller))
        assert reply.is_error and "\n" not in reply.text
        assert reply.text.startswith(f"error: {name} is not available to a READ_ONLY job")
    assert not list((project / ".specialists").glob("jobs/*/proc*"))
    sleep = registry.tool_named("sleep")
    assert sleep is not None
    assert not call_tool(sleep, ToolCall({"seconds": 5}, caller)).is_error


def test_the_tier_comes_from_the_record_and_a_missing_one_is_the_least(
    isolated_env: AgentEnv,
) -> None:
    """The owner names the job even when a front forgot `job_id`; a job with no readable
    record is READ_ONLY (fail closed), never everything."""
    project = isolated_env.project
    tool = registry.tool_named("bg_run")
    assert tool is not None
    job = _job(project, "READ_ONLY")
    no_job_id = Caller(project / ".specialists", f"job-{job}", project)
    assert call_tool(tool, ToolCall({"command": "true"}, no_job_id)).text.startswith(
        f"error: {BG_REFUSED}"
    )
    ghost = Caller(project / ".specialists", "job-0123abcd", project, job_id="0123abcd")
    assert call_tool(tool, ToolCall({"command": "true"}, ghost)).is_error


# --- the fronts -------------------------------------------------------------------------------


def test_the_job_mcp_server_lists_and_refuses_by_tier(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _job(project, "READ_ONLY", thread={"id": "t-" + "1" * 32})
    ctx = ServerContext(project=Project(project), job_scope=job)
    names = {t.name for t in served_tools(ctx)}
    assert not (RUNS_COMMANDS | WRITES) & names
    assert {"sleep", "report_to_parent", "spawn_thread"} <= names
    out = mcp_call(ctx, "bg_run", {"command": "touch /tmp/pwned"})
    assert out.is_error and out.text == f"error: {BG_REFUSED}, which the tier does not grant"
    medium = ServerContext(project=Project(project), job_scope=_job(project, "MEDIUM"))
    assert {t.name for t in served_tools(medium)} >= RUNS_COMMANDS | WRITES


def test_the_pi_sidecar_lists_and_refuses_by_tier(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _job(project, "READ_ONLY")
    front = Front(project / ".specialists", f"job-{job}", project)
    listed = {t["name"] for t in front.tools({})["tools"]}
    assert not (RUNS_COMMANDS | WRITES) & listed and "sleep" in listed
    with pytest.raises(UserError, match=BG_REFUSED):
        front.call({"tool": "bg_run", "args": {"command": "true"}})
    person = Front(project / ".specialists", "pi-session-1", project)
    assert "bg_run" in {t["name"] for t in person.tools({})["tools"]}


@pytest.mark.parametrize(("tier", "thread"), [("READ_ONLY", False), ("READ_ONLY", True)])
def test_the_pi_runner_activates_only_the_tiers_tools(tier: str, thread: bool) -> None:
    _args, _env, names = for_pi_job(tier, thread)
    assert "sleep" in names and not (RUNS_COMMANDS | WRITES) & set(names)
    assert ("report_to_parent" in names) is thread
    assert set(for_pi_job("MEDIUM", False)[2]) >= RUNS_COMMANDS


def test_the_native_runtime_offers_only_the_tiers_tools(tmp_path: Path) -> None:
    for tier in PERMISSION_TIERS:
        spec = make_spec(tmp_path, permission=tier)
        tools = job_tools(spec, Settings(), {}, notify=lambda _m: None, wall=lambda: 0.0).tools
        assert ("bg_run" in tools) is ("command" in TIER_POWERS[tier]), tier
        assert ("squash_sandbox" in tools) is ("write" in TIER_POWERS[tier]), tier


def test_a_native_read_only_job_calling_bg_run_gets_one_line(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _job(project, "READ_ONLY")
    spec = make_spec(
        project,
        job_id=job,
        job_dir=project / ".specialists" / "jobs" / job,
        permission="READ_ONLY",
    )
    setup = job_tools(spec, Settings(), {}, notify=lambda _m: None, wall=lambda: 0.0)
    result = execute(
        NativeCall("c1", "bg_run", {"command": "touch pwned"}), setup.tools, setup.context
    )
    assert result.is_error and result.text.startswith(BG_REFUSED) and "\n" not in result.text
    assert not (project / "pwned").exists()


# --- a child never gets more than its parent ---------------------------------------------------


def child_spec(project: Path, runner: str = "native", permission: str = "HIGH") -> str:
    """A specialist the child is planned from, on `runner` with `permission`; its name."""
    name = f"child-{runner}-{permission.lower()}"
    block = "{type: command, command: cat}" if runner == "command" else f"{{type: {runner}}}"
    folder = project / "specialists"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.specialist.yaml").write_text(
        f"metadata: {{name: {name}}}\n"
        f"execution:\n  runner: {block}\n  permission_required: {permission}\n"
    )
    return name


def _spawn_from(project: Path, parent: str, specialist: str, **request: object) -> None:
    spawn_thread(
        project / ".specialists",
        f"job-{parent}",
        parent,
        project,
        SpawnRequest(  # type: ignore[arg-type]
            "part", ("root",), fresh_context=True, specialist=specialist, **request
        ),
        sandboxes=FakeSandbox(project),
        now_ms=1,
    )


@pytest.mark.parametrize(
    ("parent", "child", "expected"),
    [
        ("READ_ONLY", "HIGH", "READ_ONLY"),
        ("LOW", "BASH_ONLY", "READ_ONLY"),
        ("MEDIUM", "HIGH", "MEDIUM"),
        ("HIGH", "LOW", "LOW"),
    ],
)
def test_a_thread_child_gets_the_narrower_tier(
    isolated_env: AgentEnv, parent: str, child: str, expected: str, supervisors: FakeSupervisors
) -> None:
    project = isolated_env.project
    _spawn_from(project, _job(project, parent), child_spec(project, permission=child))
    (record,) = supervisors.started
    assert record.permission == expected


def test_a_read_only_job_spawns_no_sandbox_and_no_command_child(
    isolated_env: AgentEnv, supervisors: FakeSupervisors
) -> None:
    project = isolated_env.project
    parent = _job(project, "READ_ONLY")
    with pytest.raises(UserError, match="cannot spawn a sandboxed child"):
        _spawn_from(project, parent, child_spec(project), sandbox=True)
    with pytest.raises(UserError, match="on the command runner"):
        _spawn_from(project, parent, child_spec(project, "command"))
    assert supervisors.started == []
    assert not [p for p in (project / ".specialists" / "threads").iterdir() if p.name[:2] == "t-"]
    _spawn_from(project, _job(project, "BASH_ONLY"), child_spec(project, "command"))  # may
