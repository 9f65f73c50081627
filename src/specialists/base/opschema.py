"""An op's parameters and JSON Schema, read from its signature and docstring (its code object
and `typing.get_type_hints`, on demand: the fronts ask when they build a parser or list a tool).

The first parameter is the caller (never an argument). Positional-only parameters are a
command line's positionals, keyword-only ones its `--options`; every front checks the same
schema. The types a parameter may have:

    str, int, float, bool          string, integer, number, boolean
    Literal["a", "b"]              an enum of strings
    X | None  (default None)       optional
    list[X]                        an array of X
    Mapping[str, Any], dict        a JSON object, free-form (the op checks it whole)
    a TypedDict                    a closed JSON object with those keys
    Any                            any JSON value

`Annotated[T, ...]` adds bounds and forms: `Text(max, min, line=)` for strings (default: one
line of at most 4,096 characters), `Range(low, high)` for numbers, `Many(max)` for lists,
`Seconds()` for a duration in seconds (a command line takes "30s", "5m"), and `Cli(...)` for
how the parameter reads on a command line when the generated form is not the one people use.
The docstring's first paragraph is the description; its `Args:` section gives each
parameter's help (`name: text`, continued on deeper-indented lines). An op's module whose
import must stay light names its types' module in `__types__` (fronts/jobs.py).
"""

from __future__ import annotations

import importlib
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal

from specialists.base.reader.arguments import ONE_LINE_PATTERN
from specialists.base.tuples import NamedTuple

# No `dataclasses` here: with the `inspect` it imports, it cost every op command (`stop`,
# `timer list`) and every tool call about 12 ms, and each frozen dataclass about 1 ms more.

Schema = dict[str, Any]


class _Mark:
    """A mark of `Annotated`: equal to a mark of its class with the same values."""

    __slots__ = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def _names(self) -> tuple[str, ...]:
        return self.__slots__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Mark)
            and type(other) is type(self)
            and (other._values() == self._values())
        )

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        pairs = zip(self._names(), self._values(), strict=True)
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in pairs)})"


class Text(_Mark):
    """A string's bounds: at most `max` characters, at least `min`; one line unless
    `line=False` (prompts, messages, notes)."""

    __slots__ = ("line", "max", "min")

    def __init__(self, max: int = 4096, min: int = 0, line: bool = True) -> None:
        self.max, self.min, self.line = max, min, line


class Range(_Mark):
    __slots__ = ("high", "low")

    def __init__(self, low: float | None = None, high: float | None = None) -> None:
        self.low, self.high = low, high


class Many(_Mark):
    __slots__ = ("max", "min")

    def __init__(self, max: int, min: int = 0) -> None:
        self.max, self.min = max, min


class Seconds(_Mark):
    """A duration in seconds; on a command line a duration text ("30s", "5m", "1h"; a bare
    number is milliseconds, as `--timeout` has always read)."""

    __slots__ = ()


class Cli:
    """A parameter's command-line form where the generated one is not what people type:
    `flags` ("--prompt", "-p"), a `metavar`, `const` (the option stores it: `--global`),
    `words` (a positional of one or more words, joined by spaces: a shell command), `only`
    (a person's option: no tool offers it to a model), `person` (likewise, and an op's own
    tool's schema leaves it out too: `--no-wait`), `hidden` (a model's argument: not on
    the command line), `parse` (how a command line's text becomes the value, where people
    type more than the schema's form: "200k" tokens, "$2.50"), `group` (options of one group
    exclude each other: `--days` | `--all`)."""

    __slots__ = (
        "const", "flags", "group", "hidden", "metavar", "only", "parse", "person", "words",
    )  # fmt: skip

    def __init__(
        self,
        *flags: str,
        metavar: str | None = None,
        const: Any = None,
        words: bool = False,
        only: bool = False,
        hidden: bool = False,
        parse: Callable[[str], Any] | None = None,
        person: bool = False,
        group: str = "",
    ) -> None:
        self.flags, self.metavar, self.const, self.words, self.only = (
            flags, metavar, const, words, only,
        )  # fmt: skip
        self.hidden, self.parse, self.person, self.group = hidden, parse, person, group


NO_CLI = Cli()


class Param(NamedTuple):
    """One argument of an op, as every front needs it."""

    name: str
    schema: Schema  # its JSON Schema, description included
    positional: bool  # positional-only: a positional on the command line
    required: bool
    default: Any
    help: str
    kind: str  # "str", "int", "float", "bool", "choice", "list", "object", "any"
    choices: tuple[str, ...] = ()
    seconds: bool = False
    cli: Cli = NO_CLI  # never changed: one shared
    keys: tuple[Param, ...] = ()  # a TypedDict's keys: one option each on a command line


