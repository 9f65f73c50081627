"""The workflow ops (base/ops.py): `specialists workflow run|list|show|resume` and the MCP tool
`workflow` are generated from these (docs/workflows.md).

A model gets only the declarative form, inline or as the name of a YAML/JSON workflow in the
project, pinned when checked: a Python workflow is code run on the host, and a model must
never get more power through a workflow than it was granted. A person runs any workflow
they could run by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.errors import Bug, UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Range, Text
from specialists.features.spend.ceiling import own_ceiling, parse_tokens, parse_usd

if TYPE_CHECKING:
    from specialists.features.missions.launch import MissionChoice
    from specialists.features.workflows.launch import WorkflowRequest
    from specialists.native.agent_tools import Caller

JobRef = Annotated[str, Text(64, 1), Cli(metavar="ID")]
Budget = Annotated[int | None, Range(1, None), Cli(metavar="N")]
# docs/spend.md: what the run and every job below it may spend; a pre-approval is a person's.
MaxCost = Annotated[float | None, Range(0.0001, None), Cli(metavar="USD", parse=parse_usd)]
MaxTokens = Annotated[int | None, Range(1, None), Cli(metavar="N", parse=parse_tokens)]
ApproveCost = Annotated[
    float | None, Range(0.0001, None), Cli(metavar="USD", only=True, parse=parse_usd)
]
NEXT = (
    "It runs in the background; its end arrives as an event. Check it with status or "
    "workflow show, and read its answer with result."
)


def run(
    caller: Caller,
    name: Annotated[str | None, Text(4096, 1), Cli(metavar="WORKFLOW")] = None,
    /,
    *,
    document: Annotated[Mapping[str, Any] | None, Cli(hidden=True)] = None,
    args: Annotated[Mapping[str, Any] | None, Cli("--args-json", metavar="JSON")] = None,
    arg: Annotated[list[str] | None, Cli("--arg", metavar="K=V", only=True)] = None,
    concurrency: Annotated[int | None, Range(1, 64)] = None,
    budget_tokens: Budget = None,
    mission: Annotated[str | None, Text(48, 1), Cli(metavar="ID", only=True)] = None,
    no_mission: Annotated[bool, Cli(only=True)] = False,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
    approve_cost: ApproveCost = None,
) -> dict[str, Any]:
    """Start a workflow (a job; it survives this command).

    Args:
        name: a name (specialists/workflows/<name>.*, or a recipe); a person may give a path
        document: a declarative workflow: {steps: [...]}
        args: the workflow's arguments
        arg: an argument
        concurrency: children at once (default 8, fewer if memory is short)
        budget_tokens: launch no child once the run's children used this many tokens
        mission: run it on this mission (it must exist)
        no_mission: make no mission for it (a probe, a quick look)
        max_cost: what the run and every job below it may spend, in US dollars
        max_tokens: ... in tokens (input + output)
        approve_cost: pre-approve fan-outs estimated up to this many dollars
    """
    from specialists.features.missions.launch import check_before_launch, choose
    from specialists.features.workflows.launch import WorkflowRequest
    from specialists.features.workflows.source import Source, find_workflow

    given = {**(args or {}), **_pairs(arg or [])}
    if caller.person:
        if name is None:
            raise UserError("give the workflow to run", hint="see: specialists workflow list")
        source = find_workflow(caller.root, name)
        if mission and no_mission:
            raise UserError("give --mission or --no-mission, not both")
    elif (document is None) == (name is None):
        raise UserError("give exactly one of document or name")
    elif document is not None:
        source = Source("declarative", str(document.get("name") or "inline"), None, dict(document))
    else:
        from specialists.features.workflows.consent import model_source

        source = model_source(caller.root, str(name), via="workflow tool")
    request = WorkflowRequest(source, given, concurrency, budget_tokens)
    # One mission per workflow launch, shared by its children (docs/missions.md).
    choice = choose(mission_id=mission, disabled=no_mission, default="auto")
    check_before_launch(caller.state_root, choice)  # strict: nothing starts for a bad id
    ceiling = own_ceiling(
        max_tokens, max_cost, approved_usd=approve_cost, mission=choice.mission_id
    )
    return _start(caller, request, choice, ceiling)


def _pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--arg {item!r} is not K=V")
        out[key.strip()] = value
    return out


def resume(
    caller: Caller,
    id: JobRef,
    /,
    *,
    rerun_changed: Annotated[
        list[Annotated[str, Text(128)]] | None, Many(256), Cli("--rerun-changed", metavar="KEY")
    ] = None,
    budget_tokens: Budget = None,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
    approve_cost: ApproveCost = None,
) -> dict[str, Any]:
    """Run a workflow again, skipping its finished keys.

    Args:
        id: the workflow's job id (or a unique prefix)
        rerun_changed: keys to run again although they finished with other inputs ('all':
            every key)
        budget_tokens: a new token budget for the resumed run
        max_cost: a new spend ceiling in US dollars (default: the one it ran with)
        max_tokens: ... in tokens
        approve_cost: pre-approve fan-outs estimated up to this many dollars
    """
    from specialists.features.workflows.launch import resume_request, resumed_mission

    keys = rerun_changed or []
    rerun: Any = True if "all" in keys else tuple(keys)
    request, old = resume_request(caller.jobs(), id, rerun_changed=rerun)
    if budget_tokens is not None:
        request = dataclasses.replace(request, budget_tokens=budget_tokens)
    if not caller.person:
        if request.source.kind == "python":
            raise UserError(
                f"workflow {request.source.name!r} is Python, which the workflow tool does not "
                "run: a Python workflow is code run on the host",
                hint="submit a declarative document (steps: run / all / pipeline), or ask the "
                f"user to run `specialists workflow run {request.source.name}`",
            )
        request = dataclasses.replace(request, source=pinned(request.source))
    mission = resumed_mission(caller.state_root, old.id)
    ceiling = own_ceiling(
        max_tokens, max_cost, approved_usd=approve_cost, mission=mission.mission_id
    )
    if not ceiling:  # a resume keeps the limits it ran with
        ceiling = {k: v for k, v in old.ceiling.items() if k != "mission"}
    return _start(caller, request, mission, ceiling)


def pinned(source: Any) -> Any:
    """The document itself, read now: the engine runs exactly what was checked here, not a
    file a model could change between this check and the run."""
    from specialists.features.workflows.source import Source, load_document

    return Source(source.kind, source.name, source.path, load_document(source))


def _start(
    caller: Caller, request: WorkflowRequest, mission: MissionChoice, ceiling: dict[str, Any]
) -> dict[str, Any]:
    from specialists.features.workflows.launch import (
        origin_from_env,
        start_on_mission,
        workflow_record,
    )
    from specialists.supervise.start import start

    record = workflow_record(caller.root, request, origin_job=origin_from_env())
    if not caller.person:
        from specialists.features.workflows.consent import check_consent, project_gates

        document = request.source.document
        if document is None:
            raise Bug("bug: a model's workflow reached its start without its document pinned")
        check_consent(document, project_gates(caller.root), via="workflow tool")
    record = record.replace(owner=list(caller.job_owners), ceiling=ceiling)
    store = caller.jobs()
    job_id, mission_id = start_on_mission(
        caller.state_root, record, mission,
        lambda r: start(store, r, housekeep=True, warnings=caller.warnings).id, caller.warnings,
    )  # fmt: skip
    return {
        "id": job_id, "mission_id": mission_id, "status": "started", "next": NEXT,
        "concurrency": record.runner_options.get("concurrency"),
        "asked": request.concurrency is not None,
    }  # fmt: skip


def listing(caller: Caller) -> dict[str, Any]:
    """Workflow runs and the workflows you can run."""
    from specialists.features.workflows.source import list_workflows
    from specialists.features.workflows.views import workflow_jobs

    files = list_workflows(caller.root)
    return {
        "runs": workflow_jobs(caller.jobs()),
        "workflows": [{"name": n, "path": p} for n, p in files],
    }


def show(caller: Caller, id: JobRef, /) -> dict[str, Any]:
    """A workflow's keys, children, phases and receipt.

    Args:
        id: the workflow's job id (or a unique prefix)
    """
    from specialists.features.workflows.views import show_workflow

    return show_workflow(caller.jobs(), id)


WORKFLOW = Noun(
    "workflow",
    "run, list, show and resume workflows",
    (
        Op(run, "run"),
        Op(listing, "list", reads=True),
        Op(show, "show", reads=True),
        Op(resume, "resume"),
    ),
    tool="workflow",
    about=(
        "Run a declarative workflow as one background job: steps of run (one child), all (a "
        "barrier over children or items) and pipeline (items through stages, no barrier), each "
        "child {key, agent, task, runner?, model?, context?, schema?, sandbox?, timeout?, "
        "max_turns?, max_tokens?, gate?, acceptance?, resume?}; placeholders {args.X} {item} "
        "{prev.output} {results.KEY.output} (not in gates: a gate reads $SPECIALISTS_ARG_X; it "
        "runs only if config.toml [workflows] gates lists it). Stable keys; resume re-runs only "
        "unfinished keys. action run (document or name, args), show (id: keys, children, "
        "receipt), list, resume (id). Returns the job id at once; status/result/feed work on "
        "it. Python workflows are not accepted here. Do not poll in a loop."
    ),
)
