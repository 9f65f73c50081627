""" "Did you mean": a typo'd command, subcommand, choice or option gets the closest known one
instead of the whole list (as git, gh and kubectl do). Pure functions over a parser tree."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's ratio: "stauts" -> "status", "lsit" -> "list", not "x" -> "gc"


def closest(word: str, known: Iterable[str]) -> str | None:
    import difflib  # only for a typo: every command imports this module

    matches = difflib.get_close_matches(word, list(known), n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def unknown_choice(value: object, choices: Iterable[object], noun: str = "") -> str:
    """`unknown command 'stauts' (did you mean 'status'?)`, `invalid choice: 'x' (choose
    from a, b)`: the closest name, else the list when it is short."""
    known = [str(c) for c in choices]
    said = f"unknown {noun} {str(value)[:60]!r}" if noun else f"invalid choice: {str(value)[:60]!r}"
    near = closest(str(value), known)
    if near is not None:
        return f"{said} (did you mean {near!r}?)"
    if len(known) <= 8:
        return f"{said} (choose from {', '.join(known)})"
    return said


def innermost(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)parser the words of `argv` lead to: `bg run ...` -> the `bg run` parser."""
    current = parser
    for word in argv:
        if word == "--":
            break
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            current = subs[0].choices[word]
    return current


def unknown_options(parser: argparse.ArgumentParser, words: list[str]) -> str:
    """`unknown option --jsn (did you mean --json?)` for each option-like word of an
    "unrecognized arguments" error; other words are named as they are."""
    options = [s for a in parser._actions for s in a.option_strings]
    parts = []
    for word in words:
        name = word.split("=", 1)[0]
        if not name.startswith("-"):
            parts.append(f"unexpected argument {word[:60]!r}")
            continue
        near = closest(name, options)
        hint = f" (did you mean {near}?)" if near else ""
        parts.append(f"unknown option {name[:60]}{hint}")
    return "; ".join(parts)
