"""`specialists completion bash|zsh|fish`: the shell code for tab completion.

Completion is argcomplete's: the printed code asks `specialists` itself for the words at each
TAB (commands, options, choices, and job ids from this project's store), so it never goes
stale. main.py hands over to argcomplete only when the shell asks (`_ARGCOMPLETE` in the
environment); every other start pays nothing for it.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.project import Project

SHELLS = ("bash", "zsh", "fish")
NAMES = ("specialists", "sp")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "completion",
        help="print tab completion for bash, zsh or fish",
        description="Print the code that gives `specialists` and `sp` tab completion in your "
        'shell. Load it in the current shell with `eval "$(specialists completion bash)"` '
        "(zsh: the same; fish: `specialists completion fish | source`), or save it as the "
        "examples show.",
    )
    p.add_argument("shell", choices=SHELLS, help="your shell")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.errors import AgentUnavailable

    try:
        import argcomplete
    except ImportError as exc:  # a dependency; missing only in a broken install
        raise AgentUnavailable(
            "completion needs the argcomplete package", hint="pip install argcomplete"
        ) from exc
    code = argcomplete.shellcode(list(NAMES), shell=args.shell)
    sys.stdout.write(code if code.endswith("\n") else code + "\n")
    return 0


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit (argcomplete's protocol): commands,
    options and choices from the parser; job ids and specialist names from this project."""
    import argcomplete

    _add_completers(parser)
    argcomplete.autocomplete(parser, always_complete_options="long")


JOB_ARGS = frozenset({"job", "job_id", "jobs", "id", "parent", "continue_from"})


def _add_completers(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if name in ("run", "show") and parser.prog == "specialists":
                    for a in child._actions:
                        if a.dest == "name":
                            a.completer = specialist_names
                _add_completers(child)
        elif action.dest in JOB_ARGS:
            action.completer = job_ids  # type: ignore[attr-defined]


def job_ids(prefix: str = "", **_: object) -> list[str]:
    """This project's job ids, newest first (a listing of .specialists/jobs/)."""
    import os

    from specialists.project import Project

    folder = Project().store.jobs_dir
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix)]
    except OSError:
        return []
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
    return [e.name for e in entries[:200] if not e.name.startswith(".")]


def specialist_names(prefix: str = "", **_: object) -> list[str]:
    from specialists.catalog.discovery import load_catalog
    from specialists.project import Project

    return [n for n in load_catalog(Project().root).names() if n.startswith(prefix)]
