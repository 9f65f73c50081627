"""`specialists merge check|start|run|show|list|land|cancel`: the merge queue (docs/sandbox.md).

- `check [REF...] [--parent P]`: each sibling sandbox's changed files, the overlapping pairs
  and the default order; nothing changes.
- `start [REF...] [--parent P]`: queue them (prints the queue id); each lands all or nothing
  in the queue's own sandbox, overlapping ones are rebased as each lands, a conflict goes to
  a resolver job. `--wait` follows it until no resolver is at work.
- `run ID`: one more pass (after a crash, or `--retry` to requeue conflicts); `--wait` too.
- `land ID`: the result into the working copy it came from, staged only, after you confirm
  (a terminal, or `--yes`); into a sandboxed parent it is committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from specialists.base.errors import UserError
from specialists.fronts.cli.values import Duration

if TYPE_CHECKING:
    from specialists.features.sandbox.queue import Queue
    from specialists.project import Project

WAIT_SLICE_S = 0.5


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge", help="merge sibling sandboxes through a queue (overlaps, order)")
    actions = p.add_subparsers(dest="action", required=True)

    def members(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("refs", nargs="*", metavar="REF", help="thread, job or sandbox ids")
        parser.add_argument(
            "--parent", help="every sandbox child of this job, owner key or workflow"
        )
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    members(actions.add_parser("check", help="changed files, overlaps and order; no change"))
    start = actions.add_parser("start", help="queue the sandboxes and merge them; prints its id")
    members(start)
    start.add_argument("--order", choices=("given", "auto", "fifo", "smallest"))
    start.add_argument("--resolver", default="resolver", help="the specialist for conflicts")
    start.add_argument("--no-resolver", action="store_true", help="leave conflicts as they are")
    start.add_argument("--wait", action="store_true", help="follow it while resolvers work")
    start.add_argument("--timeout", type=Duration, help="with --wait: give up waiting after D")
    run = actions.add_parser("run", help="one more pass (after a crash); --retry conflicts")
    run.add_argument("id")
    run.add_argument("--retry", action="store_true", help="requeue conflicts and failures")
    run.add_argument("--wait", action="store_true", help="follow it while resolvers work")
    run.add_argument("--timeout", type=Duration, help="with --wait: give up waiting after D")
    run.add_argument("--json", action="store_true", help="machine-readable output")
    show = actions.add_parser("show", help="one queue: members, overlaps, history")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    listing = actions.add_parser("list", help="the project's merge queues")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    land = actions.add_parser("land", help="the merged result into its target (asks first)")
    land.add_argument("id")
    land.add_argument("--yes", "-y", action="store_true", help="do not ask")
    cancel = actions.add_parser("cancel", help="stop it (resolvers stopped; branches kept)")
    cancel.add_argument("id")
    p.set_defaults(run=run_command)


def run_command(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues

    root = project.store.root
    if args.action == "check":
        found = ops.check(root, args.refs, args.parent)
        if args.json:
            print(json.dumps(found))
        else:
            from specialists.features.sandbox.queue_tools import check_text

            print(check_text(found))
        return 0
    if args.action == "list":
        queues, problems = Queues(root).all()
        for problem in problems:
            print(f"warning: {problem}", file=sys.stderr)
        rows = [ops.view(q) for q in queues]
        if args.json:
            print(json.dumps({"queues": rows}))
        else:
            print("\n".join(r["summary"] for r in rows) or "no merge queues")
        return 0
    if args.action == "start":
        queue = ops.start(
            root,
            args.refs,
            args.parent,
            order=args.order,
            resolver=None if args.no_resolver else args.resolver,
            owner=next(iter(project.owner.keys), ""),
        )
        print(json.dumps({"id": queue.id}) if args.json else queue.id)
        return _follow(root, queue, args)
    if args.action == "run":
        queue = ops.advance(root, args.id, retry=args.retry)
        if args.json and not args.wait:
            print(json.dumps(ops.view(queue)))
            return _code(queue)
        return _follow(root, queue, args)
    if args.action == "show":
        return _show(root, args.id, as_json=args.json)
    if args.action == "cancel":
        print(ops.cancel(root, args.id).describe())
        return 0
    return _land(root, args.id, yes=args.yes)


def _follow(root: Any, queue: Queue, args: argparse.Namespace) -> int:
    """Print where the queue stands (stderr); with --wait, pass again as resolvers end."""
    from specialists.features.sandbox import merge_ops as ops

    deadline = time.monotonic() + args.timeout.ms / 1000 if args.timeout else None
    while args.wait and queue.state == "waiting":
        if deadline is not None and time.monotonic() > deadline:
            print(f"{queue.describe()} (stopped waiting; it goes on)", file=sys.stderr)
            return 124
        time.sleep(WAIT_SLICE_S)
        queue = ops.advance(root, queue.id)
    from specialists.features.sandbox.queue_tools import describe_queue

    print(describe_queue(ops.view(queue)), file=sys.stderr)
    return _code(queue)


def _code(queue: Queue) -> int:
    """0 when every member landed (or the queue waits on resolvers), 1 otherwise."""
    if queue.state == "waiting":
        return 0
    return 0 if all(m.state == "landed" for m in queue.members) else 1


def _show(root: Any, queue_id: str, *, as_json: bool) -> int:
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues
    from specialists.features.sandbox.queue_tools import describe_queue

    queues = Queues(root)
    data = ops.view(queues.load(queue_id))
    data["history"] = queues.history(queue_id)
    if as_json:
        print(json.dumps(data))
        return 0
    print(describe_queue(data))
    for entry in data["history"][-50:]:
        what = {k: v for k, v in entry.items() if k not in ("ts", "event")}
        print(f"  {entry.get('event')}: {json.dumps(what)[:200]}")
    return 0


def _land(root: Any, queue_id: str, *, yes: bool) -> int:
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues
    from specialists.fronts.cli.cmd_sandboxes import _confirmed

    queue = Queues(root).load(queue_id)
    if queue.state == "merged" and not queue.into_sandbox:
        question = (
            f"stage the merged work of queue {queue.id} in {queue.target} (nothing is committed)?"
        )
        if not _confirmed(question, yes):
            print("nothing changed")
            return 1
    _, outcome = ops.land(root, queue_id, confirmed=True)
    if outcome.kind != "squashed":
        raise UserError(outcome.describe())
    print(outcome.describe())
    return 0
