"""The argparse side of the CLI: our error line with "did you mean", the grouped help with
examples, and a parser holding only the modules a command needs (commands.COMMANDS). Kept
out of main.py so that the hooks, which skip argparse, do not pay for importing it."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from specialists import __version__
from specialists.base.errors import UserError
from specialists.fronts.cli import help as cli_help
from specialists.fronts.cli.commands import COMMANDS, READS, error_text
from specialists.fronts.cli.suggest import innermost, unknown_choice, unknown_options


class Parser(argparse.ArgumentParser):
    """argparse with our error line: `error: <what> (see: specialists <cmd> --help)`, exit 2;
    a typo gets the closest name; the root's help lists the commands by group."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", cli_help.Formatter)
        self.grouped = bool(kwargs.pop("grouped", False))
        super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:  # named by the command they were given to, with the closest known option
            target = innermost(self, argv)
            target.error(unknown_options(target, extras))
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            if isinstance(action, argparse._SubParsersAction):  # `stauts`: no "argument" jargon
                raise argparse.ArgumentError(None, unknown_choice(value, action.choices, "command"))
            raise argparse.ArgumentError(action, unknown_choice(value, action.choices))

    def format_help(self) -> str:
        return cli_help.root_help(self) if self.grouped else super().format_help()

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # argparse drops a lone "--" even from `--timeout=--`, leaving [] as the option's
        # value: give the option its text instead, for its type to judge (and refuse).
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            return self._get_value(action, "--")
        return super()._get_values(action, arg_strings)

    def error(self, message: str) -> NoReturn:
        hint = f"see: {self.prog} --help"
        print(f"error: {error_text(message)} ({hint})", file=sys.stderr)
        raise SystemExit(UserError.exit_code)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that command's (the other modules stay unimported, and
    a read verb's boots no feature)."""
    parser = Parser(
        prog="specialists",
        description="Run specialist coding agents as supervised background jobs.",
        grouped=True,
    )
    parser.add_argument("--version", action="version", version=f"specialists {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from specialists.base import ops
    from specialists.project import boot

    if only not in READS:
        boot()  # the operations table: the features name their nouns
    commands = [only] if only in COMMANDS else list(COMMANDS)
    done: set[str] = set()
    for command in commands:
        module = f"specialists.fronts.cli.cmd_{COMMANDS[command]}" if COMMANDS[command] else None
        noun = ops.noun(command)
        if noun is not None:
            from specialists.fronts.cli.generated import add_noun

            add_noun(sub, noun, module)
        elif module is not None and module not in done:
            done.add(module)
            importlib.import_module(module).add_parser(sub)
    cli_help.attach(parser)
    return parser
