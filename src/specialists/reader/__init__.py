"""Read untrusted data field by field: typed values out, one clear problem per mistake.

Specialist definitions (YAML, JSON, Markdown frontmatter), config.toml and MCP tool
arguments are all read through this module, so they refuse the same things the same way:

    fields = Fields(data, "execution", warnings)
    model = fields.text("model", form="line", max_chars=256)    # str | None
    limit = fields.integer("max_turns", low=1, high=MAX_COUNT)  # int | None
    fields.finish()            # one warning per unknown key, with a close name if any

A problem is raised as `Invalid`: the field by its dotted path (`execution.timeout_ms`,
`tasks[0].prompt`), what was expected and what was found. Each front renders it in its
own words (`path: field: expected ...` for files, `run: argument 'x' must be ...` for MCP).

Text is refused where it would break what it reaches: a NUL character (an argv string or a
file name cannot hold one; the agent spawn would crash), a lone surrogate (it cannot be
encoded for a pipe or a file), control characters in one-line values (a model name, a
command, a path) and values longer than the caller allows. A leaf package: standard library
only, and nothing slow at import time (the fast commands may import it).

    values.py   Invalid, describe, and the checks of one value (text, numbers, choices)
    fields.py   Fields: a mapping read key by key
    trees.py    check_tree, plain_data, load_json: parsed documents walked within bounds
    textfile.py read_text_file: a small regular file read without hanging on a FIFO
"""

from __future__ import annotations

from specialists.reader.fields import Fields
from specialists.reader.trees import check_tree, load_json, plain_data
from specialists.reader.values import (
    MAX_ARG_BYTES,
    MAX_COUNT,
    MAX_EXACT,
    Describe,
    Invalid,
    ProblemKind,
    TextForm,
    check_text,
    choice_value,
    clip,
    describe,
    describe_json,
    integer_value,
    join,
    number_value,
    suggest,
    text_value,
    unknown_key_problem,
    value_error_text,
)

__all__ = [
    "MAX_ARG_BYTES",
    "MAX_COUNT",
    "MAX_EXACT",
    "Describe",
    "Fields",
    "Invalid",
    "ProblemKind",
    "TextForm",
    "check_text",
    "check_tree",
    "choice_value",
    "clip",
    "describe",
    "describe_json",
    "integer_value",
    "join",
    "load_json",
    "number_value",
    "plain_data",
    "suggest",
    "text_value",
    "unknown_key_problem",
    "value_error_text",
]
