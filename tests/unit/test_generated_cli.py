"""What the generated command line (fronts/cli/generated.py) adds for the nouns whose commands
were hand-parsed: a noun's bare op beside its verbs (`claims`, `claims release`), options
that exclude each other (`clean --days | --all`), a verb that asks the person first and runs
its op again once they said yes (no `--json` for it), another verb run from a renderer
(`merge start --wait`), and a refusal's one line without the settings' warnings."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import pytest

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli
from specialists.fronts.cli.consent import confirmed, yes_flag
from specialists.fronts.cli.generated import add_noun
from specialists.project import Project

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller

CALLS: list[tuple[str, dict[str, Any]]] = []


def look(
    caller: Caller,
    *,
    days: Annotated[float | None, Cli(group="age")] = None,
    all: Annotated[bool, Cli(group="age")] = False,
) -> dict[str, Any]:
    """Look."""
    CALLS.append(("look", {"days": days, "all": all}))
    if days == 13:
        raise UserError("unlucky")
    return {"days": days, "all": all}


def drop(
    caller: Caller, name: str, /, *, confirmed: Annotated[bool, Cli(hidden=True)] = False
) -> dict[str, Any]:
    """Drop it (asks first)."""
    CALLS.append(("drop", {"name": name, "confirmed": confirmed}))
    return {"dropped": confirmed, "question": f"drop {name}?"}


THING = Noun("thing", "a test noun", (Op(look, tool=None), Op(drop, "drop", tool=None)))


def _looked(data: dict[str, Any], args: argparse.Namespace) -> int:
    print(f"looked {data['days']} {data['all']}")
    return 0


def _dropped(data: dict[str, Any], args: argparse.Namespace) -> int:
    if not confirmed(data["question"], args.yes):
        return 1
    again = args.again(confirmed=True)
    other = args.again("", days=2.0)  # the bare op, from this verb's renderer
    print(f"dropped {again['dropped']}; then looked {other['days']}")
    return 0


TEXT = {"thing": _looked, "drop": _dropped}
FLAGS = {"drop": yes_flag}
ASKS = ("drop",)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specialists")
    sub = parser.add_subparsers(required=True)
    add_noun(sub, THING, __name__)
    args = parser.parse_args(argv)
    return int(args.run(args, Project()))


@pytest.fixture(autouse=True)
def _calls() -> None:
    CALLS.clear()


def test_the_bare_op_runs_without_a_verb_and_a_verb_runs_its_own(capsys) -> None:
    assert run(["thing", "--days", "3"]) == 0
    assert capsys.readouterr().out == "looked 3.0 False\n"
    assert run(["thing", "--json"]) == 0
    assert capsys.readouterr().out.strip() == '{"days": null, "all": false}'
    assert run(["thing", "drop", "x", "--yes"]) == 0
    assert capsys.readouterr().out == "dropped True; then looked 2.0\n"
    assert CALLS == [
        ("look", {"days": 3.0, "all": False}),
        ("look", {"days": None, "all": False}),
        ("drop", {"name": "x", "confirmed": False}),
        ("drop", {"name": "x", "confirmed": True}),
        ("look", {"days": 2.0, "all": False}),
    ]


def test_options_of_one_group_exclude_each_other(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        run(["thing", "--days", "1", "--all"])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert CALLS == []


def test_a_verb_that_asks_first_has_no_json_and_needs_a_terminal_or_yes(capsys) -> None:
    with pytest.raises(SystemExit):
        run(["thing", "drop", "x", "--json"])
    assert "unrecognized arguments: --json" in capsys.readouterr().err
    with pytest.raises(UserError, match="no terminal to confirm on"):
        run(["thing", "drop", "x"])  # the tests' stdin is not a terminal
    assert CALLS == [("drop", {"name": "x", "confirmed": False})]  # asked, never confirmed


def test_a_refusal_is_its_own_line_without_the_settings_warnings(capsys) -> None:
    state = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.toml").write_text("[no_such_table]\nkey = 1\n")
    assert run(["thing"]) == 0
    assert "no_such_table" in capsys.readouterr().err  # said beside an answer
    with pytest.raises(UserError, match="unlucky"):
        run(["thing", "--days", "13"])
    assert capsys.readouterr().err == ""
