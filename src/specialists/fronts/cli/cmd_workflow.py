"""`specialists workflow run|list|show|resume`: scripted fan-outs as jobs (docs/workflows.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specialists.project import Project
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobRecord


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.cmd_run import add_ceiling_args

    p = sub.add_parser("workflow", help="run, list, show and resume workflows")
    wsub = p.add_subparsers(dest="workflow_command", required=True)
    r = wsub.add_parser("run", help="start a workflow (a job; it survives this command)")
    r.add_argument(
        "workflow", help="a name (specialists/workflows/<name>.*, or a recipe) or a path"
    )
    r.add_argument("--arg", action="append", default=[], metavar="K=V", help="an argument")
    r.add_argument("--args-json", metavar="JSON", help="arguments as one JSON object")
    r.add_argument(
        "--concurrency", type=int, help="children at once (default 8, fewer if memory is short)"
    )
    r.add_argument("--detach", action="store_true", help="print the job id and return at once")
    on = r.add_mutually_exclusive_group()
    on.add_argument("--mission", metavar="ID", help="run it on this mission (it must exist)")
    on.add_argument(
        "--no-mission", action="store_true", help="make no mission for it (a probe, a quick look)"
    )
    r.add_argument(
        "--budget-tokens", type=int, metavar="N", help="launch no child once children used N"
    )
    add_ceiling_args(r)
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(run=run)
    lst = wsub.add_parser("list", help="workflow runs and the workflows you can run")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(run=run)
    s = wsub.add_parser("show", help="a workflow's keys, children, phases and receipt")
    s.add_argument("id", help="the workflow's job id (or a unique prefix)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(run=run)
    re_ = wsub.add_parser("resume", help="run a workflow again, skipping its finished keys")
    re_.add_argument("id", help="the workflow's job id (or a unique prefix)")
    re_.add_argument(
        "--rerun-changed",
        action="append",
        default=[],
        metavar="KEY",
        help="run KEY again although it finished with other inputs ('all' for every key)",
    )
    re_.add_argument(
        "--budget-tokens", type=int, metavar="N", help="a new token budget for the resumed run"
    )
    add_ceiling_args(re_)
    re_.add_argument("--detach", action="store_true", help="print the job id and return at once")
    re_.add_argument("--json", action="store_true", help="machine-readable output")
    re_.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    command = args.workflow_command
    if command == "list":
        return _list(args, project)
    if command == "show":
        return _show(args, project)
    from specialists.features.missions.launch import check_before_launch, choose
    from specialists.features.workflows.launch import (
        origin_from_env,
        resume_request,
        resumed_mission,
        start_on_mission,
        workflow_record,
    )
    from specialists.fronts.cli.cmd_run import ceiling_of

    if command == "run":
        from specialists.features.workflows.launch import WorkflowRequest
        from specialists.features.workflows.source import find_workflow

        source = find_workflow(project.root, args.workflow)
        request = WorkflowRequest(source, _args(args), args.concurrency, args.budget_tokens)
        # One mission per workflow launch, shared by its children (docs/missions.md).
        mission = choose(mission_id=args.mission, disabled=args.no_mission, default="auto")
        check_before_launch(project.store.root, mission)  # strict: nothing starts for a bad id
    else:
        rerun: Any = True if "all" in args.rerun_changed else tuple(args.rerun_changed)
        request, old = resume_request(project.store, args.id, rerun_changed=rerun)
        if args.budget_tokens is not None:
            import dataclasses

            request = dataclasses.replace(request, budget_tokens=args.budget_tokens)
        mission = resumed_mission(project.store.root, old.id)
    record = workflow_record(project.root, request, origin_job=origin_from_env())
    ceiling = ceiling_of(args)
    if command != "run" and not ceiling:  # a resume keeps the limits it ran with
        ceiling = {k: v for k, v in old.ceiling.items() if k != "mission"}
    record = record.replace(owner=list(project.owner.keys), ceiling=ceiling)
    warnings: list[str] = []
    try:
        start = lambda r: project.start_background(r, warnings)  # noqa: E731
        job_id, mission_id = start_on_mission(project.store.root, record, mission, start, warnings)
    finally:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    if not args.json:
        print(f"workflow {job_id}: {_concurrency_note(request, record)}", file=sys.stderr)
    if mission_id is not None and not args.json:
        print(f"mission {mission_id}", file=sys.stderr)
    if args.detach:
        print(job_id if not args.json else json.dumps({"id": job_id, "mission_id": mission_id}))
        return 0
    return _follow(project.store, job_id, as_json=args.json)


def _concurrency_note(request: Any, record: JobRecord) -> str:
    """The concurrency in force, said once at the start (a cap nobody sees is a surprise)."""
    n = record.runner_options.get("concurrency")
    if request.concurrency is not None:
        return f"up to {n} children at once (as asked)"
    return f"up to {n} children at once (the default; --concurrency N to change it)"


def _args(args: argparse.Namespace) -> dict[str, Any]:

    from specialists.base.errors import UserError

    out: dict[str, Any] = {}
    if args.args_json:
        from specialists.base.reader import Invalid, load_json

        try:
            loaded = load_json(args.args_json, "--args-json", max_nodes=None)
        except Invalid as exc:
            raise UserError(exc.problem) from None
        if not isinstance(loaded, dict):
            raise UserError("--args-json must be a JSON object")
        out.update(loaded)
    for item in args.arg:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--arg {item!r} is not K=V")
        out[key.strip()] = value
    return out


def _follow(store: JobStore, job_id: str, *, as_json: bool) -> int:
    """Print the workflow's progress until it ends; Ctrl-C leaves it running."""
    import time

    from specialists.base.display import display_line
    from specialists.store.view import current_status, progress_words

    seq = 0
    if not as_json:
        print(f"workflow {job_id} started (Ctrl-C leaves it running)", file=sys.stderr)
    try:
        while True:
            status = current_status(store, job_id)
            for event in store.read_events(job_id, seq + 1):
                seq = max(seq, int(event.get("seq", 0)))
                if event.get("event") == "notice" and not as_json:
                    line = str(event.get("message", ""))
                    wf = event.get("workflow")
                    if isinstance(wf, dict) and wf.get("kind") == "end":
                        now = store.read_status(job_id)
                        if now is not None and now.progress:  # where it stands now
                            line += f"  ({progress_words(now.progress)})"
                    print(display_line(line, 300), file=sys.stderr)
            if not status.active:
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        print(f"\nworkflow {job_id} keeps running; `specialists workflow show {job_id}`")
        return 130
    result = store.read_result(job_id)
    if as_json:
        print(
            json.dumps(
                {"id": job_id, "status": status.status, "error": status.error, "result": result}
            )
        )
    elif status.status == "done":
        print(result or "")
    else:
        print(f"error: workflow {job_id} {status.status}: {status.error}", file=sys.stderr)
    return 0 if status.status == "done" else 1


