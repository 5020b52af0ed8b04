"""Types / TypeInformation: construction, equality, repr, conform and check."""

from __future__ import annotations

import datetime
import decimal
import pickle

import pytest

from undertow.common import Instant, Row, RowKind
from undertow.common.typeinfo import TypeInformation, Types

ROW = Types.ROW_NAMED(["name", "x"], [Types.STRING(), Types.INT()])


def test_basic_types_are_values() -> None:
    assert Types.INT() == Types.INT()
    assert Types.INT() != Types.LONG()
    assert hash(Types.STRING()) == hash(Types.STRING())
    assert isinstance(Types.DOUBLE(), TypeInformation)
    assert len({Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP()}) == 3
    assert Types.PICKLED_BYTE_ARRAY() == Types.PICKLED_BYTE_ARRAY()


@pytest.mark.parametrize(
    ("type_info", "text"),
    [
        (Types.STRING(), "String"),
        (Types.INT(), "Integer"),
        (Types.BIG_DEC(), "BigDecimal"),
        (Types.SQL_DATE(), "DateTypeInfo"),
        (Types.PICKLED_BYTE_ARRAY(), "PickledByteArrayTypeInfo"),
        (Types.PRIMITIVE_ARRAY(Types.INT()), "PrimitiveArrayTypeInfo<Integer>"),
        (Types.BASIC_ARRAY(Types.STRING()), "BasicArrayTypeInfo<String>"),
        (
            Types.OBJECT_ARRAY(Types.ROW([Types.INT()])),
            "ObjectArrayTypeInfo<RowTypeInfo(f0: Integer)>",
        ),
        (Types.LIST(Types.LONG()), "ListTypeInfo<Long>"),
        (Types.MAP(Types.STRING(), Types.DOUBLE()), "MapTypeInfo<String, Double>"),
        (Types.TUPLE([Types.INT(), Types.STRING()]), "TupleTypeInfo(Integer, String)"),
        (ROW, "RowTypeInfo(name: String, x: Integer)"),
    ],
)
def test_repr_is_readable(type_info: TypeInformation, text: str) -> None:
    assert repr(type_info) == text


def test_composite_equality_hash_and_pickle() -> None:
    assert Types.ROW([Types.INT(), Types.STRING()]) == Types.ROW_NAMED(
        ["f0", "f1"], [Types.INT(), Types.STRING()]
    )
    assert Types.ROW_NAMED(["name", "y"], [Types.STRING(), Types.INT()]) != ROW
    assert Types.LIST(Types.INT()) != Types.LIST(Types.LONG())
    assert Types.MAP(Types.STRING(), Types.INT()) == Types.MAP(Types.STRING(), Types.INT())
    nested = Types.MAP(Types.STRING(), Types.LIST(ROW))
    assert hash(nested) == hash(Types.MAP(Types.STRING(), Types.LIST(ROW)))
    assert pickle.loads(pickle.dumps(nested)) == nested
    with pytest.raises(AttributeError):
        ROW.field_types = ()  # type: ignore[misc]


def test_arity_and_fields() -> None:
    assert Types.INT().get_arity() == 1
    assert ROW.get_arity() == 2
    assert ROW.get_field_names() == ["name", "x"]
    assert ROW.get_field_types() == [Types.STRING(), Types.INT()]
    assert ROW.get_field_index("x") == 1 and ROW.get_field_index("nope") == -1
    nested = Types.TUPLE([Types.INT(), ROW])
    assert nested.get_arity() == 2 and nested.get_total_fields() == 3


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="1 field names"):
        Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()])
    with pytest.raises(ValueError, match="duplicate"):
        Types.ROW_NAMED(["a", "a"], [Types.INT(), Types.INT()])
    with pytest.raises(TypeError, match="TypeInformation"):
        Types.ROW([int])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="primitive array"):
        Types.PRIMITIVE_ARRAY(Types.STRING())
    with pytest.raises(TypeError, match="basic array"):
        Types.BASIC_ARRAY(Types.BIG_INT())


