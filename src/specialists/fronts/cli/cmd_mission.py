"""`specialists mission ...`: durable missions, to recover delegated work (docs/missions.md).

mission new TITLE [--objective T] [--label L]... [--goal --budget-tokens N] [--id ID]
mission list [--all] [--global] | show ID
mission link ID JOB | decide ID QUESTION | resolve ID DECISION --summary TEXT
mission receipt ID KIND URL --status S [--note N] | artifact ID KIND PATH [--note N]
mission state get ID [KEY] | state set ID KEY JSON
mission pause ID | resume ID | close ID --status completed|failed|cancelled --summary TEXT

Every verb goes through missions/actions.py, as the agent tool does; this module only parses
and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from specialists.fronts.cli.values import nonempty

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mission", help="missions: why delegated work exists, to recover it later")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, helptext: str, *fields: str) -> argparse.ArgumentParser:
        v = verbs.add_parser(name, help=helptext)
        for f in fields:
            v.add_argument(f)
        v.add_argument("--json", action="store_true")
        v.set_defaults(run=_run, action=name)
        return v

    n = verb("new", "create a mission", "title")
    n.add_argument("--objective", default="", help="what the mission is for")
    n.add_argument("--label", action="append", default=[], dest="labels")
    n.add_argument("--goal", action="store_true", help="drive it: a notice after each idle turn")
    n.add_argument("--budget-tokens", type=int, help="a goal's token budget (required with --goal)")
    n.add_argument("--max-cost", metavar="USD", help="what the jobs run on it may spend together")
    n.add_argument("--max-tokens", metavar="N", help="... in tokens (input + output; 200k, 1.5M)")
    n.add_argument(
        "--id", dest="new_id", type=nonempty, help="the mission id (default: ms-xxxxxxxx)"
    )
    ls = verb("list", "open missions (with --all, closed ones too)")
    ls.add_argument("--all", action="store_true")
    ls.add_argument(
        "--global", dest="scope", action="store_const", const="global", default="project"
    )
    verb("show", "one mission, with its runs' live statuses", "mission_id")
    verb("link", "link a job (a workflow is a job) to a mission", "mission_id", "job_id")
    verb("decide", "record an open decision", "mission_id", "question")
    r = verb("resolve", "settle an open decision with a summary", "mission_id", "decision_id")
    r.add_argument("--summary", required=True)
    rc = verb("receipt", "record a PR, CI, deployment or release link", "mission_id", "kind", "url")
    rc.add_argument("--status", required=True, help="e.g. open, merged, passed, failed, live")
    rc.add_argument("--note")
    a = verb("artifact", "record a durable output file", "mission_id", "kind", "path")
    a.add_argument("--note")
    verb("pause", "stop its goal's notices (reversible)", "mission_id")
    verb("resume", "start its goal's notices again", "mission_id")
    c = verb("close", "close it: completed, failed or cancelled", "mission_id")
    c.add_argument("--status", required=True, choices=("completed", "failed", "cancelled"))
    c.add_argument("--summary", required=True)

    st = verbs.add_parser("state", help="the mission's shared JSON state")
    st_verbs = st.add_subparsers(dest="state_verb", metavar="get|set", required=True)
    g = st_verbs.add_parser("get", help="the whole state, or one key")
    g.add_argument("mission_id")
    g.add_argument("key", nargs="?")
    g.add_argument("--json", action="store_true")
    g.set_defaults(run=_run, action="state_get")
    s = st_verbs.add_parser("set", help="set one key to a JSON value (merged under a lock)")
    s.add_argument("mission_id")
    s.add_argument("key")
    s.add_argument("value", help="JSON ('\"text\"', 3, '{\"a\": 1}'), '-' for stdin; --text: plain")
    s.add_argument("--text", action="store_true", help="store VALUE as a string")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=_run, action="state_set")


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    from specialists.base.errors import UserError

    out = {k: v for k, v in vars(args).items() if k not in ("run", "verb", "state_verb", "json")}
    if args.action == "new":
        out["id"] = out.pop("new_id")
        if out["goal"] and out.get("budget_tokens") is None:
            raise UserError("a goal needs a token budget", hint="add --budget-tokens N")
    if args.action == "state_set" and args.value == "-":
        out["value"] = args.value = sys.stdin.read()  # a large value: from stdin
    if args.action == "state_set" and not args.text:
        from specialists.base.reader import Invalid, load_json

        try:
            out["value"] = load_json(args.value, "value", max_nodes=None)
        except Invalid as exc:
            raise UserError(
                f"the value {args.value[:60]!r} is not JSON we take: {exc.problem}",
                hint="quote text as JSON ('\"ship it\"'), or pass --text",
            ) from None
    return out


def _run(args: argparse.Namespace, project: Project) -> int:
    from specialists.features.missions.actions import mission_action

    data = mission_action(
        project.store.root, project.store, _arguments(args), owner=tuple(project.owner.keys)
    )
    _warn(data.get("warnings", []))
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
        return 0
    render = {"list": _print_list, "show": _print_show, "state_get": _print_state}.get(args.action)
    if render is not None:
        render(data)
    elif args.action == "state_set":
        print(f"{data['mission_id']} state {data['key']} set ({data['bytes']} bytes in all)")
    else:
        extra = f" decision {data['decision_id']}" if "decision_id" in data else ""
        print(f"{data['id']}  {data['status']}{extra}  {_line(data['title'], 80)}")
    return 0


def _line(value: object, limit: int) -> str:
    from specialists.base.display import display_line

    return display_line(str(value), limit)


def _when(ms: object) -> str:
    if not isinstance(ms, int):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {_line(line, 400)}", file=sys.stderr)


def _print_list(data: dict[str, Any]) -> None:
    for bad in data.get("damaged", []):
        print(f"warning: mission {bad['id']}: {_line(bad['problem'], 300)}", file=sys.stderr)
    for problem in data.get("problems", []):
        print(f"warning: {_line(problem, 300)}", file=sys.stderr)
    if data.get("closed"):
        print(
            f"closed {len(data['closed'])} mission(s) that plain runs had left open, their jobs "
            "having ended (see them: specialists mission list --all)",
            file=sys.stderr,
        )
    rows = data["missions"]
    if not rows:
        print("no open missions (all of them: --all; other projects: --global)")
    for row in rows:
        if "project_root" in row:
            gone = "" if row["present"] else "  (gone)"
            print(
                f"{row['id']:<12} {row['status']:<9} {_when(row['updated_ms'])}  "
                f"{_line(row['title'], 60)}  {_line(row['project_root'], 80)}{gone}"
            )
            continue
        goal = f" goal:{row['goal']}" if row["goal"] else ""
        print(
            f"{row['id']:<12} {row['status']:<9} {_when(row['updated_ms'])}  runs {row['runs']:<4}"
            f" open decisions {row['open_decisions']}{goal}  {_line(row['title'], 70)}"
        )
    if data.get("more"):
        print("(more not shown; see --json)")


def _print_show(data: dict[str, Any]) -> None:
    print(f"mission:   {data['id']}  {data['status']}  {_line(data['title'], 120)}")
    if data["objective"]:
        print(f"objective: {_line(data['objective'], 400)}")
    if data["labels"]:
        print(f"labels:    {', '.join(data['labels'])}")
    goal = data["goal"]
    if goal:
        state = goal["ended"] or ("paused" if data["status"] == "paused" else "driving")
        print(
            f"goal:      {state}; {goal['spent_tokens']} of {goal['budget_tokens']} tokens spent,"
            f" {goal['notices']} notice(s)"
        )
    if data.get("ceiling"):
        from specialists.features.spend.ceiling import Entry

        entry = Entry.of_dict({"of": f"mission-{data['id']}", **data["ceiling"]})
        if entry is not None:
            print(f"ceiling:   {entry.figures()} ({entry.left()})")
    print(f"runs:      {len(data['runs'])}")
    spent = data.get("spent")
    if spent and spent["jobs"]:
        t = spent["tokens"]
        print(
            f"spent:     {spent['jobs']} jobs (workflows' children included), tokens "
            f"{t['input'] + t['cache_read'] + t['cache_write']:,} in / {t['output']:,} out, "
            f"${spent['cost_usd']:.4f}"
        )
    for run in data["runs"][-20:]:
        stale = "" if run["live"] else " (last seen)"
        print(f"  {run['job_id']}  {run['status']}{stale}  {_line(run['specialist'], 40)}")
    if len(data["runs"]) > 20:
        print(f"  ... {len(data['runs']) - 20} earlier (see --json)")
    for d in data["decisions"]:
        tail = f" -> {_line(d['summary'], 200)}" if d["status"] == "resolved" else ""
        print(f"decision {d['id']} [{d['status']}]: {_line(d['question'], 200)}{tail}")
    for a in data["artifacts"]:
        print(f"artifact {a['kind']}: {_line(a['path'], 200)}")
    for r in data["receipts"]:
        print(f"receipt {r['kind']} [{_line(r['status'], 40)}]: {_line(r['url'], 200)}")
    if data["state"]:
        print(f"state:     {_line(json.dumps(data['state'], ensure_ascii=False), 300)}")
    if data["summary"]:
        print(f"summary:   {_line(data['summary'], 400)}")


def _print_state(data: dict[str, Any]) -> None:
    print(json.dumps(data["value"], ensure_ascii=False, indent=1))
