"""store/fields.py: records that hold records (`Child`, `Child | None`, `list[Child]`),
`replace`, and the `_after_read` hook a record's own checks use."""

from __future__ import annotations

import json

import pytest

from specialists.base.errors import Bug, StoreError
from specialists.store.fields import EMPTY, Declared


class Marker(Declared):
    _what = "marker"
    tip: str
    at_ms: int = 0


class Box(Declared):
    _what = "box.json"
    id: str
    first: Marker
    pending: Marker | None = None
    markers: list[Marker] = EMPTY
    note: str = ""

    @classmethod
    def _after_read(cls, record: Box, where: str) -> None:
        if record.id != "box":
            raise StoreError(f"{where}: id does not match the file name")


class Broken(Declared):
    child: Missing  # type: ignore[name-defined]  # noqa: F821


def _box() -> Box:
    return Box(id="box", first=Marker(tip="a"), markers=[Marker(tip="b", at_ms=2)])


def test_records_in_records_round_trip_as_plain_objects():
    box = _box()
    data = box.to_dict()
    assert data == {
        "id": "box",
        "first": {"tip": "a", "at_ms": 0},
        "pending": None,
        "markers": [{"tip": "b", "at_ms": 2}],
        "note": "",
    }
    assert json.loads(json.dumps(data)) == data  # plain JSON: no objects left inside
    back = Box.from_dict(data)
    assert back == box
    assert isinstance(back.first, Marker) and isinstance(back.markers[0], Marker)
    assert back.pending is None
    assert Box.from_dict({**data, "pending": {"tip": "p"}}).pending == Marker(tip="p")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"first": "a"}, "box.json: first should be an object, not 'a'"),
        ({"first": None}, "box.json: first should be an object, not None"),
        ({"markers": {"tip": "b"}}, "field 'markers' should be a list"),
        ({"markers": [{"tip": "b"}, 3]}, r"box.json: markers\[1\] should be an object, not 3"),
        ({"markers": [{"at_ms": 1}]}, r"box.json: markers\[0\]: field 'tip' is missing"),
        ({"first": {"tip": "a", "at_ms": 2**70}}, "box.json: first: field 'at_ms' should be"),
        ({"pending": {"tip": 1}}, "box.json: pending: field 'tip' should be a string"),
        ({"id": "other"}, "box.json: id does not match the file name"),
    ],
)
def test_a_bad_record_inside_is_one_clear_line_naming_where(change, message):
    data = {**_box().to_dict(), **change}
    with pytest.raises(StoreError, match=message):
        Box.from_dict(data)


def test_a_record_class_that_is_not_there_is_a_bug_not_a_damaged_file():
    with pytest.raises(Bug, match="Missing is not a Declared record"):
        Broken.from_dict({"child": {}})


def test_replace_copies_and_refuses_unknown_fields():
    box = _box()
    other = box.replace(note="n")
    assert other.note == "n" and box.note == ""
    assert other.first is box.first
    with pytest.raises(TypeError, match="no field 'colour'"):
        box.replace(colour="red")


def test_fields_are_taken_in_declared_order_too_and_a_tuple_is_held_as_a_list():
    assert Marker("t", 3) == Marker(tip="t", at_ms=3)
    box = Box("box", Marker("a"), None, (Marker("b", 2),))
    assert box == _box() and type(box.markers) is list
    with pytest.raises(TypeError, match="takes 2 fields"):
        Marker("t", 3, 4)
    with pytest.raises(TypeError, match="got 'tip' twice"):
        Marker("t", tip="u")
    with pytest.raises(TypeError, match="needs 'tip'"):
        Marker(at_ms=1)
