"""`NamedTuple` as `typing.NamedTuple` builds it, without checking each annotation.

Our values are NamedTuples and a foreground run builds about a hundred at import: typing's
checks every annotation (a compiled `ForwardRef` for each string), which is most of its
0.2 ms a class. Here the class is `collections.namedtuple` with the body's methods and
annotations laid on it, as typing does (tests/unit/test_tuples.py holds the two alike).
Type checkers see typing's own, so a field's type is checked where it matters: by mypy.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # What typing's NamedTupleMeta keeps of the body, and what a body may not define.
    _KEPT_BY_NAMEDTUPLE = frozenset({"__module__", "__name__", "__annotations__"})
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
        | {"_make", "_replace", "_asdict", "_source"}
    )

    class _Builder(type):
        def __new__(cls, name: str, bases: tuple[type, ...], body: dict[str, object]) -> type:
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from a NamedTuple type")
            fields: dict[str, object] = body.get("__annotations__", {})
            defaults: list[str] = []
            for field in fields:
                if field in body:
                    defaults.append(field)
                elif defaults:
                    raise TypeError(
                        f"Non-default namedtuple field {field} cannot follow default field"
                        f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}"
                    )
            made = collections.namedtuple(
                name, fields, defaults=[body[n] for n in defaults], module=str(body["__module__"])
            )
            made.__annotations__ = made.__new__.__annotations__ = fields
            for key, value in body.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _KEPT_BY_NAMEDTUPLE and key not in fields:
                    setattr(made, key, value)
            return made

    NamedTuple = type.__new__(_Builder, "NamedTuple", (), {"__module__": __name__})