def _list(args: argparse.Namespace, project: Project) -> int:

    from specialists.features.workflows.source import list_workflows
    from specialists.features.workflows.views import workflow_jobs

    runs = workflow_jobs(project.store)
    files = list_workflows(project.root)
    if args.json:
        print(json.dumps({"runs": runs, "workflows": [{"name": n, "path": p} for n, p in files]}))
        return 0
    for name, path in files:
        print(f"{name:<24} {path}")
    if files and runs:
        print()
    for r in runs:
        extra = f" (resumes {r['resume_of']})" if r["resume_of"] else ""
        print(f"{r['id']}  {r['status']:<9} {r['name']}{extra}")
    if not files and not runs:
        print("no workflows")
    return 0


def _show(args: argparse.Namespace, project: Project) -> int:

    from specialists.base.display import display_line
    from specialists.features.workflows.views import show_workflow

    view = show_workflow(project.store, args.id)
    if args.json:
        print(json.dumps(view))
        return 0
    print(f"workflow {view['id']} {view['name']}: {view['status']}")
    if view["error"]:
        print(f"  error: {display_line(view['error'], 300)}")
    if view["phases"]:
        print("  phases: " + " > ".join(str(p) for p in view["phases"]))
    for line in _spend_lines(view["spend"]):
        print(f"  {line}")
    receipt = (view.get("receipt") or {}).get("children") or {}
    for child in view["children"]:
        more = receipt.get(child["key"]) or {}
        resumable = ""
        if more:
            resumable = (
                " resumable" if more.get("resumable") else f" not resumable ({more.get('why')})"
            )
        jobs = f" ({len(child['jobs'])} jobs)" if len(child["jobs"]) > 1 else ""
        print(
            f"  {child['key']:<28} {child['journal']:<9} job {child['job']} {child['agent']}"
            f" [{child['context']}]{jobs}{resumable}"
        )
    return 0


def _spend_lines(spend: dict[str, Any]) -> list[str]:
    """The estimate beside the actual spend, the approvals, the ceiling (docs/spend.md)."""
    from specialists.features.spend.ceiling import entries, tightest, usd

    actual = spend["actual"]
    line = f"spent: {usd(actual['usd'])}, {actual['tokens']:,} tokens ({actual['jobs']} jobs)"
    est = spend["estimate"]
    if est is not None:
        line = (
            f"estimated: {usd(est['usd'])}, {est['tokens']:,} tokens ({est['children']} "
            f"children) · {line}"
        )
    lines = [line]
    for a in spend["approvals"]:
        amount = f" up to {usd(a['usd'])}, {a.get('tokens', 0):,} tokens" if "usd" in a else ""
        by = f" by {a['by']}" if a.get("by") else ""
        ask = f" ({a['ask']})" if a.get("ask") else ""
        lines.append(f"approval: {a.get('outcome')}{amount}{by}{ask}")
    top = tightest(entries(spend.get("ceilings") or ()))
    if top is not None:
        lines.append(f"ceiling: {top.whose()}: {top.figures()} ({top.left()})")
    return lines
