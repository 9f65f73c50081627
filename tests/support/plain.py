"""The one check of a plain form (fronts/cli/commands.py `plain_args`) against argparse."""

from __future__ import annotations

from collections.abc import Iterable

from specialists.fronts.cli.commands import plain_args
from specialists.fronts.cli.parser import build_parser


def plain_forms_read_as_argparse(command: str, forms: Iterable[list[str]]) -> int:
    """Every form read plainly gives argparse's namespace; every form argparse refuses (or
    answers itself, as --help) is left to it. Returns how many were read plainly."""
    parser = build_parser(command)
    plain_count = 0
    for argv in forms:
        plain = plain_args(argv)
        try:
            parsed = vars(parser.parse_args(argv))
        except SystemExit:
            assert plain is None, argv
            continue
        if plain is not None:
            plain_count += 1
            assert vars(plain) == parsed, argv
    return plain_count
