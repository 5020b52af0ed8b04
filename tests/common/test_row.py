"""Row and RowKind (``undertow.common.row``, also at PyFlink's ``undertow.common.types``)."""

from __future__ import annotations

import copy
import pickle

import cloudpickle
import pytest

from undertow.common import Row, RowKind, types
from undertow.common import row as row_module


def test_pyflinks_types_module_holds_the_same_classes() -> None:
    assert types.Row is Row and types.RowKind is RowKind


def test_positional_row() -> None:
    row = Row(1, "a")
    assert isinstance(row, tuple)
    assert row[0] == 1 and row[1] == "a" and row[-1] == "a"
    assert len(row) == 2 and list(row) == [1, "a"]
    assert "a" in row
    assert row._fields is None
    assert repr(row) == "<Row(1, 'a')>"
    assert row[0:1] == [1]


def test_a_slice_of_a_row_is_a_list_of_its_values_like_pyflink() -> None:
    # PyFlink 2.3 printed ['book', 1] for row[1:] (corpus: row_kinds_and_access)
    named = Row(user="alice", item="book", qty=1)
    assert named[1:] == ["book", 1] and type(named[1:]) is list
    assert Row(1, 2, 3)[::2] == [1, 3] and Row()[:] == []
    assert named[True] == "book" and named[-1] == 1 and named["qty"] == 1


def test_named_row_keeps_names_in_the_order_given_like_pyflink_2() -> None:
    row = Row(x=1, name="a")
    assert row._fields == ["x", "name"]
    assert tuple(row) == (1, "a")
    assert row.name == "a" and row.x == 1
    assert row["x"] == 1 and row[0] == 1
    assert repr(row) == "Row(x=1, name='a')"
    assert str(row) == "Row(x=1, name='a')"
    assert list(row.as_dict()) == ["x", "name"]


def test_named_rows_of_the_same_names_in_another_order_differ() -> None:
    # A row is a tuple: equal rows hash alike, so equality is positional (PyFlink compares
    # named rows by name, but hashes them by position; see docs/migrating-from-pyflink.md).
    assert Row(id="s1", vc=1) != Row(vc=1, id="s1")
    assert Row(id="s1", vc=1) == Row(id="s1", vc=1)


def test_row_class_factory() -> None:
    person = Row("name", "age")
    alice = person("Alice", 11)
    assert alice == ("Alice", 11)
    assert alice == Row(name="Alice", age=11)  # keyword names keep their order
    assert alice._fields == ["name", "age"]
    assert alice.as_dict() == {"name": "Alice", "age": 11}
    assert repr(alice) == "Row(name='Alice', age=11)"
    with pytest.raises(ValueError, match="expects 2 values"):
        person("Bob")
    with pytest.raises(TypeError, match="not a row class"):
        Row(1, 2)(3, 4)


def test_mixed_arguments_rejected() -> None:
    with pytest.raises(ValueError, match="both"):
        Row(1, x=2)


def test_missing_fields_raise() -> None:
    row = Row(a=1)
    with pytest.raises(KeyError, match="'b' is not a field"):
        row["b"]
    with pytest.raises(AttributeError, match="'b' is not a field"):
        _ = row.b
    with pytest.raises(KeyError):
        Row(1)["a"]
    with pytest.raises(AttributeError):
        _ = row._private


def test_rows_are_read_only() -> None:
    row = Row(a=1)
    with pytest.raises(TypeError, match="read-only"):
        row[0] = 2
    with pytest.raises(AttributeError, match="read-only"):
        row.a = 2


def test_fields_named_as_tuple_methods_are_read_as_attributes_as_on_pyflink() -> None:
    """PyFlink's Row is no tuple: ``row.count`` of a row with a ``count`` field is the field
    (PyFlink 2.3, run 2026-12-03). Rows without such a field keep the tuple's methods, also
    rows that hold their names themselves (no class of their names)."""
    row = Row(item=7, count=3, index=9)
    assert (row.count, row.index, row["count"]) == (3, 9, 3)
    assert "count" in vars(type(row)), "read in C by the class of its names, as other fields"
    assert sorted([Row(item=1, count=2), row], key=lambda r: -r.count)[0] is row
    own = Row(1, 5)
    own.__dict__["_fields"] = ["item", "count"]  # as a row past NAMED_CLASS_LIMIT
    assert own.count == 5 and own.item == 1
    assert Row(1, 2, 2).count(2) == 2 and Row(1, 2).index(2) == 1
    assert Row(item=1, n=2).count(2) == 1


