"""Seed 001 R-H13: with a scoped model list (config.toml `enabled_models`, pi's enabledModels)
spawn_thread uses only a model in it. An override outside it is refused before anything is
made, naming the allowed models; without one, the model the child would get anyway (or the
parent's) if scoped, else the first scoped model. No list: selection as before."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, UserError
from specialists.features.sandbox.testing import FakeSandbox
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.spawn import SpawnRequest, spawn_thread
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.supervise.plan import JobRequest
from tests.support.jobs import make_record
from tests.support.starting import FakeSupervisors
from tests.unit.test_thread_spawn import OWNER

SCOPE = 'enabled_models = ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"]\n'


@dataclass
class ModelStarter:
    """The child's planning, faked: what the specialist or config would give is `default`;
    the plans it was asked for are kept. The start itself is the real one."""

    default: str = "other/spec-model"
    plans: list[JobRequest] = field(default_factory=list)

    def __call__(self, _jobs: JobStore, plan: JobRequest) -> JobRecord:
        self.plans.append(plan)
        model = plan.model or self.default
        return make_record(plan.cwd, prompt=plan.prompt, task=plan.prompt, model=model)


@pytest.fixture
def starts(supervisors: FakeSupervisors, monkeypatch: pytest.MonkeyPatch) -> Starts:
    return Starts(supervisors, monkeypatch)


@dataclass
class Starts:
    supervisors: FakeSupervisors
    monkeypatch: pytest.MonkeyPatch

    def spawn(
        self, tmp_path: Path, starter: ModelStarter, model: str | None, config: str = SCOPE
    ) -> str:
        self.monkeypatch.setattr("specialists.features.threads.spawn.plan_job", starter)
        state = tmp_path / ".specialists"
        state.mkdir(exist_ok=True)
        (state / "config.toml").write_text(config)
        request = SpawnRequest("part", ("root",), fresh_context=True, model=model)
        sandboxes = FakeSandbox(tmp_path)
        spawn_thread(state, OWNER, None, tmp_path, request, sandboxes=sandboxes, now_ms=1)
        return self.supervisors.started[-1].model or ""


def test_an_exact_or_unambiguous_override_is_used(starts: Starts, tmp_path: Path) -> None:
    assert starts.spawn(tmp_path, ModelStarter(), "openai/gpt-5-mini") == "openai/gpt-5-mini"
    assert (
        starts.spawn(tmp_path, ModelStarter(), "claude-sonnet-4-5") == "anthropic/claude-sonnet-4-5"
    )


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("openai/gpt-5", "is not one of them"),
        ("gpt-5-mini-2", "is not one of them"),
        ("OPENAI/gpt-5-mini", "is not one of them"),  # exact, not case-folded
        ("../openai/gpt-5-mini", "is not one of them"),
        ("openai/gpt-5-mini\x1b[2J", "is not one of them"),
    ],
)
def test_an_override_outside_the_scope_is_refused_before_anything_is_made(
    starts: Starts, tmp_path: Path, model: str, said: str
) -> None:
    starter = ModelStarter()
    with pytest.raises(UserError) as info:
        starts.spawn(tmp_path, starter, model)
    line = info.value.message
    assert said in line and "anthropic/claude-sonnet-4-5, openai/gpt-5-mini" in line
    assert "\n" not in line and "\x1b" not in line.split(";")[1]
    assert starter.plans == [] and starts.supervisors.started == []
    assert ThreadStore(tmp_path / ".specialists").all() == ([], [])


def test_an_id_two_providers_share_is_ambiguous(starts: Starts, tmp_path: Path) -> None:
    scope = 'enabled_models = ["a/m", "b/m"]\n'
    with pytest.raises(UserError, match="matches 2 of them"):
        starts.spawn(tmp_path, ModelStarter(), "m", scope)
    assert starts.spawn(tmp_path, ModelStarter(), "b/m", scope) == "b/m"


def test_without_an_override_the_scoped_choice_or_the_first_scoped_model(
    starts: Starts, tmp_path: Path
) -> None:
    starter = ModelStarter()
    assert starts.spawn(tmp_path, starter, None) == "anthropic/claude-sonnet-4-5"  # first scoped
    assert [p.model for p in starter.plans] == [None, "anthropic/claude-sonnet-4-5"]
    kept = ModelStarter(default="openai/gpt-5-mini")  # what it gets anyway is scoped
    assert starts.spawn(tmp_path, kept, None) == "openai/gpt-5-mini"
    assert [p.model for p in kept.plans] == [None]


def test_no_scope_leaves_the_selection_unchanged(starts: Starts, tmp_path: Path) -> None:
    assert starts.spawn(tmp_path, ModelStarter(), "any/model", config="") == "any/model"
    assert starts.spawn(tmp_path, ModelStarter(), None, config="enabled_models = []\n") == (
        "other/spec-model"
    )


def test_a_bad_scope_is_one_config_error(starts: Starts, tmp_path: Path) -> None:
    for text, said in (
        ('enabled_models = "a/b"\n', "expected a list of provider/model names"),
        ('enabled_models = ["a b"]\n', "enabled_models[0]: expected one word"),
        ("enabled_models = [1]\n", "enabled_models[0]"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            starts.spawn(tmp_path, ModelStarter(), None, text)


def test_every_front_refuses_through_the_one_tool(tmp_path: Path) -> None:
    """The native runtime, the pi extension's sidecar and the MCP server all call the one
    spawn_thread of the tool table: the refusal reaches each as the tool's error text."""
    import os

    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import call_tool
    from tests.support.threads import root_caller, spawn, thread_project

    project = thread_project()
    (project / ".specialists").mkdir(exist_ok=True)
    (project / ".specialists" / "config.toml").write_text(SCOPE)
    reply = spawn(root_caller(project), model="openai/gpt-5")
    assert reply.is_error and "openai/gpt-5-mini" in reply.text
    ctx = ServerContext()
    try:
        out = call_tool(
            ctx,
            "spawn_thread",
            {"instructions": "x", "child_of": ["root"], "fresh_context": True, "model": "x/y"},
        )
        assert out.is_error and "enabled_models" in str(out.data), out
    finally:
        ctx.jobs.stop_all(grace=2.0)
    assert not os.path.exists(project / ".specialists" / "jobs") or not os.listdir(
        project / ".specialists" / "jobs"
    )
