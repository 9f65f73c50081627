"""How `specialists workflow run|list|show|resume` prints for people (the command is generated
from the workflow ops, features/workflows/verbs.py, as the MCP tool `workflow` is;
docs/workflows.md). `run` and `resume` follow the workflow's progress until it ends, or
print its id at once with --detach."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from specialists.base.display import display_line

if TYPE_CHECKING:
    import argparse

    from specialists.store.jobs import JobStore


def _detach_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--detach", action="store_true", help="print the job id and return at once")


def _started(data: dict[str, Any], args: argparse.Namespace) -> int:
    from specialists.project import Project

    job_id, mission_id = data["id"], data["mission_id"]
    if not args.json:
        said = "(as asked)" if data["asked"] else "(the default; --concurrency N to change it)"
        print(f"workflow {job_id}: up to {data['concurrency']} children at once {said}",
              file=sys.stderr)  # fmt: skip
        if mission_id is not None:
            print(f"mission {mission_id}", file=sys.stderr)
    if args.detach:
        print(job_id if not args.json else json.dumps({"id": job_id, "mission_id": mission_id}))
        return 0
    return _follow(Project().store, job_id, as_json=args.json)


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
        from specialists.fronts.cli.foreground import shown

        print(shown(result or "", sys.stdout))
    else:
        error = display_line(status.error, 2000)
        print(f"error: workflow {job_id} {status.status}: {error}", file=sys.stderr)
    return 0 if status.status == "done" else 1


def _list(data: dict[str, Any], args: argparse.Namespace) -> int:
    files, runs = data["workflows"], data["runs"]
    for f in files:  # a file's name is any name a directory may hold
        print(f"{display_line(f['name'], 200):<24} {display_line(f['path'], 4096)}")
    if files and runs:
        print()
    for r in runs:
        extra = f" (resumes {display_line(r['resume_of'], 40)})" if r["resume_of"] else ""
        print(f"{r['id']}  {r['status']:<9} {display_line(r['name'], 200)}{extra}")
    if not files and not runs:
        print("no workflows")
    return 0


def _show(view: dict[str, Any], args: argparse.Namespace) -> int:
    print(f"workflow {view['id']} {display_line(view['name'], 200)}: {view['status']}")
    if view["error"]:
        print(f"  error: {display_line(view['error'], 300)}")
    if view["phases"]:
        # a phase is any text a workflow names (a YAML file, a script's runs.phase)
        print("  phases: " + display_line(" > ".join(str(p) for p in view["phases"]), 2000))
    for line in _spend_lines(view["spend"]):
        print(f"  {line}")
    receipt = (view.get("receipt") or {}).get("children") or {}
    for child in view["children"]:
        more = receipt.get(child["key"]) or {}
        resumable = ""
        if more:
            why = display_line(more.get("why"), 300)
            resumable = " resumable" if more.get("resumable") else f" not resumable ({why})"
        jobs = f" ({len(child['jobs'])} jobs)" if len(child["jobs"]) > 1 else ""
        key, journal, job, agent, context = (  # as the journal, a file, says them
            display_line(child[k], 200) for k in ("key", "journal", "job", "agent", "context")
        )
        print(f"  {key:<28} {journal:<9} job {job} {agent or '?'} [{context}]{jobs}{resumable}")
        if child.get("output_file"):
            print(f"    output: {display_line(child['output_file'], 300)}")
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


TEXT = {"run": _started, "resume": _started, "list": _list, "show": _show}
FLAGS = {"run": _detach_flag, "resume": _detach_flag}
OWN_JSON = {"run", "resume"}
