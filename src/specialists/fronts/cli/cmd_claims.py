"""How `specialists claims [release --job JOB [PATH...]]` prints for people (the command is
generated from the claim ops, features/sandbox/verbs.py, as the agents' claim tools are)."""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _list(data: dict[str, Any], args: Namespace) -> int:
    from specialists.base.display import display_line
    from specialists.store.claims import Claim

    if not data["claims"]:
        print("no files are claimed")
    for c in (Claim(**row) for row in data["claims"]):
        note = f"  {display_line(c.note, 80)}" if c.note else ""
        print(f"{display_line(c.shown(), 200)}  {c.holder()}{note}")
    return 0


def _released(data: dict[str, Any], args: Namespace) -> int:
    print(f"released {len(data['released'])} claim(s) of job {data['job']}")
    return 0


TEXT = {"claims": _list, "release": _released}