class Signature(NamedTuple):
    description: str
    params: tuple[Param, ...]
    returns: Any  # the return annotation (a TypedDict gives an output schema)

    def input_schema(self) -> Schema:
        ps = [p for p in self.params if not p.cli.person]
        return obj({p.name: p.schema for p in ps}, [p.name for p in ps if p.required])

    def output_schema(self) -> Schema:
        if _is_typeddict(self.returns):
            return {**_typeddict_schema(self.returns, output=True), "additionalProperties": False}
        return {"type": "object"}


def obj(
    properties: Schema, required: list[str] | tuple[str, ...] = (), *, closed: bool = True
) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


class _Arg(NamedTuple):
    """A parameter as its function's code object says it."""

    name: str
    positional: bool  # positional-only
    default: Any  # EMPTY: none (required)
    annotation: Any  # EMPTY: none


EMPTY = object()
_VARIADIC = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


def _args(fn: Callable[..., Any]) -> list[_Arg]:
    """Every parameter of a plain function, in order (what `inspect.signature` gives, read
    from the code object without importing `inspect`); a wrapper's are its function's."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    code = fn.__code__
    if code.co_flags & _VARIADIC:
        raise TypeError(f"bug: op {fn.__qualname__} takes *args or **kwargs: name every argument")
    count = code.co_argcount
    names = code.co_varnames[: count + code.co_kwonlyargcount]
    defaults = fn.__defaults__ or ()
    first_default = count - len(defaults)
    kw_defaults = fn.__kwdefaults__ or {}
    notes = fn.__annotations__
    return [
        _Arg(
            name,
            i < code.co_posonlyargcount,
            defaults[i - first_default] if first_default <= i < count
            else kw_defaults.get(name, EMPTY) if i >= count else EMPTY,
            notes.get(name, EMPTY),
        )
        for i, name in enumerate(names)
    ]  # fmt: skip


def docstring(item: Any) -> str:
    """An object's own docstring with its indentation taken off (as `inspect.cleandoc`)."""
    doc = getattr(item, "__doc__", None)
    if not isinstance(doc, str):
        return ""
    lines = doc.expandtabs().split("\n")
    margin = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
    lines = [lines[0].lstrip(), *(x[margin:] for x in lines[1:])]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


@cache
def signature(fn: Callable[..., Any]) -> Signature:
    """The op's description and parameters (cached: a signature never changes)."""
    description, helps = parse_docstring(docstring(fn))
    params = [
        _param(arg, _hint(fn, arg.annotation), helps.get(arg.name, ""))
        for arg in _args(fn)[1:]  # the first is the caller
    ]
    try:
        returns = _hint(fn, fn.__annotations__.get("return", Any))
    except NameError:  # a type only type checkers import: no declared output
        returns = Any
    return Signature(description, tuple(params), returns)


def _hint(fn: Callable[..., Any], annotation: Any) -> Any:
    """An annotation as a type (a string under `from __future__ import annotations` is read
    in the op's module: our own source, never outside input)."""
    if annotation is EMPTY:
        return Any
    if isinstance(annotation, str):
        names = fn.__globals__
        if "__types__" in names:  # the module of the types it names, kept off its import
            names = {**vars(importlib.import_module(names["__types__"])), **names}
        return eval(annotation, names)
    return annotation


def _param(arg: _Arg, hint: Any, help_: str) -> Param:
    required = arg.default is EMPTY
    base, marks = _unwrap(hint)
    cli = next((m for m in marks if isinstance(m, Cli)), NO_CLI)
    seconds = any(isinstance(m, Seconds) for m in marks)
    optional = False
    if _is_union(base):
        members = [a for a in typing.get_args(base) if a is not type(None)]
        optional = len(members) < len(typing.get_args(base))
        base, more = _unwrap(members[0] if len(members) == 1 else Any)
        marks = (*marks, *more)
    if optional and not required and arg.default is not None:
        raise TypeError(f"bug: optional argument {arg.name} must default to None")
    schema, kind, choices = _schema(base, marks)
    if kind in ("int", "float") and not required and arg.default is not None:
        schema = {**schema, "default": arg.default}
    if help_:
        schema = {**schema, "description": help_}
    keys = _keys(base) if _is_typeddict(base) else ()
    return Param(
        arg.name, schema, arg.positional, required,
        None if required else arg.default, help_, kind, choices, seconds, cli, keys,
    )  # fmt: skip


