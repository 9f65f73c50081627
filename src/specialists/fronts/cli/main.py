"""`specialists` / `sp`: argparse entry point. One module per command, imported lazily.

Each command module exposes `add_parser(subparsers)` (which sets `run` as the default) and
`run(args, project) -> int`. `main` opens the project once (`specialists.project.Project`:
the root and the job store, found on first use) and hands it to the command, as pre-commit
hands its store. Modules keep their top-level imports light, so `status`, `result` and
`feed` start fast; heavy imports live inside the commands that need them.

Every failure leaves as one line, `error: <what> (<hint>)`, and an exit code from the table
in docs/cli.md. A failure nobody planned for (a bug) also gets that one line, naming the log
file that holds its traceback; no traceback reaches the terminal.
"""

from __future__ import annotations

import os
import sys

from specialists import __version__
from specialists.base.errors import (
    Bug,
    SpecialistsError,
    StoreError,
    UserError,
    bound_tracebacks,
    exception_text,
)
from specialists.fronts.cli.collector import collect_from_here, hold
from specialists.fronts.cli.commands import (
    HOOK_EVENTS,
    OPS_FIRST,
    QUIET_AFTER,
    READS,
    ROOT_HELP_FORMS,
    error_text,
    plain_args,
    written_root_help,
)

# `typing` costs ~5 ms and every hook run starts here: annotations are strings, so only
# type checkers import it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# Exit codes (docs/cli.md): 0 ok, 1 the job (or check) did not succeed, 2 bad input,
# 3 agent CLI or credential missing, 4 job store unreadable, 70 a bug, 130 interrupted.
EXIT_BUG = Bug.exit_code
EXIT_INTERRUPTED = 130
ERROR_LOG = "errors.log"


def main(argv: Sequence[str] | None = None) -> int:
    bound_tracebacks()
    args_list = list(sys.argv[1:] if argv is None else argv)
    hook = hook_event(args_list)
    if hook is not None:  # Claude Code waits on every hook: skip argparse and the project
        from specialists.fronts.hooks.common import run_hook

        collect_from_here()
        return run_hook(hook, sys.stdin, sys.stdout)
    stdio = mcp_stdio_args(args_list)
    if stdio is not None:  # an MCP client waits for this start: skip argparse and the project
        from specialists.fronts.cli.cmd_mcp import serve_stdio

        collect_from_here()
        return _guarded(lambda: serve_stdio(*stdio), args_list)
    completing = "_ARGCOMPLETE" in os.environ  # the shell asks for completions
    if args_list in ROOT_HELP_FORMS and not completing:
        text = written_root_help()
        if text is not None:
            sys.stdout.write(text)
            return 0
    args: Any = None if completing else plain_args(args_list)  # a person waits: no argparse
    if args is None and not completing and args_list and args_list[0] in OPS_FIRST:
        from specialists.fronts.cli.generated import plain_op_args

        args = plain_op_args(args_list)  # `stop JOB`, `timer list`: the operations table's
    if args is None:
        from specialists.fronts.cli.parser import build_parser

        if completing:
            from specialists.fronts.cli.cmd_completion import complete

            complete(build_parser())
        first = next((a for a in args_list if not a.startswith("-")), None)
        try:
            args = build_parser(first).parse_args(args_list)
        except SystemExit as exc:  # --help, --version, or a usage error (already printed)
            return exc.code if isinstance(exc.code, int) else UserError.exit_code
        if not getattr(args, "run", None):
            build_parser().print_help()
            return 0 if not args_list else UserError.exit_code
    from specialists.project import Project

    project = Project(lazy=args.command in READS)

    def told() -> None:
        if args.command not in QUIET_AFTER:
            from specialists.fronts.cli.tell import tell_person

            tell_person(project)  # a timer the person set, a command they started: said now

    collect_from_here()
    return _guarded(lambda: args.run(args, project), args_list, after=told)


def _guarded(
    command: Callable[[], int], args_list: list[str], after: Callable[[], None] | None = None
) -> int:
    """Run the command (then `after`, when it returned); every failure leaves as one line
    and an exit code."""
    try:
        code: int = command()
    except Bug as exc:
        return report_bug(exc, args_list)
    except SpecialistsError as exc:
        print(f"error: {error_text(exc.one_line())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except OSError as exc:
        # A damaged or unreadable .specialists/ (a file where a directory belongs, no
        # permission, a full disk): one line naming the path, exit 4 as for the store.
        print(f"error: {error_text(describe_os_error(exc))}", file=sys.stderr)
        return StoreError.exit_code
    except Exception as exc:  # noqa: BLE001 - the catch-all: logged with its traceback
        return report_bug(exc, args_list)
    if after is not None:
        after()
    return code


def mcp_stdio_args(args: list[str]) -> tuple[str, str | None] | None:
    """(tool set, job id) for exactly `mcp`, `mcp --tools <set>` or `mcp --job <id>`: the
    MCP server's fast path (anything else, `--http` and `--help` included, goes through
    argparse and its errors)."""
    if not args or args[0] != "mcp":
        return None
    from specialists.fronts.cli.cmd_mcp import TOOLSETS

    if args == ["mcp"]:
        return "all", None
    if len(args) == 3 and args[0] == "mcp" and args[1] == "--tools" and args[2] in TOOLSETS:
        return args[2], None
    if len(args) == 3 and args[0] == "mcp" and args[1] == "--job":
        return "all", args[2]
    return None


def hook_event(args: list[str]) -> str | None:
    """`hook <event>` exactly, for a known event: the hooks' fast path (anything else,
    `--help` included, goes through argparse and its errors)."""
    if len(args) != 2 or args[0] != "hook":
        return None
    return args[1] if args[1] in HOOK_EVENTS else None


def report_bug(exc: BaseException, argv: list[str]) -> int:
    """One line naming the log that holds the traceback; exit 70."""
    import time
    import traceback

    from specialists.store import logfile

    what = exc.message if isinstance(exc, Bug) else f"bug: {exception_text(exc)}"
    what = error_text(what)
    trace = "".join(traceback.format_exception(exc))
    entry = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} specialists {__version__} argv={argv!r}\n{trace}"
    try:
        path = logfile.append(ERROR_LOG, entry)
    except OSError as log_exc:
        print(f"error: {what} (could not write {ERROR_LOG}: {log_exc})", file=sys.stderr)
        print(trace, file=sys.stderr, end="")  # nowhere else to keep it
        return EXIT_BUG
    print(f"error: {what} (traceback in {path}; please report it)", file=sys.stderr)
    return EXIT_BUG


def _quiet_stdout() -> None:
    """The reader went away (`| head`): drop what is left instead of failing at exit."""

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        return  # no real descriptor (tests): nothing will be flushed to it anyway


def describe_os_error(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def entry() -> None:
    hold()  # until the command is loaded (collect_from_here)
    sys.exit(main())
