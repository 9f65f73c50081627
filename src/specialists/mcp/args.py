"""Tool arguments checked against the tool's input schema, with one clear line per mistake.

Covers the JSON Schema subset our tools use: object (properties, required,
additionalProperties: false), string (minLength, maxLength, enum), integer and number
(minimum, maximum), boolean, array (items, minItems, maxItems). Defaults are filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specialists.errors import UserError

_TYPE_NAMES = {
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def check_arguments(
    tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The arguments with defaults filled in; UserError naming the first problem."""
    value = _check(schema, {} if arguments is None else arguments, "", tool)
    assert isinstance(value, dict)
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:40] + ("…" if len(value) > 40 else ""))
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return repr(value)[:40]


def _where(path: str) -> str:
    return f"argument '{path}'" if path else "the arguments"


def _fail(tool: str, message: str) -> UserError:
    return UserError(f"{tool}: {message}")


def _check(schema: Mapping[str, Any], value: Any, path: str, tool: str) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return _check_object(schema, value, path, tool)
    if kind == "array":
        return _check_array(schema, value, path, tool)
    if kind == "string":
        if not isinstance(value, str):
            raise _fail(tool, f"{_where(path)} must be text, got {_describe(value)}")
        if len(value) < schema.get("minLength", 0):
            raise _fail(tool, f"{_where(path)} must not be empty")
        limit = schema.get("maxLength")
        if limit is not None and len(value) > limit:
            raise _fail(tool, f"{_where(path)} is too long ({len(value)} > {limit} characters)")
        choices = schema.get("enum")
        if choices is not None and value not in choices:
            raise _fail(tool, f"{_where(path)} must be one of {', '.join(choices)}")
        return value
    if kind in ("integer", "number"):
        return _check_number(schema, value, path, tool, kind)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _fail(tool, f"{_where(path)} must be true or false, got {_describe(value)}")
        return value
    raise AssertionError(f"bug: schema type {kind!r} of {tool}.{path} is not supported")


def _check_number(
    schema: Mapping[str, Any], value: Any, path: str, tool: str, kind: str
) -> int | float:
    given = value
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and kind == "integer" and isinstance(value, float):
        ok = value.is_integer()
        value = int(value) if ok else value
    if not ok:
        raise _fail(tool, f"{_where(path)} must be {_TYPE_NAMES[kind]}, got {_describe(value)}")
    low, high = schema.get("minimum"), schema.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise _fail(tool, f"{_where(path)} must be {bounds}, got {_describe(given)}")
    return value


def _check_object(schema: Mapping[str, Any], value: Any, path: str, tool: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(tool, f"{_where(path)} must be an object, got {_describe(value)}")
    props: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        unknown = sorted(k for k in value if k not in props)
        if unknown:
            expected = ", ".join(props) or "none"
            raise _fail(
                tool,
                f"unknown argument '{_join(path, unknown[0])}' (expected: {expected})",
            )
    for name in schema.get("required", ()):
        if value.get(name) is None:
            raise _fail(tool, f"missing required argument '{_join(path, name)}'")
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if value.get(name) is None:
            if "default" in sub:
                out[name] = sub["default"]
            continue
        out[name] = _check(sub, value[name], _join(path, name), tool)
    return out


def _check_array(schema: Mapping[str, Any], value: Any, path: str, tool: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(tool, f"{_where(path)} must be a list, got {_describe(value)}")
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if len(value) < low:
        raise _fail(tool, f"{_where(path)} needs at least {low} item(s)")
    if high is not None and len(value) > high:
        raise _fail(tool, f"{_where(path)} takes at most {high} items, got {len(value)}")
    items = schema.get("items", {})
    return [_check(items, item, f"{path}[{i}]", tool) for i, item in enumerate(value)]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
