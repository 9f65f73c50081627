"""Definition files -> parsed documents: bounded reading, then YAML or JSON with limits.

Every failure is one `Invalid` line: the file is not a regular file, too large, not UTF-8,
holds a NUL byte, does not parse (with line and column; 100,000 nested brackets stop the
parser), or parses into something too large or too deep to walk (YAML alias bombs, cycles). YAML is
imported only when a YAML file is read, never at CLI import time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specialists.base.reader import Invalid, check_tree, value_error_text
from specialists.base.reader.textfile import read_text_file
from specialists.base.vocab import SPEC_SUFFIXES


def read_definition(path: Path) -> str:
    """A definition's text. Raises `Invalid` (also when the file vanished after listing)."""
    try:
        return read_text_file(path)
    except FileNotFoundError:
        raise Invalid(None, "cannot read file: no such file (removed while loading?)") from None


def definition_stem(path: Path) -> str:
    """`reviewer.specialist.yaml` -> `reviewer`; other names -> ''."""
    name = path.name
    for suffix in SPEC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


def parse_yaml(text: str, *, what: str = "YAML", first_line: int = 1, bounded: bool = True) -> Any:
    """yaml.safe_load with any failure turned into one `Invalid` line (with the file's line
    number; `first_line` is where `text` starts in the file). `bounded=False` leaves the
    size check (`check_tree`) to the caller."""
    import yaml  # only the catalog reads YAML; keep it off the CLI's import path

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # CSafeLoader/SafeLoader only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark else ""
        reason = " ".join((exc.problem or exc.context or "syntax error").split())
        raise Invalid(None, f"invalid {what}{where}: {reason}") from None
    except yaml.YAMLError as exc:
        raise Invalid(None, f"invalid {what}: {' '.join(str(exc).split())}") from None
    except (ValueError, OverflowError) as exc:  # a timestamp like 2024-13-45, a huge integer
        raise Invalid(None, f"invalid {what}: {value_error_text(exc)}") from None
    except RecursionError:
        raise Invalid(None, f"invalid {what}: nested too deeply") from None
    if bounded and may_alias(text):
        check_tree(data, f"the {what} document")
    return data


def may_alias(text: str) -> bool:
    """Only a YAML alias (`*name`) makes a small text a large document (each use repeats
    the anchored value), so the tree is walked only when the text could hold one."""
    return "*" in text


def parse_json(text: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(
            None, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise Invalid(None, f"invalid JSON: {value_error_text(exc)}") from None
    except RecursionError:
        raise Invalid(None, "invalid JSON: nested too deeply") from None
    return data  # JSON has no aliases: its size is bounded by the text, read capped


def parse_definition(path: Path, text: str) -> Any:
    return parse_json(text) if path.name.endswith(".json") else parse_yaml(text)
