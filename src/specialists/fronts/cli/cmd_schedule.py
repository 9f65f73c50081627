"""How `specialists schedule ...` prints for people (the command itself is generated from the
`schedule` ops: features/schedules/ops.py; docs/schedules.md)."""

from __future__ import annotations

import json
import time
from typing import Any

from specialists.base.display import display_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ms / 1000))


def _created(data: dict[str, Any], args: Namespace) -> int:
    print(f"{data['id']}  {data['when']}  next {_when(data['next_due_ms'])}")
    return 0


def _list(data: dict[str, Any], args: Namespace) -> int:
    rows = data["schedules"]
    if not rows:
        print("no schedules (create one: specialists schedule create --help)")
    for row in rows:
        target = row["target"].get("specialist") or row["target"].get("workflow")
        print(
            f"{row['id']:<20} {row['status']:<8} {display_line(row['when'], 40):<40}"
            f" next {_when(row['state']['next_due_ms'])}  -> {target}"
        )
    return 0


def _show(data: dict[str, Any], args: Namespace) -> int:
    state = data["state"]
    name = f"  ({display_line(data['name'], 80)})" if data["name"] else ""
    print(f"id:        {data['id']}{name}")
    print(f"status:    {data['status']}")
    print(f"trigger:   {display_line(data['when'], 200)}")
    print(f"target:    {display_line(json.dumps(data['target'], ensure_ascii=False), 300)}")
    print(f"policy:    overlap {data['overlap']}, catch_up {data['catch_up']}")
    zone = data["trigger"].get("zone")
    for n, slot in enumerate(data["upcoming_ms"]):
        label = "next:" if n == 0 else ""
        print(f"{label:<10} {_when(slot)}" + (f"  ({_zoned(slot, zone)})" if zone else ""))
    if not data["upcoming_ms"]:
        print(f"next:      {_when(state['next_due_ms'])}")
    print(
        f"counts:    fired {state['fired']}, skipped {state['skipped']}, missed {state['missed']}"
        f"; last job {state['last_job'] or '-'}"
    )
    for entry in data["history"]:
        print("  " + _history_line(entry))
    return 0


def _zoned(ms: int, zone: str) -> str:
    from datetime import datetime

    from specialists.events.zone import load_zone

    return datetime.fromtimestamp(ms / 1000, load_zone(zone)).strftime(f"%Y-%m-%d %H:%M %z {zone}")


def _history_line(entry: dict[str, Any]) -> str:
    slot = entry.get("slot_ms")
    text = f"{_when(slot if isinstance(slot, int) else None)}  {entry.get('outcome', '?')}"
    if entry.get("job_id"):
        text += f"  job {entry['job_id']}"
    if entry.get("count", 1) != 1:
        text += f"  x{entry['count']}"
    if entry.get("detail"):
        text += f"  ({entry['detail']})"
    return display_line(text, 400)


def _history(data: dict[str, Any], args: Namespace) -> int:
    if not data["history"]:
        print(f"{data['id']}: nothing fired yet")
    for entry in data["history"]:
        print(_history_line(entry))
    return 0


def _paused(data: dict[str, Any], args: Namespace) -> int:
    word = "paused" if data["paused"] else "resumed"
    if data["changed"]:
        tail = "" if data["paused"] else f"; next {_when(data['next_due_ms'])}"
        print(f"{data['id']} {word}{tail}")
    else:
        print(f"{data['id']} was {word} already")
    return 0


def _firing_line(f: dict[str, Any]) -> str:
    text = f"{f['id']}  {_when(f['slot_ms'])}  {f['outcome']}"
    text += f"  job {f['job_id']}" if f["job_id"] else ""
    text += f"  x{f['count']}" if f["count"] != 1 else ""
    text += f"  ({f['detail']})" if f["detail"] else ""
    return display_line(text, 400)


def _fired(data: dict[str, Any], args: Namespace) -> int:
    print(_firing_line(data))
    return _fired_code(data)


def _fired_code(data: dict[str, Any]) -> int:
    return 0 if data["outcome"] in ("fired", "skipped") else 1


def _due(data: dict[str, Any], args: Namespace) -> int:
    for firing in data["firings"]:
        print(_firing_line(firing))
    return _due_code(data)


def _due_code(data: dict[str, Any]) -> int:
    failed = any(f["outcome"] == "failed" for f in data["firings"]) or data["problems"]
    return 1 if failed else 0


def _deleted(data: dict[str, Any], args: Namespace) -> int:
    print(f"{data['id']} deleted")
    return 0


TEXT = {
    "create": _created,
    "list": _list,
    "show": _show,
    "history": _history,
    "pause": _paused,
    "resume": _paused,
    "run": _fired,
    "delete": _deleted,
    "run-due": _due,
}
CODE = {"run": _fired_code, "run-due": _due_code}
