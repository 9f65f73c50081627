"""Records whose fields are declared once: the annotation is the type, the value the default.

    class JobStatus(Declared):
        id: str                    # no value: required
        pid: int | None = None
        tokens: dict[str, int] = EMPTY   # a fresh empty dict per instance

That one declaration gives the type checker its attributes and gives this module the keyword
constructor, the dict round trip, equality and the field-by-field check of every record read
from disk. Records sit on the hot path of `status`, so this is a plain class, not a dataclass
(importing `dataclasses` costs more than reading a hundred status files): the annotations
are read as text (the modules use `from __future__ import annotations`) by a grammar that
covers the JSON shapes records hold: str, int, float, bool, Any, `X | None`, list[X] and
dict[str, X]. A field may also hold records: `Child`, `Child | None` or `list[Child]`, where
`Child` is a Declared class of the same module, read (and written) as objects in place.

Numbers are bounded as well as typed: an int must fit 64 bits (a pid of 10**100 would
overflow os.kill) and a float must be finite (JSON's 1e999 parses as infinity).
"""

from __future__ import annotations

import functools
import sys

from specialists.base.errors import Bug, StoreError

TYPE_CHECKING = False  # no `typing` at run time: `status` reads records
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, Self

    Check = Callable[[Any], bool]

INT_LIMIT = 2**63
FLOAT_LIMIT = 1e300

EMPTY: Any = type("Empty", (), {"__repr__": lambda self: "EMPTY"})()
"""Default of a list or dict field: a fresh empty one for each instance."""

_MISSING: Any = object()


def is_int(value: Any) -> bool:
    return type(value) is int and -INT_LIMIT <= value < INT_LIMIT


def check_schema(data: dict[str, Any], schema: int | None, where: object) -> dict[str, Any]:
    """`data`, refused (StoreError) when its `schema` version is newer than `schema`: a
    newer record is refused rather than misread."""
    if schema is None:
        return data
    version = data.get("schema", 1)
    if type(version) is not int or version > schema:
        shown = version if type(version) is int else "of an unknown kind"
        raise StoreError(
            f"{where} has schema {shown}, newer than this specialists understands",
            hint="upgrade specialists",
        )
    return data


# Each type becomes a Python expression over a variable, compiled into a small function (as
# the standard library's dataclasses generate theirs) the first time a record of that type
# is read: a field is checked in one call, every row of the finished-jobs cache in one call.
_SCALARS: dict[str, tuple[str, str]] = {
    "str": ("type({v}) is str", "a string"),
    "int": ("(type({v}) is int and -L <= {v} < L)", "an integer"),
    # JSON's 1e999 is inf: the bounds refuse it (and nan); a whole number is a float too.
    "float": (
        "((type({v}) is float and -F < {v} < F) or (type({v}) is int and -L <= {v} < L))",
        "a finite number",
    ),
    "bool": ("type({v}) is bool", "true or false"),
    "Any": ("True", "any value"),
}


def type_expression(text: str, var: str, depth: int = 0) -> tuple[str, str]:
    """(a Python expression true when `var` holds a value of the annotation `text`, what the
    value should be in words: "an integer or null")."""
    text = text.strip()
    if text.endswith("| None"):
        inner, expected = type_expression(text[: -len("| None")], var, depth)
        return f"({var} is None or {inner})", f"{expected} or null"
    if text in _SCALARS:
        expr, expected = _SCALARS[text]
        return expr.format(v=var), expected
    item = f"_x{depth}"
    if text.startswith("list[") and text.endswith("]"):
        inner, expected = type_expression(text[5:-1], item, depth + 1)
        if inner == "True":
            return f"type({var}) is list", "a list"
        return (  # `not`: an empty list (the usual case) costs no generator
            f"(type({var}) is list and (not {var} or all({inner} for {item} in {var})))",
            f"a list (items: {expected})",
        )
    if text.startswith("dict[str,") and text.endswith("]"):
        inner, expected = type_expression(text[9:-1], item, depth + 1)
        if inner == "True":
            return f"type({var}) is dict", "an object"
        key = f"_k{depth}"
        return (
            f"(type({var}) is dict and (not {var} or all(type({key}) is str and {inner}"
            f" for {key}, {item} in {var}.items())))",
            f"an object (values: {expected})",
        )
    raise Bug(f"record field type {text!r} is not one this module can check")


def compile_function(source: str, name: str, **names: Any) -> Callable[..., Any]:
    """The function `name` defined by `source` (made here from annotations, never input),
    with `names` in its globals."""
    namespace: dict[str, Any] = {"L": INT_LIMIT, "F": FLOAT_LIMIT, "M": _MISSING, **names}
    exec(source, namespace)
    function: Callable[..., Any] = namespace[name]
    return function


@functools.cache  # a record has few distinct types: each is compiled once
def parse_type(text: str) -> tuple[Check, str]:
    """A check and its description ("an integer or null") for one annotation's text."""
    expression, expected = type_expression(text, "v")
    return compile_function(f"def check(v):\n    return {expression}\n", "check"), expected


def describe(value: Any) -> str:
    """A short, safe description of a bad value for an error line."""
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"an object with {len(value)} key(s)"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return "a number too large" if not is_int(value) else str(value)
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


