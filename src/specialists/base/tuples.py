"""`NamedTuple` as `typing.NamedTuple` builds it, at a fifth of its cost.

Our values are NamedTuples and a foreground run builds about a hundred at import: typing's
checks every annotation (a compiled `ForwardRef` each) and `collections.namedtuple` compiles
a `__new__` for each class, about 0.2 ms a class in all. Here a class gets the same methods,
shared, and a `__new__` whose code is made once per number of fields and renamed for each
(tests/unit/test_tuples.py holds the classes alike). Type checkers see typing's own, so
the fields' types are checked where it matters: by mypy.
"""

from __future__ import annotations

from collections import _tuplegetter  # type: ignore[attr-defined]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    _tuple_new = tuple.__new__
    _CODE_BY_ARITY: dict[int, object] = {}
    # What typing keeps of a class body, and what a body may not define.
    _KEPT = frozenset({"__module__", "__name__", "__annotations__"})
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
        | {"_make", "_replace", "_asdict", "_source"}
    )

    def _make(cls, iterable):
        result = _tuple_new(cls, iterable)
        if len(result) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
        return result

    def _replace(self, /, **kwds):
        result = self._make(map(kwds.pop, self._fields, self))
        if kwds:
            raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
        return result

    def _repr(self):
        fields = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self, strict=False)
        )
        return f"{self.__class__.__name__}({fields})"

    def _asdict(self):
        return dict(zip(self._fields, self, strict=False))

    def _getnewargs(self):
        return tuple(self)

    def _listed(fields):
        return repr(fields).replace("'", "")[1:-1]  # as namedtuple says them: `(a,)`, `(a, b)`

    def _new(name, fields, defaults):
        """`__new__(_cls, <fields>)`: the code for this many fields, with their names."""
        code = _CODE_BY_ARITY.get(len(fields))
        if code is None:
            args = "".join(f"_{i}, " for i in range(len(fields)))
            body = {}
            exec(f"def __new__(_cls, {args}): return _tuple_new(_cls, ({args}))", body)
            code = _CODE_BY_ARITY[len(fields)] = body["__new__"].__code__
        globals_ = {"_tuple_new": _tuple_new, "__builtins__": {}}
        made = type(_make)(code.replace(co_varnames=("_cls", *fields)), globals_, "__new__")
        made.__defaults__ = tuple(defaults) or None
        made.__qualname__ = f"{name}.__new__"
        made.__doc__ = f"Create new instance of {name}({_listed(fields)})"
        return made

    class _Builder(type):
        def __new__(cls, name, bases, body):
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from a NamedTuple type")
            annotations = body.get("__annotations__", {})
            fields = tuple(annotations)
            defaults = []
            for field in fields:
                if field.startswith("_"):
                    raise ValueError(f"Field names cannot start with an underscore: {field!r}")
                if field in body:
                    defaults.append(field)
                elif defaults:
                    raise TypeError(
                        f"Non-default namedtuple field {field} cannot follow default field"
                        f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}"
                    )
            values = [body[field] for field in defaults]
            new = _new(name, fields, values)
            new.__annotations__ = annotations
            made = type.__new__(
                cls.__base__,
                name,
                (tuple,),
                {
                    "__doc__": f"{name}({_listed(fields)})",
                    "__slots__": (),
                    "_fields": fields,
                    "_field_defaults": dict(zip(defaults, values, strict=True)),
                    "__new__": new,
                    "_make": classmethod(_make),
                    "_replace": _replace,
                    "__repr__": _repr,
                    "_asdict": _asdict,
                    "__getnewargs__": _getnewargs,
                    "__match_args__": fields,
                    "__module__": body["__module__"],
                    "__annotations__": annotations,
                    **{
                        f: _tuplegetter(i, f"Alias for field number {i}")
                        for i, f in enumerate(fields)
                    },
                },
            )
            for key, value in body.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _KEPT and key not in fields:
                    setattr(made, key, value)
            return made

    NamedTuple = type.__new__(_Builder, "NamedTuple", (), {"__module__": __name__})
