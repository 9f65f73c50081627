"""`run`'s plain forms are read without argparse (fronts/cli/commands.py `plain_args`, its
module's `PLAIN`) and give exactly argparse's namespace; every other form is left to it."""

from __future__ import annotations

import itertools

import pytest

from specialists.fronts.cli import cmd_run, main
from specialists.fronts.cli.commands import plain_args
from specialists.fronts.cli.parser import build_parser
from tests.support.plain import plain_forms_read_as_argparse

# What a run may be given, a flag or an option with its value each: the plain ones, and what
# only argparse reads (a value it converts or refuses, `--opt=value`, an abbreviation, a
# bundle of short flags, a dash-led value, `--`, --help).
WORDS = [
    ["tester"],
    ["other"],
    ["--prompt", "hello there"],
    ["-p", "x"],
    ["-b"],
    ["--background"],
    ["--json"],
    ["--attach"],
    ["--keep-alive"],
    ["--no-beads"],
    ["--sandbox"],
    ["--model", "mock/mock-model"],
    ["--continue", "0000abcd"],
    ["--max-tokens", "200k"],
    ["--cwd", ""],
    ["--model", "  "],
    ["--runner", "a\x00b"],
    ["--prompt"],
    ["--timeout", "5s"],
    ["--var", "k=v"],
    ["--prompt=x"],
    ["--prom", "x"],
    ["-bp", "x"],
    ["-p", "-"],
    ["--gate", "--json"],
    ["--watchdog"],
    ["--"],
    ["--help"],
]


def _forms() -> list[list[str]]:
    """Every order of up to two, every choice of three (in WORDS' order)."""
    picks = [*itertools.chain.from_iterable(itertools.permutations(WORDS, n) for n in range(3))]
    picks += itertools.combinations(WORDS, 3)
    forms = [["run", *itertools.chain.from_iterable(words)] for words in picks]
    return [*forms, ["-b", "run", "tester"], ["run", "tester", "-p", "a", "-p", "b"]]


def test_a_plain_form_reads_as_argparse_reads_it(capsys):
    plain_count = plain_forms_read_as_argparse("run", _forms())
    capsys.readouterr()
    assert plain_count > 150  # run NAME -p TEXT -b, run NAME --json --model M, ...


def test_every_dest_of_the_run_parser_has_its_plain_default():
    parsed = vars(build_parser("run").parse_args(["run", "tester"]))
    assert {**cmd_run.PLAIN.defaults, "name": "tester", "command": "run", "run": cmd_run.run} == (
        parsed
    )


def test_a_plain_run_never_shares_its_default_list():
    first = plain_args(["run", "tester"])
    assert first is not None
    first.var.append("k=v")
    second = plain_args(["run", "tester"])
    assert second is not None and second.var == []


@pytest.mark.parametrize("argv", [["run", "tester", "--prompt", ""], ["run", "--help"]])
def test_what_the_plain_form_leaves_argparse_still_answers(argv, capsys):
    assert plain_args(argv) is None
    code = main.main(argv)
    out = capsys.readouterr()
    assert code in (0, 2), out
    assert "usage" in out.out or "error" in out.err
