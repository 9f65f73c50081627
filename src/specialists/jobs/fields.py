"""Records whose fields are declared once: the annotation is the type, the value the default.

    class JobStatus(Record):
        id: str                    # no value: required
        pid: int | None = None
        tokens: dict[str, int] = EMPTY   # a fresh empty dict per instance

That one declaration gives the type checker its attributes and gives this module the keyword
constructor, the dict round trip, equality and the field-by-field check of every record read
from disk. Records sit on the hot path of `status`, so this is a plain class, not a dataclass
(importing `dataclasses` costs more than reading a hundred status files): the annotations
are read as text (the modules use `from __future__ import annotations`) by a grammar that
covers the JSON shapes records hold: str, int, float, bool, Any, `X | None`, list[X] and
dict[str, X].

Numbers are bounded as well as typed: an int must fit 64 bits (a pid of 10**100 would
overflow os.kill) and a float must be finite (JSON's 1e999 parses as infinity).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self

from specialists.errors import Bug, StoreError

INT_LIMIT = 2**63
_FLOAT_LIMIT = 1e300

EMPTY: Any = type("Empty", (), {"__repr__": lambda self: "EMPTY"})()
"""Default of a list or dict field: a fresh empty one for each instance."""

_MISSING: Any = object()

Check = Callable[[Any], bool]


def is_int(value: Any) -> bool:
    return type(value) is int and -INT_LIMIT <= value < INT_LIMIT


def _is_float(value: Any) -> bool:
    if type(value) is float:
        return -_FLOAT_LIMIT < value < _FLOAT_LIMIT  # False for inf and nan
    return is_int(value)  # JSON writes 5.0 as 5 only if we did; accept whole numbers


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_any(value: Any) -> bool:
    return True


_SCALARS: dict[str, tuple[Check, str]] = {
    "str": (_is_str, "a string"),
    "int": (is_int, "an integer"),
    "float": (_is_float, "a finite number"),
    "bool": (_is_bool, "true or false"),
    "Any": (_is_any, "any value"),
}


def parse_type(text: str) -> tuple[Check, str]:
    """A check and its description ("an integer or null") for one annotation's text."""
    text = text.strip()
    if text.endswith("| None"):
        inner, expected = parse_type(text[: -len("| None")])
        return (lambda v: v is None or inner(v)), f"{expected} or null"
    if text in _SCALARS:
        return _SCALARS[text]
    if text.startswith("list[") and text.endswith("]"):
        item, expected = parse_type(text[5:-1])
        if item is _is_any:
            return (lambda v: type(v) is list), "a list"
        return (
            lambda v: type(v) is list and all(item(x) for x in v)
        ), f"a list (items: {expected})"
    if text.startswith("dict[str,") and text.endswith("]"):
        value, expected = parse_type(text[9:-1])
        if value is _is_any:
            return (lambda v: type(v) is dict), "an object"
        return (
            lambda v: type(v) is dict and all(type(k) is str and value(x) for k, x in v.items())
        ), f"an object (values: {expected})"
    raise Bug(f"record field type {text!r} is not one this module can check")


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
    __slots__ = ("check", "default", "expected", "fresh", "name")

    def __init__(self, name: str, annotation: str, default: Any) -> None:
        self.name = name
        self.default = default
        self.check, self.expected = parse_type(annotation)
        self.fresh: Callable[[], Any] | None = None
        if default is EMPTY:
            self.fresh = list if annotation.startswith("list[") else dict


class Record:
    """Keyword construction, dict round trip, equality and checked reading over the fields
    declared (once) in the subclass body. Unknown names are refused; so are missing required
    ones. `_choices` may restrict a str field to a set of values."""

    _fields: ClassVar[tuple[Field, ...]] = ()
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

    def __init__(self, **values: Any) -> None:
        for f in self._fields:
            if f.name in values:
                value = values.pop(f.name)
            elif f.default is _MISSING:
                raise TypeError(f"{type(self).__name__} needs {f.name!r}")
            else:
                value = _default_of(f)
            self.__dict__[f.name] = value
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: self.__dict__[f.name] for f in self._fields}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str | None = None) -> Self:
        """Check `data` field by field (as read from `source`); unknown keys are ignored
        (a newer writer's fields). Raises StoreError naming the file, the field and what was
        expected."""
        where = source or cls._what
        cls._before_read(data, where)
        record = object.__new__(cls)
        values = record.__dict__
        for f in cls._fields:
            value = data.get(f.name, _MISSING)
            if value is _MISSING:
                if f.default is _MISSING:
                    raise StoreError(f"{where}: field {f.name!r} is missing")
                value = _default_of(f)
            elif not f.check(value):
                raise StoreError(
                    f"{where}: field {f.name!r} should be {f.expected}, not {describe(value)}"
                )
            values[f.name] = value
        for name, allowed in cls._choices.items():
            if values[name] not in allowed:
                raise StoreError(
                    f"{where}: field {name!r} should be one of {', '.join(sorted(allowed))}, "
                    f"not {describe(values[name])}"
                )
        return record

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        """Whole-record checks a subclass adds (a schema version, say)."""

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Record)
            and type(other) is type(self)
            and self.to_dict() == other.to_dict()
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({shown})"


def _default_of(f: Field) -> Any:
    return f.fresh() if f.fresh is not None else f.default
