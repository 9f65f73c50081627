"""How `specialists bg run|output|cancel|list` prints for people (the command is generated from
the bg ops, features/procs/verbs.py, as the agents' bg_* tools are; docs/procs.md).

Whose jobs these are: `--owner KEY` when given; else the session around this command
(SPECIALISTS_OWNER, the job whose agent runs it, a Claude Code session), so a `bg run` typed
by an agent wakes that agent; else the person, `cli-<login name>` (owner.person_key), whose
events `specialists events` shows.
"""

from __future__ import annotations

import sys
from typing import Any

from specialists.base.display import display_line
from specialists.fronts.cli.foreground import shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def bg_owner(explicit: str | None) -> str:
    """See the module docstring."""
    from specialists.base.owner import launching_owner, person_key
    from specialists.events.owners import check_owner

    if explicit:
        return check_owner(explicit)
    keys = [k for k in launching_owner().keys if not k.startswith("agent-")]
    return keys[0] if keys else person_key()


def _started(data: dict[str, Any], args: argparse.Namespace) -> int:
    print(data["id"])  # the id alone on stdout: `id=$(specialists bg run ...)`
    print(f"started background job {data['id']}: {_shown(data['label'])}", file=sys.stderr)
    print(f"  log:    {data['log']}", file=sys.stderr)
    owner = data["owner"]
    print(f"  events: {owner} (specialists events --owner {owner})", file=sys.stderr)
    return 0


def _output(data: Any, args: argparse.Namespace) -> int:
    d = data.to_dict()
    text = shown(d["text"], sys.stdout)  # a terminal sees escape sequences, not obeys them
    sys.stdout.write(text + ("" if not text or text.endswith("\n") else "\n"))
    print(f"[{d['id']} {d['state']}; {d['size']} bytes; next --since {d['next_offset']}]",
          file=sys.stderr)  # fmt: skip
    return 0


def _cancelled(done: Any, args: argparse.Namespace) -> int:
    for outcome in done.outcomes:
        print(_shown(outcome.describe()))
    if not done.outcomes:
        print("no background jobs of yours are running")
    return 0


def _list(data: dict[str, Any], args: argparse.Namespace) -> int:
    owner = data["owner"]
    if not data["jobs"]:
        print("no background jobs" + ("" if owner is None else f" for {owner}"))
        return 0
    for job in data["jobs"]:
        who = f"  {job['owner']}" if owner is None else ""
        print(f"{job['id']}  {job['state']:<12}  {job['took']:>8}{who}  {_shown(job['label'])}")
    return 0


def _shown(text: str) -> str:
    return display_line(text, 300)


TEXT = {"run": _started, "output": _output, "cancel": _cancelled, "list": _list}
OWNER = bg_owner
