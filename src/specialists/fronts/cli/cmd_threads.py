"""How `specialists threads [--tree]` prints for people (the command is generated from the
threads op, features/threads/verbs.py)."""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _threads(data: dict[str, Any], args: Namespace) -> int:
    from specialists.base.display import display_line
    from specialists.features.threads.transports import supports

    rows = data["threads"]
    if not rows:
        print("no threads")
        return 0
    for r in rows:
        depth = r["depth"]
        phase = r["phase"] + (" (failed)" if r["failed"] else "")
        where = f" sandbox-{r['sandbox']}" if r["sandbox"] else ""
        parent = "" if args.tree and depth else f" parent {r['parent']}"
        text = display_line(r["instructions"], 60)
        print(f"{'  ' * depth}{r['id']}  {phase:<16} job {r['job_id']} {r['runner']}{where}{parent}"
              f"  {text}")  # fmt: skip
    print()
    for runner in sorted({r["runner"] for r in rows}):
        print(f"{runner}: {supports(runner)}")
    return 0


TEXT = {"threads": _threads}
