"""Tool arguments checked against the tool's input schema, with one clear line per mistake.

Covers the JSON Schema subset our tools use: object (properties, required,
additionalProperties: false), string (minLength, maxLength, enum, pattern), integer and
number (minimum, maximum), boolean, array (items, minItems, maxItems). Defaults are filled
in. The checks themselves are the typed reader's (`specialists.base.reader`), so an argument is
refused for what a definition file would be: no string may hold a NUL character or a lone
surrogate (the agent's spawn or the job files would fail on it later), and a string whose
schema has `pattern: ONE_LINE_PATTERN` (names, models, paths, ids) holds no control
characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from specialists.base.errors import UserError
from specialists.base.reader import (
    Fields,
    Invalid,
    TextForm,
    check_tree,
    choice_value,
    clip,
    describe_json,
    integer_value,
    join,
    number_value,
    suggest,
    text_value,
)

# JSON Schema `pattern` (ECMA-262 and Python `re` agree on it): no control character.
ONE_LINE_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"

_TYPE_NAMES = {"integer": "an integer", "number": "a number"}


def check_arguments(
    tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The arguments with defaults filled in; UserError naming the first problem."""
    try:
        value = _check(schema, {} if arguments is None else arguments, "")
    except Invalid as exc:
        raise UserError(f"{tool}: {render(exc)}" if tool else render(exc)) from None
    assert isinstance(value, dict), "bug: an object schema gave something else"
    return value


def render(exc: Invalid) -> str:
    """An `Invalid` in the words of a tool call ("argument 'x' must be ...")."""
    if exc.kind == "missing":
        return f"missing required argument '{exc.field}'"
    if exc.kind == "unknown":
        return f"unknown argument '{exc.field}' ({exc.problem})"
    where = f"argument '{exc.field}'" if exc.field else "the arguments"
    if exc.expected is not None:
        return f"{where} must be {exc.expected}, got {exc.found}"
    return f"{where} {exc.problem}"


def _check(schema: Mapping[str, Any], value: Any, path: str) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return _check_object(schema, value, path)
    if kind == "array":
        return _check_array(schema, value, path)
    if kind == "string":
        return _check_string(schema, value, path)
    if kind in ("integer", "number"):
        what = _TYPE_NAMES[kind]
        low, high = schema.get("minimum"), schema.get("maximum")
        if kind == "integer":
            return integer_value(value, path, low=low, high=high, what=what, describe=describe_json)
        return number_value(value, path, low=low, high=high, what=what, describe=describe_json)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise Invalid.wrong(path, "true or false", describe_json(value))
        return value
    if kind is None:  # any JSON value (a mission's state): bounded; its owner checks the rest
        check_tree(value, f"argument '{path}'" if path else "the value")
        return value
    raise AssertionError(f"bug: schema type {kind!r} of argument {path!r} is not supported")


def _check_string(schema: Mapping[str, Any], value: Any, path: str) -> str:
    pattern = schema.get("pattern")
    one_line = pattern == ONE_LINE_PATTERN
    form: TextForm = "line" if one_line else "prose"
    limit = schema.get("maxLength")
    text = text_value(value, path, form=form, max_chars=limit, describe=describe_json)
    shortest = schema.get("minLength", 0)
    if len(text) < shortest:  # "   " passes: the handler says what is wrong with blank text
        raise Invalid(
            path, "must not be empty" if shortest == 1 else f"needs {shortest} characters"
        )
    choices = schema.get("enum")
    if choices is not None:
        return choice_value(text, path, tuple(choices), describe=describe_json)
    if pattern is not None and not one_line and not _compiled(pattern).search(text):
        raise Invalid(path, f"does not match the pattern {pattern}, got {clip(text)!r}")
    return text


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _check_object(schema: Mapping[str, Any], value: Any, path: str) -> dict[str, Any]:
    fields = Fields(value, path, describe=describe_json, what="an object")
    if "properties" not in schema:  # a free-form object (a workflow document): its own
        return dict(fields.data)  # handler checks it whole
    props: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        unknown = [k for k in fields.data if k not in props]
        if unknown:
            close = suggest(unknown[0], props)
            hint = f"did you mean '{close}'? " if close else ""
            expected = ", ".join(props) or "none"
            raise Invalid(join(path, unknown[0]), f"{hint}expected: {expected}", kind="unknown")
    for name in schema.get("required", ()):
        fields.require(name)
    out: dict[str, Any] = {}
    for name, sub in props.items():
        item = fields.raw(name)
        if item is None:
            if "default" in sub:
                out[name] = sub["default"]
            continue
        out[name] = _check(sub, item, fields.field(name))
    return out


def _check_array(schema: Mapping[str, Any], value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise Invalid.wrong(path, "a list", describe_json(value))
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if len(value) < low:
        raise Invalid(path, f"needs at least {low} item(s)")
    if high is not None and len(value) > high:
        raise Invalid(path, f"takes at most {high} items, got {len(value)}")
    items = schema.get("items", {})
    return [_check(items, item, f"{path}[{i}]") for i, item in enumerate(value)]