# conform --------------------------------------------------------------------------------------


def test_row_conform_from_tuple_list_dict_and_row() -> None:
    for value in [("a", 1), ["a", 1], {"x": 1, "name": "a"}, Row("a", 1)]:
        row = ROW.conform(value)
        assert isinstance(row, Row) and type(row).__name__ == "Row"
        assert row == Row(name="a", x=1) and row._fields == ["name", "x"]
    assert ROW.conform({"name": "a"}) == ("a", None)  # missing keys are None, as in PyFlink


def test_row_conform_keeps_matching_rows_and_their_kind() -> None:
    row = Row(name="a", x=1)
    assert ROW.conform(row) is row
    deleted = Row("a", 1)
    deleted.set_row_kind(RowKind.DELETE)
    assert ROW.conform(deleted).get_row_kind() is RowKind.DELETE


class _Sensor:
    """A plain class, as tutorials define their record types."""

    def __init__(self, sensor: str, vc: int) -> None:
        self.name = sensor
        self.x = vc


def test_row_conform_reads_a_plain_objects_attributes_by_field_name() -> None:
    # PyFlink's from_collection reads obj.__dict__ by the row type's names (issue 26, item 3).
    row = ROW.conform(_Sensor("s1", 7))
    assert isinstance(row, Row) and tuple(row) == ("s1", 7) and row._fields == ["name", "x"]
    sparse = _Sensor("s1", 7)
    del sparse.x
    assert ROW.conform(sparse) == ("s1", None)  # a missing attribute is null, as in PyFlink


def test_row_conform_reads_a_named_row_of_the_same_names_by_name() -> None:
    # PyFlink picks a named row's fields by the type's names (get_fields_by_names).
    row = ROW.conform(Row(x=1, name="a"))
    assert tuple(row) == ("a", 1) and row._fields == ["name", "x"]
    assert tuple(ROW.conform(Row(p="a", q=1))) == ("a", 1)  # other names: by position


def test_unnamed_row_type_names_fields_like_flink() -> None:
    row = Types.ROW([Types.INT(), Types.STRING()]).conform((1, "a"))
    assert row.f0 == 1 and row.f1 == "a"


def test_row_conform_errors() -> None:
    with pytest.raises(ValueError, match="has 2 fields, got 3 values"):
        ROW.conform(("a", 1, 2))
    with pytest.raises(TypeError, match="cannot make a row"):
        ROW.conform("a")


def test_tuple_conform() -> None:
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    value = ("a", 1)
    assert pair.conform(value) is value
    assert pair.conform(["a", 1]) == ("a", 1) and type(pair.conform(["a", 1])) is tuple
    assert type(pair.conform(Row("a", 1))) is tuple
    with pytest.raises(ValueError, match="2 fields"):
        pair.conform(("a",))


def test_nested_conform() -> None:
    t = Types.TUPLE([Types.INT(), Types.LIST(Types.ROW_NAMED(["v"], [Types.INT()]))])
    out = t.conform([1, [(2,), [3]]])
    assert out == (1, [Row(v=2), Row(v=3)])
    assert out[1][0].v == 2
    m = Types.MAP(Types.STRING(), Types.TUPLE([Types.INT()]))
    assert m.conform({"a": [1]}) == {"a": (1,)}
    inner_none = Types.ROW([Types.TUPLE([Types.INT()])]).conform((None,))
    assert inner_none == (None,)  # None fields are left alone


def test_other_types_conform_to_themselves() -> None:
    values = [1, "s", 2.5, [1, 2], (1, 2), {"a": 1}, b"x", None]
    for type_info in [
        Types.INT(),
        Types.STRING(),
        Types.LIST(Types.INT()),
        Types.PICKLED_BYTE_ARRAY(),
    ]:
        for value in values:
            assert type_info.conform(value) is value