class Field:
    __slots__ = ("annotation", "default", "fresh", "many", "name", "nested")

    def __init__(self, name: str, annotation: str, default: Any) -> None:
        self.name = name
        self.annotation = annotation
        self.default = default
        self.fresh: Callable[[], Any] | None = None
        if default is EMPTY:
            self.fresh = list if annotation.startswith("list[") else dict
        # `Child`, `Child | None` or `list[Child]`: a capitalised name, resolved on first use
        core = annotation.strip().removesuffix(" | None")
        self.many = core.startswith("list[") and core.endswith("]")
        name = core[5:-1] if self.many else core
        self.nested = name if name[:1].isupper() and name.isidentifier() and name != "Any" else ""


class Declared:
    """Keyword construction, dict round trip, equality and checked reading over the fields
    declared (once) in the subclass body, taken by keyword or in declared order. Unknown
    names are refused; so are missing required ones. `_choices` may restrict a str field to
    a set of values; `_after_read` adds a record's own checks."""

    _fields: ClassVar[tuple[Field, ...]] = ()
    _nested: ClassVar[dict[str, type[Declared]] | None] = None  # field -> its record class
    _what: ClassVar[str] = "record"
    _choices: ClassVar[dict[str, frozenset[str]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # This class's own annotations (not inherited ones); `inspect` is too heavy to import.
        own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
        fields = list(cls._fields)
        for name, annotation in own.items():
            if name.startswith("_") or str(annotation).startswith("ClassVar"):
                continue
            fields.append(Field(name, str(annotation), cls.__dict__.get(name, _MISSING)))
        cls._fields = tuple(fields)
        cls._nested = None

    @classmethod
    def _records(cls) -> dict[str, type[Declared]]:
        """The fields that hold records, with their classes (looked up once, by then the
        whole module is defined)."""
        if cls._nested is None:
            names = vars(sys.modules[cls.__module__])
            nested = {}
            for f in cls._fields:
                if f.nested:
                    child = names.get(f.nested)
                    if not (isinstance(child, type) and issubclass(child, Declared)):
                        raise Bug(f"{cls.__name__}.{f.name}: {f.nested} is not a Declared record")
                    nested[f.name] = child
            cls._nested = nested
        return cls._nested

    def __init__(self, *args: Any, **values: Any) -> None:
        if args:  # positional, in declared order (as a dataclass takes them)
            if len(args) > len(self._fields):
                raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
            for f, value in zip(self._fields, args, strict=False):
                if f.name in values:
                    raise TypeError(f"{type(self).__name__} got {f.name!r} twice")
                values[f.name] = value
        for f in self._fields:
            if f.name in values:
                value = values.pop(f.name)
                if type(value) is tuple:  # a list field given a tuple holds (and writes) a list
                    value = list(value)
            elif f.default is _MISSING:
                raise TypeError(f"{type(self).__name__} needs {f.name!r}")
            else:
                value = _default_of(f)
            self.__dict__[f.name] = value
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def to_dict(self) -> dict[str, Any]:
        values = self.__dict__
        out = {f.name: values[f.name] for f in self._fields}
        for name in self._records():
            value = out[name]
            if type(value) is list:
                out[name] = [item.to_dict() for item in value]
            elif value is not None:
                out[name] = value.to_dict()
        return out

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (records are not changed in place where they are shared)."""
        record = object.__new__(type(self))
        record.__dict__.update(self.__dict__)
        for name, value in changes.items():
            if not any(f.name == name for f in self._fields):
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            record.__dict__[name] = list(value) if type(value) is tuple else value
        return record

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str | None = None) -> Self:
        """Check `data` field by field (as read from `source`); unknown keys are ignored
        (a newer writer's fields). Raises StoreError naming the file, the field and what was
        expected."""
        where = source or cls._what
        cls._before_read(data, where)
        record = object.__new__(cls)
        values = record.__dict__
        nested = cls._records()
        for f in cls._fields:
            value = data.get(f.name, _MISSING)
            if value is _MISSING:
                if f.default is _MISSING:
                    raise StoreError(f"{where}: field {f.name!r} is missing")
                value = _default_of(f)
            elif f.name in nested:
                value = _read_records(f, nested[f.name], value, where)
            else:
                check, expected = parse_type(f.annotation)
                if not check(value):
                    raise StoreError(
                        f"{where}: field {f.name!r} should be {expected}, not {describe(value)}"
                    )
            values[f.name] = value
        for name, allowed in cls._choices.items():
            if values[name] not in allowed:
                raise StoreError(
                    f"{where}: field {name!r} should be one of {', '.join(sorted(allowed))}, "
                    f"not {describe(values[name])}"
                )
        cls._after_read(record, where)
        return record

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        """Whole-record checks a subclass adds (a schema version, say)."""

    @classmethod
    def _after_read(cls, record: Self, where: str) -> None:
        """Checks of the typed fields that are the record's own (an id that matches its file,
        say): raise StoreError(f"{where}: ...")."""

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Declared)
            and type(other) is type(self)
            and self.to_dict() == other.to_dict()
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({shown})"


def _read_records(f: Field, child: type[Declared], value: Any, where: str) -> Any:
    if value is None and f.annotation.endswith("| None"):
        return None
    if f.many:
        if type(value) is not list:
            raise StoreError(f"{where}: field {f.name!r} should be a list, not {describe(value)}")
        return [
            _read_record(child, item, f"{where}: {f.name}[{i}]") for i, item in enumerate(value)
        ]
    return _read_record(child, value, f"{where}: {f.name}")


def _read_record(child: type[Declared], value: Any, where: str) -> Declared:
    if type(value) is not dict:
        raise StoreError(f"{where} should be an object, not {describe(value)}")
    return child.from_dict(value, source=where)


def _default_of(f: Field) -> Any:
    return f.fresh() if f.fresh is not None else f.default
