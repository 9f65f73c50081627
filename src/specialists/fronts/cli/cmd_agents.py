"""How `specialists agents ...` prints for people (the command is generated from the definition
ops, features/manage/verbs.py, as the MCP tool manage_specialist is; docs/specialists.md).
`--system @FILE` and `--guidance @FILE` read the text from a file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from specialists.base.display import display_line, for_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _changed(data: dict[str, Any], args: argparse.Namespace) -> int:
    where = f" ({data['path']})" if data["path"] else ""
    state = "" if data["changed"] else " (nothing to change)"
    print(
        display_line(f"{data['kind']} {data['name']} in {data['scope']} scope{where}{state}", 600)
    )
    return 0


def _list(data: dict[str, Any], args: argparse.Namespace) -> int:
    for row in data["agents"]:
        mark = (
            "managed" if row["managed"] else ("builtin" if row["scope"] == "builtin" else "by hand")
        )
        name, source = display_line(row["name"], 64), display_line(row["source"], 300)
        print(f"{name:<22} {row['scope']:<8} {row['state']:<20} {mark:<8} {source}")
    for problem in data.get("problems", ()):
        print(display_line(problem, 600), file=sys.stderr)
    return 0


def _overlay(data: dict[str, Any], args: argparse.Namespace) -> int:
    if data["revision"]:
        print(f"{data['agent']}: revision {data['revision']}")
        print(for_terminal(data["text"]))
    else:
        print(f"{data['agent']}: no refinement overlay")
    if args.verb == "refine-show":
        for entry in data["history"]:
            print("  " + display_line(json.dumps(entry, ensure_ascii=False), 300))
    return 0


def _from_files(args: argparse.Namespace) -> None:
    """`@FILE` for the system prompt or the guidance: the file's text."""
    from specialists.base.errors import UserError

    for dest, what in (("fields__system", "the system prompt"), ("guidance", "the guidance")):
        value = getattr(args, dest, None)
        if isinstance(value, str) and value.startswith("@"):
            try:
                setattr(args, dest, Path(value[1:]).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise UserError(f"cannot read {what} from {value[1:]}: {exc}") from None


_VERBS = ("create", "update", "delete", "eject", "disable", "enable", "reset")
TEXT = {
    "list": _list,
    **dict.fromkeys(_VERBS, _changed),
    **dict.fromkeys(("refine", "refine-show", "refine-rollback"), _overlay),
}
PREPARE = dict.fromkeys(("create", "update", "refine"), _from_files)
