"""base/tuples.py's NamedTuple builds what typing.NamedTuple builds, minus the checks of each
annotation (mypy makes those) and a `__new__` compiled for each class."""

from __future__ import annotations

import copy
import inspect
import pickle
import typing

import pytest

from specialists.base import tuples


def _point(base: typing.Any) -> typing.Any:
    class Point(base):
        """A point."""

        x: int
        y: str | None
        tags: list[str] = []
        z: int = 0

        def total(self) -> int:
            return self.x + self.z

        @property
        def twice(self) -> int:
            return self.x * 2

        @classmethod
        def origin(cls) -> typing.Any:
            return cls(0, None)

        LIMIT = 3

    return Point


OURS, THEIRS = _point(tuples.NamedTuple), _point(typing.NamedTuple)


def test_the_same_class_as_typing_builds() -> None:
    for attr in ("_fields", "_field_defaults", "__doc__", "__name__", "__module__", "LIMIT"):
        assert getattr(OURS, attr) == getattr(THEIRS, attr), attr
    assert OURS.__qualname__.endswith("_point.<locals>.Point")
    assert OURS.__qualname__ == THEIRS.__qualname__
    assert OURS.__mro__[1:] == THEIRS.__mro__[1:] == (tuple, object)
    assert list(OURS.__annotations__) == list(THEIRS.__annotations__)
    assert OURS.__annotations__["y"] == "str | None"  # kept as written, never evaluated
    assert OURS.__slots__ == THEIRS.__slots__ == ()


def test_signatures_and_defaults_are_alike() -> None:
    def shape(cls: typing.Any) -> list[tuple[str, object, object]]:  # annotations apart
        params = inspect.signature(cls).parameters.values()
        return [(p.name, p.kind, p.default) for p in params]

    assert shape(OURS) == shape(THEIRS)
    assert OURS.__new__.__doc__ == THEIRS.__new__.__doc__
    assert OURS.__match_args__ == THEIRS.__match_args__ == ("x", "y", "tags", "z")
    assert OURS.x.__doc__ == THEIRS.x.__doc__ == "Alias for field number 0"

    def bare(base: typing.Any) -> typing.Any:
        class Empty(base):
            pass

        class One(base):
            only: int

        return Empty, One

    for ours, theirs in zip(bare(tuples.NamedTuple), bare(typing.NamedTuple), strict=True):
        assert ours.__doc__ == theirs.__doc__  # the default doc: "One(only)"
        assert shape(ours) == shape(theirs)
    ours_one, theirs_one = bare(tuples.NamedTuple)[1], bare(typing.NamedTuple)[1]
    assert ours_one(1) == theirs_one(1) == (1,) and repr(ours_one(only=2)) == "One(only=2)"


def test_errors_say_the_same() -> None:
    said = []
    for cls in (OURS, THEIRS):
        calls = [(cls, (), {}), (cls, (1, 2, 3, 4, 5), {}), (cls, (1,), {"y": 2, "nope": 3})]
        calls += [(cls._make, ([1],), {}), (cls(1, "a")._replace, (), {"nope": 1})]
        for call, args, kwargs in calls:
            with pytest.raises((TypeError, ValueError)) as caught:
                call(*args, **kwargs)
            said.append((type(caught.value), str(caught.value).replace("Point.", "")))
    assert said[:5] == said[5:]


def test_instances_behave_alike() -> None:
    for cls in (OURS, THEIRS):
        p = cls(1, "a", z=2)
        assert p == (1, "a", [], 2)
        assert repr(p) == "Point(x=1, y='a', tags=[], z=2)"
        assert p.total() == 3 and p.twice == 2 and cls.origin() == (0, None, [], 0)
        assert p._replace(x=5).x == 5 and p._asdict()["z"] == 2
        assert cls._make([1, 2, 3, 4]) == (1, 2, 3, 4)
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls(1, 2, nope=3)
        with pytest.raises(AttributeError):
            p.x = 3  # type: ignore[misc]
        assert copy.copy(p) == p and copy.deepcopy(p) == p and hash(p._replace(tags=())) != 0
        assert not hasattr(p, "__dict__")
        match p:
            case cls(x, y):
                assert (x, y) == (1, "a")
            case _:
                raise AssertionError("no match")


def test_a_default_before_a_field_without_one_is_refused_alike() -> None:
    messages = []
    for base in (tuples.NamedTuple, typing.NamedTuple):
        with pytest.raises(TypeError) as caught:

            class Bad(base):  # type: ignore[valid-type,misc]
                a: int = 0
                b: int

        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_what_a_body_may_not_define_is_refused_alike() -> None:
    for base in (tuples.NamedTuple, typing.NamedTuple):
        with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):

            class Bad(base):  # type: ignore[valid-type,misc]
                a: int

                def _replace(self) -> None: ...


def test_a_field_may_not_start_with_an_underscore() -> None:
    for base in (tuples.NamedTuple, typing.NamedTuple):
        with pytest.raises(ValueError, match="cannot start with an underscore: '_a'"):

            class Bad(base):  # type: ignore[valid-type,misc]
                _a: int


def test_only_namedtuple_may_be_a_base() -> None:
    with pytest.raises(TypeError):

        class Mixed(tuples.NamedTuple, int):  # type: ignore[misc]
            a: int


def test_a_module_level_tuple_pickles() -> None:
    from specialists.process.node import NodePackage

    value = NodePackage("pi", "1.6.0", (22, 19, 0))
    assert pickle.loads(pickle.dumps(value)) == value
    assert type(value).__module__ == "specialists.process.node"
