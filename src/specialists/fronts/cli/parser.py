"""The argparse side of the CLI: our error line, and a parser holding only the modules a
command needs (cli/main.py's COMMANDS). Kept out of main.py so that the hooks, which skip
argparse, do not pay for importing it."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn

from specialists import __version__
from specialists.base.errors import UserError
from specialists.fronts.cli.commands import COMMANDS, error_text


class Parser(argparse.ArgumentParser):
    """argparse with our error line: `error: <what> (see: specialists <cmd> --help)`, exit 2."""

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
    """The parser; with `only`, just that command's (the other modules stay unimported)."""
    parser = Parser(
        prog="specialists",
        description="Run specialist coding agents as supervised background jobs.",
    )
    parser.add_argument("--version", action="version", version=f"specialists {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"specialists.fronts.cli.cmd_{name}").add_parser(sub)
    return parser
