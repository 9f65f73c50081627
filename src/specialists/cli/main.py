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

# Command -> the module (cli/cmd_<module>.py) that registers it; one module may add several.
COMMANDS = {
    "init": "init",
    "list": "list",
    "show": "show",
    "run": "run",
    "status": "status",
    "result": "result",
    "feed": "feed",
    "stop": "stop",
    "steer": "steer",
    "follow-up": "steer",
    "resume": "resume",
    "gc": "gc",
    "top": "top",
    "web": "web",
    "doctor": "doctor",
    "mcp": "mcp",
    "hook": "hook",
    "install": "install",
    "uninstall": "install",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that command's (the other modules stay unimported)."""
    parser = argparse.ArgumentParser(
        prog="specialists",
        description="Run specialist coding agents as supervised background jobs.",
    )
    parser.add_argument("--version", action="version", version=f"specialists {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"specialists.cli.cmd_{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(first)
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