def test_get_fields_by_names() -> None:
    row = Row(item=7, count=3)
    assert row.get_fields_by_names(["count", "item"]) == [3, 7]
    assert row.get_fields_by_names(["item", "count"]) == [7, 3]
    assert Row(1, 2).get_fields_by_names(["a"]) == [1, 2]  # no names: all values, as PyFlink
    with pytest.raises(KeyError, match=r"\['price'\] are not fields"):
        row.get_fields_by_names(["item", "price"])


def test_equality_and_hash() -> None:
    assert Row(1, "a") == (1, "a")
    assert (1, "a") == Row(1, "a")  # noqa: SIM300 - the reflected comparison
    assert Row(1, "a") != (1, "b")
    assert hash(Row(1, "a")) == hash((1, "a"))
    by_key: dict[tuple[object, ...], str] = {Row(1, "a"): "x"}
    assert by_key[(1, "a")] == "x"
    assert Row(a=1) == Row(a=1)
    assert Row(a=1) != Row(b=1)  # different names
    assert Row(1) == Row(a=1)  # an unnamed row matches by values
    assert Row(1) != [1]
    deleted = Row(1)
    deleted.set_row_kind(RowKind.DELETE)
    assert deleted != Row(1)  # kinds differ
    assert deleted == (1,)  # a plain tuple has no kind


def test_as_dict() -> None:
    row = Row(key=1, value=Row(name="a", age=2), items=[Row(x=1)])
    assert row.as_dict() == {"items": [Row(x=1)], "key": 1, "value": Row(name="a", age=2)}
    assert row.as_dict(recursive=True) == {
        "items": [{"x": 1}],
        "key": 1,
        "value": {"age": 2, "name": "a"},
    }
    with pytest.raises(TypeError, match="no field names"):
        Row(1).as_dict()


def test_set_field_names_and_row_kind() -> None:
    row = Row(1, "a")
    row.set_field_names(["id", "name"])
    assert row.name == "a" and row._fields == ["id", "name"]
    with pytest.raises(ValueError, match="1 field names"):
        row.set_field_names(["only"])
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.UPDATE_AFTER)
    assert row.get_row_kind() is RowKind.UPDATE_AFTER
    with pytest.raises(TypeError):
        row.set_row_kind(2)  # type: ignore[arg-type]


def test_row_kind_values_and_short_strings() -> None:
    assert [k.value for k in RowKind] == [0, 1, 2, 3]
    assert [k.short_string() for k in RowKind] == ["+I", "-U", "+U", "-D"]


