"""The MCP tool `workflow`: declarative workflows for an orchestrating model (docs/workflows.md).

Only the declarative form is accepted here, inline or as the name of a YAML/JSON workflow in
the project: a Python workflow is code run on the host, and a model must never get more power
through a workflow than it was granted. Python workflows run from `specialists workflow run`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specialists.base.errors import Bug, UserError
from specialists.fronts.mcp import handlers as h
from specialists.fronts.mcp import schemas as s

DESCRIPTION = (
    "Run a declarative workflow as one background job: steps of run (one child), all (a "
    "barrier over children or items) and pipeline (items through stages, no barrier), each "
    "child {key, agent, task, runner?, model?, context?, schema?, sandbox?, timeout?, "
    "max_turns?, max_tokens?, gate?, acceptance?, resume?}; placeholders {args.X} {item} "
    "{prev.output} {results.KEY.output} (not in gates: a gate reads $SPECIALISTS_ARG_X; it "
    "runs only if config.toml [workflows] gates lists it). Stable keys; resume re-runs only "
    "unfinished keys. "
    "action run (document or name, args), show (id: keys, children, receipt), list, resume "
    "(id). Returns the job id at once; status/result/feed work on it. Python workflows are "
    "not accepted here. Do not poll in a loop."
)
ARGS = s.obj(
    {
        "action": {"type": "string", "enum": ["run", "show", "list", "resume"]},
        "document": {"type": "object", "description": "a declarative workflow: {steps: [...]}"},
        "name": s.text("a YAML/JSON workflow in .specialists/workflows/", max_length=200),
        "args": {"type": "object", "description": "the workflow's arguments"},
        "concurrency": s.integer("children at once", 8, 1, 64),
        "budget_tokens": {
            "type": "integer",
            "minimum": 1,
            "description": "no child launches once the run's children used this many tokens",
        },
        **s.CEILING_PROPS,
        "id": s.JOB_ID,
        "rerun_changed": {"type": "array", "items": s.text("a key", max_length=128)},
    },
    ("action",),
)
RESULT = {"type": "object"}


def workflow(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    from specialists.features.missions.launch import MissionChoice
    from specialists.features.spend.ceiling import own_ceiling
    from specialists.features.workflows.consent import check_consent, model_source, project_gates
    from specialists.features.workflows.launch import (
        WorkflowRequest,
        origin_from_env,
        resume_request,
        resumed_mission,
        start_on_mission,
        workflow_record,
    )
    from specialists.features.workflows.source import Source
    from specialists.features.workflows.views import show_workflow, workflow_jobs

    project = ctx.project
    action = args["action"]
    if action == "list":
        return {"runs": workflow_jobs(project.store)}
    if action == "show":
        return show_workflow(project.store, _need(args, "id"))
    if action == "resume":
        rerun = tuple(args.get("rerun_changed") or ())
        request, old = resume_request(project.store, _need(args, "id"), rerun_changed=rerun)
        if request.source.kind == "python":
            raise _python_refused(request.source.name)
        mission = resumed_mission(project.store.root, old.id)
        request = replace(request, source=pinned(request.source))
    else:
        document, name = args.get("document"), args.get("name")
        if (document is None) == (name is None):
            raise UserError("give exactly one of document or name")
        if document is not None:
            source = Source("declarative", str(document.get("name") or "inline"), None, document)
        else:
            source = model_source(project.root, str(name), via="workflow tool")
        request = WorkflowRequest(
            source,
            dict(args.get("args") or {}),
            args.get("concurrency"),
            args.get("budget_tokens"),
        )
        mission = MissionChoice("auto")  # one per workflow launch, shared by its children
    record = workflow_record(project.root, request, origin_job=origin_from_env())
    ceiling = own_ceiling(args.get("max_tokens"), args.get("max_cost"))
    if action == "resume" and not ceiling:  # a resume keeps the limits it ran with
        ceiling = {k: v for k, v in old.ceiling.items() if k != "mission"}
    record = record.replace(ceiling=ceiling)  # never a pre-approval: that is a person's
    document = request.source.document
    if document is None:
        raise Bug("bug: a model's workflow reached its start without its document pinned")
    check_consent(document, project_gates(project.root), via="workflow tool")
    record = record.replace(owner=list(ctx.keys()))
    start = lambda r: project.start_background(r, ctx.warnings)  # noqa: E731
    job_id, mission_id = start_on_mission(project.store.root, record, mission, start, ctx.warnings)
    return {
        "id": job_id,
        "mission_id": mission_id,
        "status": "started",
        "next": "It runs in the background; its end arrives as an event. Check it with status "
        "or workflow show, and read its answer with result.",
    }


def pinned(source: Any) -> Any:
    """The document itself, read now: the engine runs exactly what was checked here, not a
    file a model could change between this check and the run."""
    from specialists.features.workflows.source import Source, load_document

    return Source(source.kind, source.name, source.path, load_document(source))


def _need(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value:
        raise UserError(f"action {args['action']} needs {name}")
    return value


def _python_refused(name: str) -> UserError:
    return UserError(
        f"workflow {name!r} is Python, which the workflow tool does not run: a Python "
        "workflow is code run on the host",
        hint="submit a declarative document (steps: run / all / pipeline), or ask the user to "
        f"run `specialists workflow run {name}`",
    )
