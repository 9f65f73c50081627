"""The CLI's habits of gh, uv and kubectl (issue 22 item 3): a grouped `--help` with examples
that parse, no internals in help text, "did you mean" for a typo'd command, subcommand,
choice or option, completion code for bash, zsh and fish, and the exit code for a missing
dependency. In-process `main`; no process is started."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from specialists.fronts.cli import help as cli_help
from specialists.fronts.cli.commands import COMMANDS, GROUPS
from specialists.fronts.cli.main import main
from specialists.fronts.cli.parser import build_parser

INTERNALS = re.compile(r"\.py\b|\bv3 spec\b|\bseed\b|\bR-[A-Z]+\d|\bissue \d|\bwave\b", re.I)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def every_parser(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += every_parser(child, (*path, name))
    return found


def test_every_command_is_in_exactly_one_group_and_the_help_lists_them_so(capsys):
    grouped = [name for _, names in GROUPS for name in names]
    assert sorted(grouped) == sorted(COMMANDS) and len(grouped) == len(set(grouped))
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and out.startswith("usage: specialists <command>")
    titles = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert [t.rstrip(":") for t in titles if t.rstrip(":") in dict(GROUPS)] == [
        title for title, _ in GROUPS
    ]
    for name in COMMANDS:
        assert re.search(rf"^  {re.escape(name)} +\S", out, re.M), name
    assert "examples:" in out and out.endswith("\n")


def test_the_written_root_help_is_the_parsers(capsys, monkeypatch):
    """`specialists`, `--help` and `-h` print root_help.txt without building the parser; it
    must be what the parser prints, and the parser prints it when the file is gone."""
    from specialists.fronts.cli import commands

    built = build_parser().format_help()
    assert commands.written_root_help() == built, "root_help.txt is stale: run scripts/cli-help"
    for form in ([], ["--help"], ["-h"]):
        assert main(form) == 0
        assert capsys.readouterr().out == built
    monkeypatch.setattr(commands, "ROOT_HELP", "/nonexistent/root_help.txt")
    assert commands.written_root_help() is None
    assert main(["--help"]) == 0 and capsys.readouterr().out == built


def test_help_text_cites_no_internals():
    for path, parser in every_parser(build_parser()):
        texts = [parser.description or "", parser.epilog or ""]
        texts += [a.help for a in parser._actions if a.help and a.help != argparse.SUPPRESS]
        for text in texts:
            assert not INTERNALS.search(text), f"specialists {' '.join(path)}: {text!r}"


def example_commands() -> list[tuple[str, list[str]]]:
    """Each `specialists ...` in the examples, as the shell would split it (up to a pipe,
    a redirection or the end of a `$(...)`)."""
    found = []
    for where, lines in cli_help.EXAMPLES.items():
        for line in lines:
            lexer = shlex.shlex(line.replace("$id", "1a2b3c4d"), posix=True, punctuation_chars=True)
            lexer.wordchars += "$=~/.*:-"
            tokens = list(lexer)
            while "specialists" in tokens:
                tokens = tokens[tokens.index("specialists") + 1 :]
                words = []
                for token in tokens:
                    if token in ("|", ">", ")", "$(", ";", "&&"):
                        break
                    words.append(token)
                found.append((where, words))
    return found


@pytest.mark.parametrize(("where", "words"), example_commands(), ids=lambda x: " ".join(x))
def test_every_example_in_the_help_parses(where, words):
    build_parser().parse_args(words)  # a stale example exits 2 here


def test_examples_show_under_each_command_help(capsys):
    code, out, _ = cli(capsys, "bg", "run", "--help")
    assert code == 0 and "examples:\n  id=$(specialists bg run" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["stauts"], "error: unknown command 'stauts' (did you mean 'status'?)"),
        (["timer", "lsit"], "error: unknown command 'lsit' (did you mean 'list'?)"),
        (["status", "--jsn"], "error: unknown option --jsn (did you mean --json?)"),
        (
            ["bg", "run", "--wath", "x", "ls"],
            "error: unknown option --wath (did you mean --watch?)",
        ),
        (["xyzzy"], "error: unknown command 'xyzzy' (see: specialists --help)"),
        (["completion", "fsh"], "(did you mean 'fish'?)"),
    ],
)
def test_a_typo_gets_the_closest_name_in_one_line_exit_2(capsys, argv, line):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and line in lines[0], err
    assert "choose from 'init'" not in err  # never the list of all 37 commands


def test_an_unknown_option_names_the_command_it_was_given_to(capsys):
    _, _, err = cli(capsys, "bg", "run", "--wath", "x", "ls")
    assert err.rstrip().endswith("(see: specialists bg run --help)")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_code_for_each_shell_names_both_commands(capsys, shell):
    code, out, _ = cli(capsys, "completion", shell)
    assert code == 0 and out.endswith("\n")
    assert "specialists" in out and re.search(r"\bsp\b", out)
    assert "_ARGCOMPLETE" in out  # it asks the program itself at each TAB


def test_a_missing_textual_is_the_missing_dependency_exit_code(capsys, monkeypatch):
    import sys

    for name in [m for m in sys.modules if m.startswith(("specialists.fronts.tui", "textual."))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "textual", None)
    code, _, err = cli(capsys, "top")
    assert code == 3 and "pip install 'specialists[tui]'" in err
