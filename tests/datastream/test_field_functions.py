"""Field access of ``sum``/``min``/``max``/``min_by``/``max_by``: a rolling aggregate rebuilds a
named ``Row`` with its fields in the declared order, its names and its kind (issue 26)."""

from __future__ import annotations

import operator
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.common import Row, RowKind, Types
from undertow.core.errors import GraphBuildError, RecordFieldError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.field_functions import check_declared_field, field_aggregator, pick_by


def _sensor(sensor: str, vc: int, ts: int) -> Row:
    row = Row(sensor, vc, ts)
    row.set_field_names(["id", "vc", "ts"])
    return row


def test_sum_by_name_keeps_field_order_names_and_kind() -> None:
    first = _sensor("s1", 1, 100)
    first.set_row_kind(RowKind.UPDATE_AFTER)
    summed = field_aggregator("vc", operator.add)(first, _sensor("s1", 11, 200))
    assert tuple(summed) == ("s1", 12, 100)
    assert summed._fields == ["id", "vc", "ts"]
    assert summed.get_row_kind() is RowKind.UPDATE_AFTER


def test_sum_by_position_of_a_named_row_keeps_its_names() -> None:
    summed = field_aggregator(1, operator.add)(_sensor("s1", 1, 100), _sensor("s1", 11, 200))
    assert tuple(summed) == ("s1", 12, 100) and summed._fields == ["id", "vc", "ts"]


def test_keyword_rows_keep_their_order_through_max() -> None:
    larger = field_aggregator("vc", max)(Row(id="s1", vc=1, ts=100), Row(id="s1", vc=11, ts=200))
    assert tuple(larger) == ("s1", 11, 100)


def test_max_by_picks_the_whole_record() -> None:
    a, b = _sensor("s1", 1, 100), _sensor("s1", 11, 200)
    assert pick_by("vc", operator.gt)(a, b) is b
    assert pick_by("vc", operator.lt)(a, b) is a


ROWS = [("s1", 1, 100), ("s1", 11, 200)]
SENSOR = Types.ROW_NAMED(["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()])


def _rolling(env: StreamExecutionEnvironment, aggregate: str) -> list[str]:
    env.set_parallelism(1)
    keyed = env.from_collection(ROWS, type_info=SENSOR).key_by(lambda r: r.id, Types.STRING())
    stream: Any = getattr(keyed, aggregate)("vc")
    return [str(r) for r in stream.map(lambda r: f"{r}").execute_and_collect()]


def test_rolling_aggregates_on_a_named_row_type_print_pyflinks_rows(
    env: StreamExecutionEnvironment,
) -> None:
    # PyFlink 2.3 prints +I[s1,12,100] for sum (recorded with /work/pyflink-venv, issue 26).
    assert _rolling(env, "sum") == ["Row(id='s1', vc=1, ts=100)", "Row(id='s1', vc=12, ts=100)"]


_FIELD = st.integers(-50, 50) | st.floats(allow_nan=False, width=32) | st.text(max_size=3)


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(st.tuples(st.text(max_size=2), st.integers(-50, 50)), min_size=1, max_size=6)
    | st.lists(st.tuples(st.text(max_size=2), st.integers(-50, 50), _FIELD), min_size=1, max_size=6)
    | st.lists(st.lists(st.integers(-50, 50), min_size=2, max_size=2), min_size=1, max_size=6)
)
def test_sum_of_the_second_field_equals_the_generic_combine(records: list[Any]) -> None:
    """``sum(1)`` adds inline (no call per record); the result equals a combine that calls
    ``operator.add``, for pairs and for the records that take the generic path."""
    fast = field_aggregator(1, operator.add)
    called = field_aggregator(1, lambda x, y: operator.add(x, y))
    acc_fast = acc_called = records[0]
    for record in records[1:]:
        acc_fast, acc_called = fast(acc_fast, record), called(acc_called, record)
        assert acc_fast == acc_called
        assert type(acc_fast) is type(acc_called)


class Reading(namedtuple("Reading", "id vc")):
    """A named tuple whose constructor parses text: only ``_make`` can rebuild it from items."""

    def __new__(cls, text: str) -> Reading:
        sensor, vc = text.split(":")
        return super().__new__(cls, sensor, int(vc))


class Listed:
    """A record that lists its fields with ``as_dict()`` and takes them as keywords."""

    def __init__(self, id: str, vc: int) -> None:
        self.id, self.vc = id, vc

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "vc": self.vc}


