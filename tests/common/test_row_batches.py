"""Rows of one class pickled as their names once and plain tuples (``common.row_batches``)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from undertow.common import Row, RowKind
from undertow.common import row as row_module
from undertow.common.row_batches import RowMapping, RowsOfOneClass, pack_rows, pack_values
from undertow.core.pickling import dumps_records


def _roundtrip(values: list[Any]) -> list[Any]:
    restored: list[Any] = pickle.loads(dumps_records(pack_rows(values), len(values)))
    return restored


def test_named_rows_of_one_class_travel_as_names_and_tuples() -> None:
    rows = [Row(user=i % 7, amount=i, nested=Row(a=i)) for i in range(100)]
    packed = pack_rows(rows)
    assert isinstance(packed, RowsOfOneClass) and packed.names == ("user", "amount", "nested")
    assert all(type(t) is tuple for t in packed.tuples)
    back = _roundtrip(rows)
    assert back == rows and all(type(a) is type(b) for a, b in zip(back, rows, strict=True))
    assert back[3].user == 3 and back[3].nested.a == 3 and back[3]._fields == rows[3]._fields
    many = [Row(user=i, amount=i) for i in range(4096)]
    assert len(dumps_records(pack_rows(many), 4096)) < 12 * 4096, "names once, not per row"


def test_unnamed_rows_travel_as_tuples() -> None:
    rows = [Row(i, "x") for i in range(50)]
    assert isinstance(pack_rows(rows), RowsOfOneClass)
    back = _roundtrip(rows)
    assert back == rows and all(type(r) is Row and r._fields is None for r in back)


@pytest.mark.parametrize(
    "values",
    [
        [Row(a=1), Row(b=2)],  # two classes
        [Row(a=1), (1,)],  # a row and a tuple
        [Row(1), Row(a=1)],  # unnamed and named
        [(1, 2), (3, 4)],  # no rows
        [],
    ],
    ids=["two-classes", "row-and-tuple", "unnamed-and-named", "tuples", "empty"],
)
def test_other_lists_are_pickled_as_they_are(values: list[Any]) -> None:
    assert pack_rows(values) is values
    assert _roundtrip(values) == values


def test_rows_with_a_kind_or_names_of_their_own_are_not_packed() -> None:
    deleted = Row(a=1)
    deleted.set_row_kind(RowKind.DELETE)
    values = [Row(a=0), deleted]
    assert pack_rows(values) is values
    back = _roundtrip(values)
    assert back[1].get_row_kind() is RowKind.DELETE
    renamed = Row(1)
    renamed.__dict__["_fields"] = ["only_this_row"]  # as a row past the classes' limit
    values = [Row(0), renamed]
    assert pack_rows(values) is values
    assert _roundtrip(values)[1]._fields == ["only_this_row"]


def test_a_users_subclass_of_row_is_not_packed() -> None:
    class Point(Row):
        pass

    values = [Point(1, 2), Point(3, 4)]
    assert pack_rows(values) is values


def test_rows_unpacked_past_the_class_limit_keep_their_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = [Row(limit_a=i, limit_b=i) for i in range(20)]
    data = dumps_records(pack_rows(rows), 20)
    monkeypatch.setattr(row_module, "_named_classes", {})
    monkeypatch.setattr(row_module, "NAMED_CLASS_LIMIT", 0)
    back = pickle.loads(data)
    assert back == rows and back[4].limit_b == 4 and back[4]._fields == ["limit_a", "limit_b"]


def test_a_states_rows_and_lists_of_rows_pickle_with_their_names_once() -> None:
    values = {i: Row(user=i, amount=2 * i) for i in range(200)}
    packed = pack_values(values)
    assert isinstance(packed, RowMapping)
    assert pickle.loads(pickle.dumps(packed)) == values
    assert len(pickle.dumps(packed)) < len(pickle.dumps(values)) * 0.6
    lists = {("w", i): [Row(user=i, amount=j) for j in range(20)] for i in range(10)}
    lists[("w", 99)] = []
    back = pickle.loads(pickle.dumps(pack_values(lists)))
    assert back == lists and type(back[("w", 3)][0]) is type(lists[("w", 3)][0])
    assert back[("w", 3)][5].amount == 5


@pytest.mark.parametrize(
    "entries",
    [{}, {1: (1, 2)}, {1: [1, 2]}, {1: Row(a=1), 2: Row(b=2)}, {1: Row(a=1), 2: 3}],
    ids=["empty", "tuples", "lists-of-ints", "two-classes", "row-and-int"],
)
def test_other_entries_are_left_as_they_are(entries: dict[Any, Any]) -> None:
    assert pack_values(entries) is entries
