"""How `specialists mission ...` prints for people (the command itself is generated from the
mission ops, features/missions/verbs.py, as the agent tool `mission` is; docs/missions.md)."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _line(value: object, limit: int) -> str:
    from specialists.base.display import display_line

    return display_line(str(value), limit)


def _when(ms: object) -> str:
    if not isinstance(ms, int):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _print_list(data: dict[str, Any], args: argparse.Namespace) -> int:
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
                f"{_line(row['id'], 48):<12} {_line(row['status'], 20):<9} "
                f"{_when(row['updated_ms'])}  {_line(row['title'], 60)}  "
                f"{_line(row['project_root'], 80)}{gone}"
            )
            continue
        goal = f" goal:{row['goal']}" if row["goal"] else ""
        print(
            f"{row['id']:<12} {row['status']:<9} {_when(row['updated_ms'])}  runs {row['runs']:<4}"
            f" open decisions {row['open_decisions']}{goal}  {_line(row['title'], 70)}"
        )
    if data.get("more"):
        print("(more not shown; see --json)")
    return 0


def _print_show(data: dict[str, Any], args: argparse.Namespace) -> int:
    print(f"mission:   {data['id']}  {data['status']}  {_line(data['title'], 120)}")
    if data["objective"]:
        print(f"objective: {_line(data['objective'], 400)}")
    if data["labels"]:
        print(f"labels:    {_line(', '.join(data['labels']), 400)}")
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
        print(
            f"  {_line(run['job_id'], 40)}  {_line(run['status'], 20)}{stale}  "
            f"{_line(run['specialist'], 40)}"
        )
    if len(data["runs"]) > 20:
        print(f"  ... {len(data['runs']) - 20} earlier (see --json)")
    for d in data["decisions"]:
        tail = f" -> {_line(d['summary'], 200)}" if d["status"] == "resolved" else ""
        print(f"decision {_line(d['id'], 20)} [{d['status']}]: {_line(d['question'], 200)}{tail}")
    for a in data["artifacts"]:
        print(f"artifact {_line(a['kind'], 40)}: {_line(a['path'], 200)}")
    for r in data["receipts"]:
        print(f"receipt {r['kind']} [{_line(r['status'], 40)}]: {_line(r['url'], 200)}")
    if data["state"]:
        print(f"state:     {_line(json.dumps(data['state'], ensure_ascii=False), 300)}")
    if data["summary"]:
        print(f"summary:   {_line(data['summary'], 400)}")
    return 0


def _print_state(data: dict[str, Any], args: argparse.Namespace) -> int:
    # JSON escapes C0 controls but not DEL or the C1 ones (U+009B starts an escape sequence
    # too): those are written as \u escapes, still valid JSON and the same value
    text = json.dumps(data["value"], ensure_ascii=False, indent=1)
    print(re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text))
    return 0


def _print_set(data: dict[str, Any], args: argparse.Namespace) -> int:
    print(f"{data['mission_id']} state {data['key']} set ({data['bytes']} bytes in all)")
    return 0


def _print_changed(data: dict[str, Any], args: argparse.Namespace) -> int:
    extra = f" decision {data['decision_id']}" if "decision_id" in data else ""
    print(f"{data['id']}  {data['status']}{extra}  {_line(data['title'], 80)}")
    return 0


def _text_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text", action="store_true", help="store VALUE as a string")


def _value(args: argparse.Namespace) -> None:
    """`-` reads the value from stdin (a large one); --text takes it as a string."""
    if args.value == "-":  # no more than a mission's state holds, then one line, not OOM
        from specialists.features.missions.state import MAX_STATE

        args.value = sys.stdin.read(MAX_STATE + 1)
    if args.text:
        args.value = json.dumps(args.value)


TEXT = {
    "list": _print_list,
    "show": _print_show,
    "state get": _print_state,
    "state set": _print_set,
    **{verb: _print_changed for verb in (
        "new", "link", "decide", "resolve", "receipt", "artifact", "pause", "resume", "close",
    )},
}  # fmt: skip
FLAGS = {"state set": _text_flag}
PREPARE = {"state set": _value}
