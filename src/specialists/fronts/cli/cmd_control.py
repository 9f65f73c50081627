"""`specialists wait [<id>...] [--next|--all] [--timeout S] [--subscribe [--owner KEY]]`, and
how `steer`, `follow-up`, `stop`, `interrupt` and `children` print (those are generated from
their ops: supervise/verbs.py). `steer a,b,c` steers each; exit PARTIAL_EXIT when it reached
some and not others."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from specialists.project import Project

EXIT_TIMED_OUT = 124  # as timeout(1)
PARTIAL_EXIT = 5


def add_parser(sub: argparse._SubParsersAction) -> None:
    from specialists.fronts.cli.values import DURATION_HELP, Duration  # argparse's types

    w = sub.add_parser("wait", help="wait for jobs to end: the next one, all, or the ones named")
    w.add_argument("jobs", nargs="*", help="job ids (default: this session's active jobs)")
    mode = w.add_mutually_exclusive_group()
    mode.add_argument("--next", action="store_true", help="return when the first one ends")
    mode.add_argument("--all", action="store_true", help="return when all have ended (default)")
    w.add_argument("--timeout", type=Duration, help=f"give up after this long ({DURATION_HELP})")
    w.add_argument(
        "--subscribe",
        action="store_true",
        help="do not wait: put each job's completion event in the owner's inbox",
    )
    w.add_argument("--owner", metavar="KEY", help="with --subscribe: whose inbox")
    w.add_argument("--json", action="store_true", help="machine-readable output")
    w.set_defaults(run=run_wait)


def _said(data: dict[str, Any], args: argparse.Namespace) -> int:
    print(data["text"])
    return _code(data)


def _code(data: dict[str, Any]) -> int:
    return PARTIAL_EXIT if data.get("state") == "partial" else 0


def _job_list(args: argparse.Namespace) -> None:
    """`steer a,b,c`: the first job, and the others as the op's job_ids."""
    first, *args.job_ids = [ref for ref in args.job_id.split(",") if ref] or [""]
    args.job_id = first


def _session_keys(project: Project, given: str | None) -> tuple[str, ...]:
    from specialists.fronts.cli.cmd_events import owner_key

    if given is not None:
        return (owner_key(given, project),)
    return tuple(project.owner.keys) or (owner_key(None, project),)


def run_wait(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import UserError
    from specialists.supervise.waiting import owned_active, subscribe, wait_for_jobs

    store = project.store
    if args.jobs:
        ids = [store.resolve(ref) for ref in args.jobs]
    else:
        ids = owned_active(store, _session_keys(project, None))
        if not ids:
            if args.json:
                print(json.dumps({"jobs": [], "timed_out": False}))
                return 0
            print("no active jobs of this session to wait for (name them: specialists wait ID)")
            return 0
    if args.subscribe:
        if args.next or args.timeout is not None:
            raise UserError("--subscribe does not wait: --next and --timeout do not apply")
        (owner,) = _session_keys(project, args.owner)[:1]
        for job_id in ids:
            posted = subscribe(store, job_id, owner)
            note = "it has ended: its event is in the inbox now" if posted else "when it ends"
            print(f"subscribed {owner} to job {job_id} ({note})")
        return 0
    if args.owner is not None:
        raise UserError("--owner goes with --subscribe")
    timeout = 86_400.0
    if args.timeout is not None:
        warning = args.timeout.warning("--timeout")
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
        timeout = args.timeout.ms / 1000
    outcome = wait_for_jobs(store, ids, "next" if args.next else "all", timeout)
    if args.json:
        ended = [{"id": st.id, "status": st.status, "error": st.error} for st in outcome.ended]
        print(json.dumps({"jobs": ended, "timed_out": outcome.timed_out}))
    else:
        for line in outcome.lines()[: len(outcome.ended)]:
            print(line)
    if outcome.timed_out:
        print(f"timeout: {outcome.lines()[-1]}", file=sys.stderr)
        return EXIT_TIMED_OUT
    return 0 if outcome.all_done else 1


def _children(listed: Any, args: argparse.Namespace) -> int:
    if not listed.rows:
        print(f"no ended children of {listed.parent}")
    for r in listed.rows:
        print(r.line())
    return 0


TEXT = {
    "steer": _said, "follow-up": _said, "stop": _said, "interrupt": _said, "children": _children,
}  # fmt: skip
CODE = {"steer": _code}
PREPARE = {"steer": _job_list}
