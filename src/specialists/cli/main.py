"""`specialists` / `sp`: argparse entry point. One module per command, imported lazily.

Each command module exposes `add_parser(subparsers)` (which sets `run` as the default) and
`run(args) -> int`. Modules keep their top-level imports light, so `status`, `result` and
`feed` start fast; heavy imports live inside the commands that need them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from specialists import __version__
from specialists.errors import SpecialistsError, StoreError

COMMANDS = (
    "init",
    "list",
    "show",
    "run",
    "status",
    "result",
    "feed",
    "stop",
    "steer",
    "resume",
    "gc",
    "doctor",
    "mcp",
    "hook",
    "install",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specialists",
        description="Run specialist coding agents as supervised background jobs.",
    )
    parser.add_argument("--version", action="version", version=f"specialists {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only and not _owns(name, only):
            continue
        try:
            module = importlib.import_module(f"specialists.cli.cmd_{name.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            if exc.name != f"specialists.cli.cmd_{name}":
                raise
            continue  # a command not built yet
        module.add_parser(sub)
    return parser


def _owns(module: str, command: str) -> bool:
    """Modules that register more than one command (steer also adds follow-up, ...)."""
    return {"steer": {"follow-up"}, "install": {"uninstall"}}.get(module, set()).__contains__(
        command
    )


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Build only the parser of the command asked for: the others' modules stay unimported.
    first = next((a for a in args_list if not a.startswith("-")), None)
    known = first if first in COMMANDS or first in ("follow-up", "uninstall") else None
    parser = build_parser(known)
    args = parser.parse_args(args_list)
    if not getattr(args, "run", None):
        build_parser().print_help()
        return 0 if not args_list else 2
    try:
        code: int = args.run(args)
    except SpecialistsError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # A damaged or unreadable .specialists/ (a file where a directory belongs, no
        # permission, a full disk): one line naming the path, exit 4 as for the store.
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return StoreError.exit_code
    return code


def describe_os_error(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def entry() -> None:
    sys.exit(main())
