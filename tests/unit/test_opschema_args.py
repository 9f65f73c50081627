"""base/opschema.py reads an op's parameters from its code object and its docstring by hand,
so that no command imports `inspect`: both must say what `inspect` says."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest

from specialists.base import ops
from specialists.base.opschema import EMPTY, _args, docstring
from specialists.project import boot

boot()  # the features name their nouns


def _theirs(fn: Any) -> list[tuple[str, bool, Any, Any]]:
    empty = inspect.Parameter.empty
    return [
        (
            p.name,
            p.kind is p.POSITIONAL_ONLY,
            EMPTY if p.default is empty else p.default,
            EMPTY if p.annotation is empty else p.annotation,
        )
        for p in inspect.signature(fn).parameters.values()
    ]


def _ops() -> list[Any]:
    return [op.fn for noun in ops.nouns() for op in noun.ops]


def test_every_ops_parameters_are_what_inspect_reads() -> None:
    fns = _ops()
    assert len(fns) > 60
    for fn in fns:
        assert [tuple(a) for a in _args(fn)] == _theirs(fn), fn.__qualname__
        assert docstring(fn) == (inspect.getdoc(fn) or ""), fn.__qualname__


def _shapes(
    caller: Any, a: int, b: str = "x", /, c: float = 1.5, *, d: bool, e: Any = None
) -> None:
    """First line.

        Indented more.
    Args:
    \ta: tabbed
    """


@functools.wraps(_shapes)
def _wrapped(*args: Any, **kwargs: Any) -> None:
    return _shapes(*args, **kwargs)


@pytest.mark.parametrize("fn", [_shapes, _wrapped], ids=["plain", "wrapped"])
def test_every_kind_of_parameter_and_a_wrapper(fn: Any) -> None:
    assert [tuple(a) for a in _args(fn)] == _theirs(fn)
    assert [a.name for a in _args(fn)] == ["caller", "a", "b", "c", "d", "e"]
    assert docstring(fn) == inspect.getdoc(fn)


def test_a_variadic_op_is_refused() -> None:
    def loose(caller: Any, *rest: str) -> None: ...

    def looser(caller: Any, **rest: str) -> None: ...

    for fn in (loose, looser):
        with pytest.raises(TypeError, match="name every argument"):
            _args(fn)


@pytest.mark.parametrize("doc", [None, "", "one", "\n    two\n    lines\n", "a\n\n  b\n\tc\n   "])
def test_docstrings_are_cleaned_as_inspect_cleans_them(doc: str | None) -> None:
    class Holder:
        __doc__ = doc

    assert docstring(Holder) == (inspect.cleandoc(doc) if doc else "")