def test_a_named_tuple_is_rebuilt_by_make_and_an_object_from_its_as_dict() -> None:
    summed = field_aggregator(1, operator.add)(Reading("s1:1"), Reading("s1:11"))
    assert type(summed) is Reading and summed == ("s1", 12)
    larger = field_aggregator("vc", max)(Listed("s1", 1), Listed("s1", 11))
    assert type(larger) is Listed and larger.as_dict() == {"id": "s1", "vc": 11}


def test_a_missing_field_names_the_aggregation_the_field_and_the_record() -> None:
    summed = field_aggregator(5, operator.add, "KeyedStream.sum(5)")
    with pytest.raises(RecordFieldError, match=r"^KeyedStream.sum\(5\): no field 5 in a record "
                       r"of tuple of 2 fields: \('a', 1\)$"):  # fmt: skip
        summed(("a", 1), ("a", 2))
    by_name = pick_by("nosuch", operator.lt, "KeyedStream.min_by('nosuch')")
    with pytest.raises(RecordFieldError, match=r"'nosuch' in a record of Row of 2 fields \['k', "):
        by_name(Row(k="a", n=1), Row(k="a", n=2))
    with pytest.raises(RecordFieldError, match=r"field 1 in a record of int \(no fields"):
        field_aggregator(1, max)(3, 4)


def test_the_record_named_is_the_one_without_the_field() -> None:
    """The key's first record (the running aggregate) may be the short one."""
    for position, combine in ((1, operator.add), (1, max), (2, operator.add), ("n", max)):
        aggregate = field_aggregator(position, combine, "agg")
        with pytest.raises(RecordFieldError, match=r"of tuple of 1 field: \('a',\)$"):
            aggregate(("a",), ("a", 2, 3))
        with pytest.raises(RecordFieldError, match=r"of tuple of 1 field: \('a',\)$"):
            aggregate(("a", 2, 3) if position != "n" else Row(k="a", n=2), ("a",))


def test_an_error_of_the_aggregation_itself_is_left_as_it_is() -> None:
    with pytest.raises(TypeError, match="concatenate"):
        field_aggregator(1, operator.add)(("a", "x"), ("a", 1))


@pytest.mark.parametrize(
    ("type_info", "position", "expected"),
    [
        (Types.TUPLE([Types.STRING(), Types.INT()]), 5, "tuples of 2 fields"),
        (Types.TUPLE([Types.STRING(), Types.INT()]), "f1", "tuples of 2 fields"),
        (Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.INT()]), "nosuch", r"\['k', 'n'\]"),
        (Types.ROW([Types.STRING(), Types.INT()]), 2, r"rows of 2 fields \['f0', 'f1'\]"),
        (Types.INT(), 1, "only field 0"),
    ],
)
def test_a_field_the_declared_type_lacks_is_refused_when_the_job_is_built(
    type_info: Any, position: int | str, expected: str
) -> None:
    with pytest.raises(GraphBuildError, match=rf"^KeyedStream.max\({position!r}\): .*{expected}"):
        check_declared_field(type_info, position, f"KeyedStream.max({position!r})")


def test_fields_the_declared_type_has_or_undeclared_types_pass_when_the_job_is_built() -> None:
    check_declared_field(Types.TUPLE([Types.STRING(), Types.INT()]), 1, "max(1)")
    check_declared_field(Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.INT()]), "n", "m")
    check_declared_field(Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.INT()]), 0, "m")
    check_declared_field(Types.INT(), 0, "sum(0)")
    check_declared_field(None, "anything", "sum")  # Python objects: checked on records
    check_declared_field(Types.PICKLED_BYTE_ARRAY(), 7, "sum")
    check_declared_field(Types.MAP(Types.STRING(), Types.INT()), "count", "sum")  # dicts