# check ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_info", "good", "bad"),
    [
        (Types.STRING(), ["", "x", None], [1, b"x"]),
        (Types.INT(), [0, -(2**31), 2**31 - 1, True], [2**31, 1.0, "1", None]),
        (Types.LONG(), [2**63 - 1], [2**63]),
        (Types.SHORT(), [-(2**15)], [2**15]),
        (Types.BYTE(), [127, -128], [128]),
        (Types.BIG_INT(), [2**100, None], [1.5]),
        (Types.FLOAT(), [1.5, 1, True], ["1.0", None]),
        (Types.BOOLEAN(), [True, False], [1, None]),
        (Types.CHAR(), ["a"], ["ab", ""]),
        (Types.BIG_DEC(), [decimal.Decimal("1.5"), None], [1.5]),
        (Types.INSTANT(), [Instant(1, 0), None], [1]),
        (Types.SQL_DATE(), [datetime.date(2024, 1, 1), None], [datetime.datetime(2024, 1, 1)]),
        (Types.SQL_TIME(), [datetime.time(1, 2)], [datetime.date(2024, 1, 1)]),
        (Types.SQL_TIMESTAMP(), [datetime.datetime(2024, 1, 1)], [datetime.date(2024, 1, 1)]),
        (Types.PICKLED_BYTE_ARRAY(), [object(), None], []),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), [b"ab", bytearray(b"x"), [1, 2]], [[1, None], "ab"]),
        (Types.PRIMITIVE_ARRAY(Types.INT()), [[1, 2], (3,)], [[1, "2"], None]),
        (Types.BASIC_ARRAY(Types.INT()), [[1, None]], [["1"]]),
        (Types.OBJECT_ARRAY(ROW), [[("a", 1), None]], [[("a", "b")]]),
        (Types.LIST(Types.STRING()), [["a", None], []], [[1], {"a"}]),
        (Types.MAP(Types.STRING(), Types.INT()), [{"a": 1, "b": None}], [{1: 1}, {"a": "1"}, []]),
        (Types.TUPLE([Types.INT(), Types.STRING()]), [(1, "a"), [1, None]], [(None, "a"), (1,)]),
        (ROW, [("a", 1), Row(None, None), {"name": "a"}], [("a", "b"), ("a",), 5, None]),
    ],
)
def test_check(type_info: TypeInformation, good: list[object], bad: list[object]) -> None:
    for value in good:
        assert type_info.check(value) is None, value
    for value in bad:
        problem = type_info.check(value)
        assert isinstance(problem, str) and problem, value


def test_check_messages_name_the_field_and_value() -> None:
    assert ROW.check(("a", "b")) == "field 'x' (index 1): expected Integer, got str 'b'"
    assert Types.INT().check(2**40) == (
        f"expected Integer (32-bit, {-(2**31)}..{2**31 - 1}), got {2**40}"
    )
    assert Types.LIST(Types.INT()).check([1, 2, "3"]) == "element 2: expected Integer, got str '3'"
    assert Types.MAP(Types.STRING(), Types.INT()).check({"k": "v"}) == (
        "value of key 'k': expected Integer, got str 'v'"
    )
    assert Types.TUPLE([Types.INT()]).check((None,)) == "field 0: expected Integer, got None"
    assert "with 2 fields, got 1 values" in (ROW.check(("a",)) or "")
    long_value = "x" * 500
    assert len(Types.INT().check(long_value) or "") < 120


def test_float_values_are_rounded_to_32_bits_as_pyflinks_java_float() -> None:
    """PyFlink hands a ``Types.FLOAT()`` value through a Java ``float``: ``110.1`` comes back as
    ``110.0999984741211`` (what PyFlink's state_access example prints)."""
    assert Types.FLOAT().conform(110.1) == 110.0999984741211
    assert Types.DOUBLE().conform(110.1) == 110.1
    row = Types.TUPLE([Types.STRING(), Types.FLOAT()]).conform(("Alice", 30.2))
    assert row == ("Alice", 30.200000762939453)
    assert Types.FLOAT().conform(1e39) == float("inf")
    assert Types.FLOAT().conform(-1e39) == float("-inf")
    assert Types.FLOAT().conform(None) is None