def _keys(hint: Any) -> tuple[Param, ...]:
    """A TypedDict's keys as optional keyword parameters (their help: its docstring's Args)."""
    _, helps = parse_docstring(docstring(hint))
    return tuple(
        _param(_Arg(name, False, None, EMPTY), each | None, helps.get(name, ""))
        for name, each in typing.get_type_hints(hint, include_extras=True).items()
    )  # fmt: skip


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(hint) in (typing.Required, typing.NotRequired):
        return _unwrap(typing.get_args(hint)[0])
    if typing.get_origin(hint) is typing.Annotated:
        base, *marks = typing.get_args(hint)
        inner, more = _unwrap(base)
        return inner, (*more, *marks)
    return hint, ()


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _schema(
    hint: Any, marks: tuple[Any, ...], output: bool = False
) -> tuple[Schema, str, tuple[str, ...]]:
    """(JSON Schema, kind, choices) of one type with its marks; an `output`'s strings and
    objects are as the op makes them (no input bounds, open objects)."""
    origin = typing.get_origin(hint)
    if hint is str and output:
        return {"type": "string"}, "str", ()
    if hint is str:
        text = next((m for m in marks if isinstance(m, Text)), Text())
        schema: Schema = {"type": "string", "maxLength": text.max}
        if text.min:
            schema["minLength"] = text.min
        if text.line:
            schema["pattern"] = ONE_LINE_PATTERN
        return schema, "str", ()
    if hint is bool:
        return {"type": "boolean"}, "bool", ()
    if hint in (int, float):
        schema = {"type": "integer" if hint is int else "number"}
        bounds = next((m for m in marks if isinstance(m, Range)), None)
        if bounds is not None and bounds.low is not None:
            schema["minimum"] = bounds.low
        if bounds is not None and bounds.high is not None:
            schema["maximum"] = bounds.high
        return schema, hint.__name__, ()
    if origin is Literal:
        choices = tuple(str(a) for a in typing.get_args(hint))
        return {"type": "string", "enum": list(choices)}, "choice", choices
    if origin is list:
        (item,) = typing.get_args(hint)
        inner, inner_marks = _unwrap(item)
        schema = {"type": "array", "items": _schema(inner, inner_marks, output)[0]}
        many = next((m for m in marks if isinstance(m, Many)), None)
        if many is not None:
            schema["maxItems"] = many.max
            if many.min:
                schema["minItems"] = many.min
        return schema, "list", ()
    if _is_typeddict(hint):
        return _typeddict_schema(hint, output=output), "object", ()
    if hint is dict or origin in (dict, Mapping) or hint is Mapping:
        rest = typing.get_args(hint)[1:]  # dict[str, int]: each value's schema
        each = (
            {"additionalProperties": _schema(rest[0], ())[0]} if rest and rest[0] is not Any else {}
        )
        return {"type": "object", **each}, "object", ()
    if hint is Any:
        return {}, "any", ()
    raise TypeError(f"bug: an op argument cannot be of type {hint!r}")


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def _typeddict_schema(hint: Any, *, output: bool = False) -> Schema:
    hints = typing.get_type_hints(hint, include_extras=True)
    props = {}
    for name, each in hints.items():
        base, marks = _unwrap(each)
        null = False
        if _is_union(base):
            members = [a for a in typing.get_args(base) if a is not type(None)]
            null = output and len(members) < len(typing.get_args(base))
            base, more = _unwrap(members[0] if len(members) == 1 else Any)
            marks = (*marks, *more)
        props[name] = _schema(base, marks, output)[0]
        if null and isinstance(props[name].get("type"), str):  # an answer's null is said
            props[name] = {**props[name], "type": [props[name]["type"], "null"]}
    required = [k for k in hints if k in hint.__required_keys__]
    return obj(props, required, closed=not output)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(the first paragraph as one line, {argument: its help}) of a Google-style docstring."""
    lines = doc.splitlines()
    first: list[str] = []
    for line in lines:
        if not line.strip():
            break
        first.append(line.strip())
    helps: dict[str, str] = {}
    if "Args:" in (line.strip() for line in lines):
        start = [line.strip() for line in lines].index("Args:") + 1
        indent, name = None, ""
        for line in lines[start:]:
            if not line.strip():
                continue
            depth = len(line) - len(line.lstrip())
            indent = depth if indent is None else indent
            if depth < indent:
                break
            if depth == indent and ":" in line:
                name, _, text = line.strip().partition(":")
                helps[name.strip()] = text.strip()
            elif name:
                helps[name] = f"{helps[name]} {line.strip()}".strip()
    return " ".join(first), helps
