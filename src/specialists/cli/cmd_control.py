"""`specialists interrupt <id>`, `specialists wait [...]` and `specialists children [...]`.

interrupt <id>                 soft: cancel the current turn; the job pauses, resumable
wait [<id>...] [--next|--all] [--timeout S] [--subscribe [--owner KEY]]
children [PARENT] [--last N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from specialists.cli.values import DURATION_HELP, Duration

if TYPE_CHECKING:
    from specialists.project import Project

EXIT_TIMED_OUT = 124  # as timeout(1)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("interrupt", help="cancel a job's current turn; the job pauses (resumable)")
    p.add_argument("job", help="job id or unique prefix")
    p.set_defaults(run=run_interrupt)

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

    c = sub.add_parser("children", help="a parent's last ended jobs, resumable or not, and why")
    c.add_argument("parent", nargs="?", help="job id or owner key (default: this session)")
    c.add_argument("--last", type=int, default=10, help="how many (default 10)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=run_children)


def run_interrupt(args: argparse.Namespace, project: Project) -> int:
    from specialists.supervise.steering import interrupt_job

    store = project.store
    outcome = interrupt_job(store, store.resolve(args.job))
    if not outcome.ok:
        hint = f"see: specialists feed --job {outcome.job_id}"
        print(f"error: {outcome.describe()} ({hint})", file=sys.stderr)
        return 1
    print(outcome.describe())
    return 0


def _session_keys(project: Project, given: str | None) -> tuple[str, ...]:
    from specialists.cli.cmd_events import owner_key

    if given is not None:
        return (owner_key(given, project),)
    return tuple(project.owner.keys) or (owner_key(None, project),)


def run_wait(args: argparse.Namespace, project: Project) -> int:
    from specialists.errors import UserError
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


def run_children(args: argparse.Namespace, project: Project) -> int:
    from specialists.errors import UserError
    from specialists.jobs.ids import is_job_id
    from specialists.supervise.retained import MAX_LAST, retained_children

    if not 1 <= args.last <= MAX_LAST:
        raise UserError(f"--last must be from 1 to {MAX_LAST}")
    store = project.store
    if args.parent is None:
        parent = _session_keys(project, None)[0]
    elif "-" in args.parent and not is_job_id(args.parent):
        parent = _session_keys(project, args.parent)[0]  # an owner key, checked
    else:
        parent = f"job-{store.resolve(args.parent)}"
    rows, problems = retained_children(store, parent, args.last)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps({"children": [r.to_dict() for r in rows]}))
        return 0
    if not rows:
        print(f"no ended children of {parent}")
        return 0
    for r in rows:
        print(r.line())
    return 0
