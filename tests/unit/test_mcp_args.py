"""MCP tool arguments through the typed reader: values that would crash a spawn later are
refused at the door, with the argument named, in one line."""

from __future__ import annotations

import re

import jsonschema
import pytest

from specialists.base.errors import UserError
from specialists.base.reader.arguments import ONE_LINE_PATTERN, check_arguments
from specialists.fronts.mcp.table import TOOLS_BY_NAME

RUN_ARGS = TOOLS_BY_NAME["run"].input_schema
FEED_ARGS = TOOLS_BY_NAME["feed"].input_schema
PARALLEL_ARGS = TOOLS_BY_NAME["run_parallel"].input_schema


def refused(schema: dict[str, object], arguments: dict[str, object], tool: str = "run") -> str:
    with pytest.raises(UserError) as info:
        check_arguments(tool, schema, arguments)
    line = info.value.one_line()
    assert line.startswith(f"{tool}: ") and "\n" not in line
    return line


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"model": "a\x00b"}, "argument 'model' contains a NUL character (at character 1)"),
        ({"model": "m\ne"}, "argument 'model' contains a control character (U+000A"),
        ({"model": "\x1b]0;x\x07"}, "argument 'model' contains a control character (U+001B"),
        ({"model": "m" * 257}, "argument 'model' is too long (257 > 256 characters)"),
        ({"specialist": "a\tb"}, "argument 'specialist' contains a control character"),
        ({"cwd": "/tmp\x00/x"}, "argument 'cwd' contains a NUL character"),
        ({"bead": "b\r"}, "argument 'bead' contains a control character"),
        ({"prompt": "do\x00it"}, "argument 'prompt' contains a NUL character"),
        ({"prompt": "\udcff"}, "argument 'prompt' is not valid Unicode text"),
    ],
)
def test_values_no_agent_could_receive_are_refused(
    arguments: dict[str, object], message: str
) -> None:
    args = {"specialist": "s", "prompt": "p", **arguments}
    assert message in refused(RUN_ARGS, args)


def test_prompts_keep_their_newlines_tabs_and_escapes() -> None:
    prompt = "line one\n\tline two \x1b[1mbold\x1b[0m"
    assert check_arguments("run", RUN_ARGS, {"specialist": "s", "prompt": prompt})["prompt"] == (
        prompt
    )


def test_unknown_argument_names_a_close_one_and_the_known_ones() -> None:
    line = refused(RUN_ARGS, {"specialist": "s", "prompt": "p", "modle": "m"})
    assert "unknown argument 'modle' (did you mean 'model'? expected: specialist, prompt" in line


def test_nested_paths_and_messages_keep_their_shape() -> None:
    assert refused(PARALLEL_ARGS, {"tasks": [{"specialist": "s"}]}, "run_parallel") == (
        "run_parallel: missing required argument 'tasks[0].prompt'"
    )
    assert refused(FEED_ARGS, {"job_id": "ab", "limit": 0}, "feed") == (
        "feed: argument 'limit' must be between 1 and 200, got 0"
    )
    assert refused(FEED_ARGS, {"job_id": "ab", "from_seq": -1}, "feed") == (
        "feed: argument 'from_seq' must be at least 0, got -1"
    )
    assert refused(FEED_ARGS, [], "feed") == "feed: the arguments must be an object, got a list"


def test_the_one_line_pattern_means_the_same_to_json_schema_and_to_python() -> None:
    """Clients validate with the schema (Ajv, jsonschema); we check with the reader."""
    schema = {"type": "string", "pattern": ONE_LINE_PATTERN}
    for text in ("ok", "é ✓", "a\nb", "a\x00b", "\x7f", "\x85", "\xa0", "tab\there"):
        try:
            jsonschema.validate(text, schema)
            client_ok = True
        except jsonschema.ValidationError:
            client_ok = False
        assert client_ok == bool(re.search(ONE_LINE_PATTERN, text)), repr(text)
    assert RUN_ARGS["properties"]["model"]["pattern"] == ONE_LINE_PATTERN
    assert "pattern" not in RUN_ARGS["properties"]["prompt"]
