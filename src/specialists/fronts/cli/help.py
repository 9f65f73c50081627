"""`--help` as gh and uv print it: the commands in groups, and examples that run.

Small pieces any command can use, a generated one included: `Formatter` keeps an epilog's
layout, `EXAMPLES` holds each command's examples by its path ("run", "bg run"), `attach`
puts them on a built parser tree, and `root_help` prints the grouped command list
(commands.GROUPS). tests/unit/test_cli_habits.py parses every example, so none goes stale.
"""

from __future__ import annotations

import argparse

from specialists.fronts.cli.commands import GROUPS

PROG = "specialists"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "specialists init",
        'id=$(specialists run reviewer --prompt "Review the last commit" --background)',
        "specialists feed --job $id --follow",
        "specialists result $id",
        'specialists workflow run review_and_fix --arg gate="pytest -q"',
        'specialists timer set 600 --note "check CI"',
    ),
    "init": ("specialists init", "specialists init --no-register"),
    "list": ("specialists list", "specialists list --json"),
    "show": ("specialists show reviewer", "specialists show reviewer --json"),
    "run": (
        'specialists run reviewer --prompt "Review the last commit"',
        'id=$(specialists run explorer --prompt "Map the auth module" --background)',
        'specialists run executor --prompt "Fix the failing test" --gate "pytest -q" --sandbox',
        "specialists run explorer --runner native "
        '--model replay/examples/replay/explorer-demo.jsonl --prompt "How does a job run?"',
        "git diff | specialists run reviewer --prompt - --json",
    ),
    "status": ("specialists status", "specialists status $id", "specialists status --json"),
    "result": (
        "specialists result $id",
        "specialists result $id --wait --timeout 10m",
        "specialists result $id --raw > answer.md",
        "specialists result $id --json",
    ),
    "feed": (
        "specialists feed --follow",
        "specialists feed --job $id --follow",
        "specialists feed $id --tree",
    ),
    "steer": ('specialists steer $id "focus on error handling"',),
    "follow-up": ('specialists follow-up $id "now write the tests"',),
    "stop": ("specialists stop $id",),
    "interrupt": ("specialists interrupt $id",),
    "resume": ('specialists resume $id --prompt "go on"',),
    "wait": ("specialists wait --all --timeout 10m", "specialists wait $id --json"),
    "bg": (
        "specialists bg run \"make test\" --watch 'FAIL|error'",
        "specialists bg list",
        "specialists bg output $id --tail 20",
    ),
    "bg run": (
        "id=$(specialists bg run \"make test\" --watch 'FAIL|error')",
        "specialists bg run --timeout 10m --cancel-on-exit -- pytest -q",
    ),
    "timer": (
        'specialists timer set 600 --note "check CI"',
        'specialists timer set 90 --note "stretch" --wait',
        "specialists timer set --date 2026-12-24 --time 09:00 --zone Europe/Berlin",
        "specialists timer list",
    ),
    "timer set": (
        't=$(specialists timer set 600 --note "check CI")',
        "specialists timer set 90 --wait",
    ),
    "events": ("specialists events", "specialists events --follow", "specialists events --json"),
    "workflow": (
        'specialists workflow run review_and_fix --arg gate="pytest -q"',
        "id=$(specialists workflow run parallel_review --detach)",
        "specialists workflow show $id",
        "specialists workflow resume $id",
    ),
    "mission": (
        'specialists mission new "Ship the auth rewrite"',
        "specialists mission list",
        "specialists mission show ms-1a2b3c4d",
    ),
    "schedule": (
        'specialists schedule create nightly --cron "0 3 * * *" --zone Europe/Berlin '
        '--specialist reviewer --prompt "Review today\'s commits"',
        "specialists schedule list",
        "specialists schedule run-due",
    ),
    "asks": ("specialists asks", 'specialists reply ask-1a2b3c4d-1 "use the v2 API"'),
    "top": ("specialists top", "specialists top --active"),
    "web": ("specialists web", "specialists web --port 8765"),
    "doctor": ("specialists doctor", "specialists doctor --json"),
    "completion": (
        "specialists completion bash > ~/.local/share/bash-completion/completions/specialists",
        "specialists completion zsh > ~/.zfunc/_specialists",
        "specialists completion fish > ~/.config/fish/completions/specialists.fish",
    ),
    "clean": ("specialists clean --dry-run", "specialists clean --keep 20"),
    "gc": ("specialists gc", "specialists gc --days 1"),
}


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples keep their lines; option help wraps as usual."""


def examples_text(lines: tuple[str, ...]) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def attach(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Put each command's examples (EXAMPLES) under its help, down the whole tree."""
    if path and path in EXAMPLES and not parser.epilog:
        parser.epilog = examples_text(EXAMPLES[path])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                attach(child, f"{path} {name}".strip())


def root_help(parser: argparse.ArgumentParser) -> str:
    """The top-level help: usage, the commands by group with their one-line help, examples,
    where to learn more."""
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                helps[choice.dest] = choice.help or ""
    width = max((len(name) for name in helps), default=10) + 2
    out = [
        f"usage: {PROG} <command> [options]   (sp is the same command)",
        "",
        parser.description or "",
    ]
    for title, names in GROUPS:
        shown = [name for name in names if name in helps]
        if shown:
            out += ["", f"{title}:"]
            out += [f"  {name:<{width}}{helps[name]}" for name in shown]
    out += ["", examples_text(EXAMPLES[""])]
    out += [
        "",
        "learn more:",
        f"  {PROG} <command> --help            its options and examples",
        f"  {PROG} completion bash|zsh|fish    tab completion for your shell",
        "  docs/cli.md                            every command, its JSON shape, the exit codes",
        "",
    ]
    return "\n".join(out)
