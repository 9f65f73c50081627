"""The plain forms of the operations table's commands (fronts/cli/generated.py): for every op
of every noun, a form it reads gives the namespace the parser gives, and whatever it does
not read (or the parser refuses) is left to argparse."""

from __future__ import annotations

import random
from typing import Any

import pytest

from specialists.base import ops
from specialists.base.opschema import Param, signature
from specialists.fronts.cli.commands import COMMANDS
from specialists.fronts.cli.generated import _flags, plain_op_args
from specialists.fronts.cli.parser import build_parser
from specialists.project import boot

boot()  # the features name their nouns

SIMPLE = ("str", "int", "float", "bool", "choice")
# What a person types most: each must be read without argparse.
EVERYDAY = [
    ["stop", "ab12"],
    ["steer", "ab12", "look", "at", "the", "tests"],
    ["steer", "ab12", "go", "on", "--recover"],
    ["steer", "--children", "ab12", "stop", "now"],
    ["follow-up", "ab12", "and", "then"],
    ["follow-up", "ab12", "x", "--no-wait", "--json"],
    ["interrupt", "ab12"],
    ["children"],
    ["children", "ab12", "--last", "3"],
    ["timer", "list"],
    ["timer", "list", "--json"],
    ["asks"],
    ["asks", "--all", "--owner", "cli-someone"],
    ["bg", "list"],
    ["mission", "list"],
    ["schedule", "list"],
    ["threads"],
    ["claims"],
    ["mission", "close", "m1", "--summary", "s", "--status", "failed"],
]


def _value(param: Param) -> str:
    if param.kind == "choice":
        return param.choices[-1]
    return {"int": "3", "float": "2.5"}.get(param.kind, "abc")


def _forms() -> list[list[str]]:
    """For each op: its required positionals alone, with `--json`, with each simple option,
    and with every simple option before them."""
    forms = []
    for command in sorted(ops.registered()):
        noun = ops.noun(command)
        assert noun is not None and command in COMMANDS
        for op in (o for o in noun.ops if o.cli):
            head = [command, *op.verb.split()]
            positionals: list[str] = []
            options: list[list[str]] = []
            for param in signature(op.fn).params:
                if param.cli.hidden or param.kind not in SIMPLE:
                    continue
                if param.positional:
                    words = ["two", "words"] if param.cli.words else [_value(param)]
                    positionals += words if param.required else []
                else:
                    flag = (param.cli.flags or (f"--{param.name.replace('_', '-')}",))[0]
                    options.append([flag] if param.kind == "bool" else [flag, _value(param)])
            forms.append(head + positionals)
            forms.append([*head, *positionals, "--json"])
            forms += [head + positionals + option for option in options]
            forms.append(head + [w for option in options for w in option] + positionals)
    return forms


def _parsed(argv: list[str]) -> dict[str, Any] | None:
    try:
        namespace = build_parser(argv[0]).parse_args(argv)
    except SystemExit:
        return None
    return {k: v for k, v in vars(namespace).items() if k != "run"}


def test_every_form_read_plainly_is_what_the_parser_reads(capsys: pytest.CaptureFixture) -> None:
    read = 0
    for argv in _forms():
        plain = plain_op_args(argv)
        if plain is None:
            continue
        read += 1
        mine = {k: v for k, v in vars(plain).items() if k != "run"}
        assert mine == _parsed(argv), argv
        assert callable(plain.run)
    capsys.readouterr()
    assert read > 150  # most of the ops' forms are plain


@pytest.mark.parametrize("argv", EVERYDAY, ids=" ".join)
def test_what_a_person_types_most_is_read_without_argparse(argv: list[str]) -> None:
    plain = plain_op_args(argv)
    assert plain is not None
    assert {k: v for k, v in vars(plain).items() if k != "run"} == _parsed(argv)


LEFT_TO_ARGPARSE = [
    ["stop"],  # the job is missing: argparse says so
    ["stop", "ab12", "cd34"],  # one too many
    ["stop", "ab12", "--bogus"],
    ["stop", "ab12", "--json=yes"],
    ["stop", "ab12", "--", "x"],
    ["stop", "-h"],
    ["steer", "ab12"],  # no message
    ["steer", "ab12", "go", "--recover", "on"],  # words after an option: argparse refuses
    ["steer", "ab12", "go", "--rec"],  # an abbreviation
    ["follow-up", "ab12", "-"],  # stdin's dash
    ["children", "--last", "many"],
    ["children", "--last"],
    ["children", "--last", "-3"],
    ["mission", "close", "m1", "--summary", "s", "--status", "won"],  # no such choice
    ["timer"],  # no verb
    ["timer", "lis"],  # a typo: argparse suggests
    ["timer", "set", "5m"],  # a duration
    ["clean", "--days", "3", "--all"],  # options of one group
    ["list"],  # not an op at all
    # argparse ends the positionals at the option: the optional key is taken as absent
    ["mission", "state", "get", "m1", "--json", "k1"],
]


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE, ids=" ".join)
def test_what_a_plain_form_does_not_take_is_left_to_argparse(argv: list[str]) -> None:
    assert plain_op_args(argv) is None


# Words a person may type by mistake, or that argparse reads in its own way.
ODD_WORDS = ["--", "-", "-x", "-5", "-h", "--help", "--json=1", "=", "", "\t", " 5", "1e3", "nan"]
ODD_WORDS += ["1_000", "0x10", "\u0663", "\u00e9", "x", "3", "2.5", "ab12", "--json", "--owner"]


def test_random_lines_read_plainly_are_what_the_parser_reads(
    capsys: pytest.CaptureFixture,
) -> None:
    """Each op's verb, then up to seven words drawn from its flags, its choices and odd words:
    every line read plainly gives argparse's namespace, and none argparse refuses is read."""
    rng = random.Random(20)  # the same lines every run
    read = 0
    for command in sorted(ops.registered()):
        noun = ops.noun(command)
        assert noun is not None
        for op in (o for o in noun.ops if o.cli):
            words = [*ODD_WORDS, *op.verb.split()]
            for param in signature(op.fn).params:
                words += [] if param.positional else list(_flags(param))
                words += list(param.choices) if param.kind == "choice" else []
            for _ in range(40):
                argv = [command, *op.verb.split()]
                argv += [rng.choice(words) for _ in range(rng.randint(0, 7))]
                plain = plain_op_args(argv)
                if plain is not None:
                    read += 1
                    mine = {k: v for k, v in vars(plain).items() if k != "run"}
                    assert mine == _parsed(argv), argv
    capsys.readouterr()
    assert read > 200  # enough lines are read plainly for the comparison to mean something