def test_a_row_kind_prints_as_its_short_string_like_pyflink() -> None:
    # PyFlink 2.3: print(row.get_row_kind()) shows -U (corpus: row_kinds_and_access)
    assert [str(k) for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert f"{RowKind.DELETE} {RowKind.DELETE.name}" == "-D DELETE"
    assert repr(RowKind.UPDATE_BEFORE) == "<RowKind.UPDATE_BEFORE: 1>"


def test_of_kind_builds_a_row_of_that_kind() -> None:
    deleted = Row.of_kind(RowKind.DELETE, "a", 1)
    assert deleted == Row.of_kind(RowKind.DELETE, "a", 1) and tuple(deleted) == ("a", 1)
    assert deleted.get_row_kind() is RowKind.DELETE and deleted._fields is None
    named = Row.of_kind(RowKind.UPDATE_AFTER, user="u", qty=2)
    assert named.get_row_kind() is RowKind.UPDATE_AFTER
    assert named.as_dict() == {"user": "u", "qty": 2}


def test_in_looks_for_a_field_name_in_a_named_row_and_a_value_in_an_unnamed_one() -> None:
    # as PyFlink's Row.__contains__: "user" in row asks whether the row has that field
    named = Row(user="alice", qty=1)
    assert "user" in named and "qty" in named
    assert "alice" not in named and 1 not in named
    unnamed = Row("alice", 1)
    assert "alice" in unnamed and 1 in unnamed and "user" not in unnamed
    named_later = Row("alice", 1)
    named_later.set_field_names(["user", "qty"])
    assert "user" in named_later and "alice" not in named_later


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_pickle_keeps_names_and_kind(dumps: object) -> None:
    row = Row(x=Row(1, 2), name="a")
    row.set_row_kind(RowKind.DELETE)
    restored = pickle.loads(dumps(row))  # type: ignore[operator]
    assert restored == row
    assert restored._fields == ["x", "name"]
    assert restored.get_row_kind() is RowKind.DELETE
    assert type(restored.x) is Row and restored.x._fields is None
    assert copy.deepcopy(row) == row and copy.copy(row) == row


def test_unnamed_insert_row_carries_no_instance_state() -> None:
    assert Row(1, 2).__dict__ == {}


def test_a_named_rows_fields_are_read_without_getattr(monkeypatch: pytest.MonkeyPatch) -> None:
    """``row.user`` is a descriptor of the names' class, read in C like a namedtuple's field:
    the failed lookup and ``__getattr__`` it took cost ~1.9 us (benchmarks/row_access.py)."""
    rows = [Row(user="u", amount=3), Row("user", "amount")("u", 3), row_module._create_row(
        ["user", "amount"], ("u", 3))]  # fmt: skip
    renamed = Row("u", 3)
    renamed.set_field_names(["user", "amount"])

    def refuse(self: Row, name: str) -> object:
        raise AssertionError(f"__getattr__ called for {name!r}")

    monkeypatch.setattr(Row, "__getattr__", refuse)
    for row in [*rows, renamed]:
        assert row.user == "u" and row.amount == 3
        assert type(row) is type(rows[0]) and isinstance(row, Row)
        assert row.__dict__ == {}, "the names are the class's, not each row's"


def test_names_that_are_not_plain_attributes_stay_readable() -> None:
    row = Row("a", "a", "count", "_x", "not an identifier")(1, 2, 3, 4, 5)
    assert row.a == 1 and row["a"] == 1  # a repeated name reads its first field (list.index)
    assert row.count == 3 and row["count"] == 3  # a field, as on PyFlink
    assert row["_x"] == 4 and row["not an identifier"] == 5
    with pytest.raises(AttributeError):
        _ = row._x
    assert getattr(row, "not an identifier") == 5


def test_a_named_rows_class_refuses_a_wrong_number_of_values() -> None:
    cls = type(Row(a=1, b=2))
    assert cls(3, 4) == Row(a=3, b=4) and cls(3, 4)._fields == ["a", "b"]
    with pytest.raises(ValueError, match="2 fields"):
        cls(3)


def test_past_the_class_limit_rows_keep_their_names_themselves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(row_module, "NAMED_CLASS_LIMIT", len(row_module._named_classes))
    row = Row(never_seen_before=1, other=2)
    assert type(row) is Row and row.__dict__ == {"_fields": ["never_seen_before", "other"]}
    assert row.never_seen_before == 1 and row["other"] == 2
    assert row == Row(never_seen_before=1, other=2)
    assert pickle.loads(pickle.dumps(row))._fields == ["never_seen_before", "other"]
    renamed = Row(1, 2)
    renamed.set_field_names(["p", "q_never_seen"])
    assert type(renamed) is Row and renamed.q_never_seen == 2


def test_a_row_class_keeps_its_kind_and_one_class_serves_each_names() -> None:
    person = Row("name", "age")
    person.set_row_kind(RowKind.DELETE)
    assert person("a", 1).get_row_kind() is RowKind.DELETE
    # two threads may both miss the cache and make a class: the first one stored wins
    names = ("t1", "t2", "t3")
    assert row_module._named_class(names) is row_module._named_class(names)
    assert type(row_module._named((1, 2, 3), names)) is row_module._named_class(names)
