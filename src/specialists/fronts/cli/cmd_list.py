"""`specialists list [--json]`: the resolved catalog, one line per specialist."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specialists.project import Project


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "list",
        help="list the specialists available here",
        description="List specialists from project, user and builtin scopes (project wins).",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.catalog import load_catalog, specialist_to_dict

    catalog = load_catalog(project.root)
    specs = catalog.all()
    if args.json:
        payload = {
            "specialists": [specialist_to_dict(s) for s in specs],
            "problems": [
                {"path": str(p.path), "field": p.field, "problem": p.problem}
                for p in catalog.problems
            ],
            "shadowed": [
                {"name": w.name, "winner": str(w.source), "shadowed": str(loser.source)}
                for w, loser in catalog.shadowed
            ],
        }
        print(json.dumps(payload, indent=2))
        return 0
    from specialists.base.display import for_terminal

    # Definition files are anyone's text: show their control characters, never obey them.
    rows: list[tuple[str, ...]] = [
        tuple(
            for_terminal(cell, keep_newlines=False)
            for cell in (
                s.name,
                s.scope,
                "/".join(x for x in (s.runner or "default", s.model) if x),
                s.permission,
                " ".join(s.description.split()),
            )
        )
        for s in specs
    ]
    print(format_table(("NAME", "SCOPE", "RUNNER/MODEL", "PERMISSION", "DESCRIPTION"), rows))
    for spec in specs:
        for warning in spec.warnings:
            print(
                for_terminal(f"{spec.source}: warning: {warning}", keep_newlines=False),
                file=sys.stderr,
            )
    for problem in catalog.problems:
        print(for_terminal(problem.one_line(), keep_newlines=False), file=sys.stderr)
    return 0


def format_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns; the last column is cut to the terminal width."""
    if not rows:
        return "no specialists found"
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header) - 1)]
    width = shutil.get_terminal_size((100, 24)).columns
    room = max(20, width - sum(widths) - 2 * len(widths))
    lines = []
    for row in (header, *rows):
        cells = [row[i].ljust(widths[i]) for i in range(len(widths))]
        last = row[-1] if len(row[-1]) <= room else row[-1][: room - 3] + "..."
        lines.append("  ".join([*cells, last]).rstrip())
    return "\n".join(lines)
