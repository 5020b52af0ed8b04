"""A declared ``output_type`` (:mod:`undertow.runtime.task.output_check`): no check without
one; with one, the cheap batch test passes only batches the full check takes, and a misfit is
refused naming where, the value, its type and the declared type."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.common import Row
from undertow.common.typeinfo import Types
from undertow.core.errors import GraphBuildError, OutputTypeError
from undertow.runtime.task.operators import StreamMap
from undertow.runtime.task.output_check import (
    CheckedOutput,
    OutputCheck,
    batch_fits,
    none_field_problem,
)


def test_no_output_type_or_pickled_bytes_declares_no_check() -> None:
    assert OutputCheck.of(None, "map()") is None
    assert OutputCheck.of(Types.PICKLED_BYTE_ARRAY(), "map()") is None
    with pytest.raises(GraphBuildError, match=r"map\(\): output_type must be a TypeInformation"):
        OutputCheck.of(str, "map()")


class _Collected:
    def __init__(self) -> None:
        self.batches: list[list[Any]] = []

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        self.batches.append(values)


@pytest.mark.parametrize(
    ("output_type", "fits", "refused", "problem"),
    [
        (Types.STRING(), ["a", None], [1], "expected String, got int 1"),
        (Types.INT(), [7, -(2**31)], [2**40], r"expected Integer \(32-bit"),
        (Types.DOUBLE(), [1, 2.5], ["x"], "expected Double, got str 'x'"),
        (
            Types.ROW([Types.STRING(), Types.INT()]),
            [Row("a", 1), ("b", None)],
            [("a",)],
            r"with 2 fields, got 1 values",
        ),
        (
            Types.TUPLE([Types.STRING(), Types.INT()]),
            [("a", 1)],
            [("a", 1, 2)],
            r"with 2 fields, got 3 values",
        ),
        (Types.SQL_DATE(), [None], [3], "expected DateTypeInfo"),  # no cheap test: full check
    ],
)
def test_a_checked_output_refuses_a_value_that_does_not_fit(
    output_type: Any, fits: list[Any], refused: list[Any], problem: str
) -> None:
    target = _Collected()
    check = OutputCheck.of(output_type, "map()")
    assert check is not None
    out = CheckedOutput(target, check, "operator 'Map' (subtask 2/3)")  # type: ignore[arg-type]
    out.collect_batch(fits, None)
    assert target.batches == [fits]
    value = re.escape(f"{refused[0]!r} ({type(refused[0]).__name__})")
    with pytest.raises(OutputTypeError, match=(
        rf"^operator 'Map' \(subtask 2/3\): map\(\) declared output_type .*, but the function "
        rf"returned {value}: .*{problem}"
    )):  # fmt: skip
        out.collect_batch([*fits, *refused], None)
    assert len(target.batches) == 1  # nothing of the refused batch went on


_TYPES = [
    Types.STRING(),
    Types.BOOLEAN(),
    Types.BYTE(),
    Types.LONG(),
    Types.DOUBLE(),
    Types.BIG_INT(),
    Types.ROW([Types.STRING(), Types.INT()]),
    Types.TUPLE([Types.LONG(), Types.BOOLEAN()]),
]
_BOUNDS = [
    b + d for bits in (8, 32, 64) for b in (2 ** (bits - 1), -(2 ** (bits - 1))) for d in (-1, 0)
]
_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from(_BOUNDS),
    st.booleans(),
    st.floats(),
    st.text(max_size=3),
    st.none(),
)
_VALUES = _SCALARS | st.tuples(_SCALARS, _SCALARS) | st.tuples(_SCALARS)


@given(output_type=st.sampled_from(_TYPES), values=st.lists(_VALUES, max_size=4))
def test_the_batch_test_passes_only_batches_the_full_check_takes(
    output_type: Any, values: list[Any]
) -> None:
    """A batch the cheap test passes never holds a value the type refuses (it skips the full
    check), nor a tuple's ``None`` field that PyFlink's tuple coder cannot write."""
    if batch_fits(output_type, output_type.nullable)(values):
        assert all(output_type.check(v) is None for v in values)
        assert all(none_field_problem(output_type, v) is None for v in values)


def test_the_batch_test_passes_fitting_batches_cheaply() -> None:
    """The common batches pass without the full check (what keeps it cheap)."""
    row = Types.ROW([Types.STRING(), Types.INT()])
    assert batch_fits(row, False)([Row("a", 1), ("b", 2), Row(x="c", y=None)])
    assert batch_fits(Types.LONG(), False)([1, 2**63 - 1, -(2**63)])
    assert not batch_fits(Types.LONG(), False)([2**63])
    assert batch_fits(Types.STRING(), True)(["a", None])
    assert batch_fits(Types.STRING(), True)([])


def test_a_tuples_none_field_is_refused_unless_its_pyflink_coder_writes_none() -> None:
    pair = Types.TUPLE([Types.STRING(), Types.INSTANT()])
    assert not batch_fits(pair, False)([(None, None)])
    assert batch_fits(pair, False)([("a", None)])
    assert none_field_problem(pair, (None, None)) == (
        "field 0: expected String, got None (a tuple has no nulls)"
    )
    assert none_field_problem(pair, ("a", None)) is None
    decimal = Types.TUPLE([Types.BIG_DEC(), Types.INT()])  # PyFlink 2.3 fails on (None, 1)
    assert not batch_fits(decimal, False)([(None, 1)])
    assert none_field_problem(decimal, (None, 1)) == (
        "field 0: expected BigDecimal, got None (a tuple has no nulls)"
    )
    in_row = Types.ROW([Types.STRING(), pair])
    assert none_field_problem(in_row, Row(None, ("a", None))) is None
    assert none_field_problem(in_row, Row("b", (None, None))) == (
        "field 1: field 0: expected String, got None (a tuple has no nulls)"
    )


def test_map_operators_carry_the_check_only_when_declared() -> None:
    from undertow.runtime.task.output_check import declared

    assert declared(StreamMap(None, str), None, "map()").output_check is None
    op = declared(StreamMap(None, str), Types.STRING(), "map()")
    assert op.output_check == OutputCheck(Types.STRING(), "map()")


def test_a_row_types_values_go_on_named_as_the_type() -> None:
    from undertow.runtime.task.output_check import rows_named

    row = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
    named = rows_named(row)
    assert named is not None and rows_named(Types.TUPLE([Types.INT()])) is None
    already = [Row(word="a", n=1)]
    assert named(already) is already  # nothing to do: the same list
    out = named([Row("a", 1), ("b", 2), Row(word="c", n=3)])
    assert [r.as_dict() for r in out] == [
        {"word": "a", "n": 1}, {"word": "b", "n": 2}, {"word": "c", "n": 3}
    ]  # fmt: skip
    target = _Collected()
    CheckedOutput(target, OutputCheck(row, "map()"), "x").collect_batch([("d", 4)], None)  # type: ignore[arg-type]
    assert target.batches[0][0].word == "d"


def test_a_float_output_goes_on_as_javas_float_holds_it() -> None:
    # PyFlink 2.3 (corpus: collected_and_chained_types): after map(..., Types.FLOAT()) fanned
    # out or keyed, the next function saw 0.10000000149011612 for 0.1
    from undertow.common.typeinfo_basic import to_float32
    from undertow.runtime.task.output_check import as_delivered

    near = to_float32(0.1)
    assert near == 0.10000000149011612
    floats = as_delivered(Types.FLOAT())
    assert floats is not None and floats([0.1, 2.5]) == [near, 2.5]
    pairs = as_delivered(Types.TUPLE([Types.STRING(), Types.FLOAT()]))
    assert pairs is not None and pairs([("k", 0.1)]) == [("k", near)]
    listed = as_delivered(Types.LIST(Types.FLOAT()))
    assert listed is not None and listed([[0.1, None]]) == [[near, None]]
    for untouched in (Types.TUPLE([Types.STRING(), Types.INT()]), Types.STRING(), Types.LONG()):
        assert as_delivered(untouched) is None  # nothing done per record
    target = _Collected()
    check = OutputCheck(Types.FLOAT(), "map()")
    CheckedOutput(target, check, "x").collect_batch([0.1], None)  # type: ignore[arg-type]
    assert target.batches[0] == [near]


def test_a_whole_number_under_double_goes_on_as_a_float() -> None:
    # PyFlink 2.3 (corpus: whole_numbers_as_doubles): map(lambda n: n * 2, Types.DOUBLE())
    # then key_by gave 2.0; a tuple's and a row's DOUBLE field too (printed +I[1.0,0.5])
    from undertow.common import RowKind
    from undertow.runtime.task.output_check import as_delivered

    doubles = as_delivered(Types.DOUBLE())
    assert doubles is not None
    assert doubles([2, 0.5]) == [2.0, 0.5] and type(doubles([2])[0]) is float
    floats = [0.5, 1.5]
    assert doubles(floats) is floats  # floats only: the batch goes on as it is
    pairs = as_delivered(Types.TUPLE([Types.STRING(), Types.DOUBLE()]))
    assert pairs is not None and pairs([("k", 1)]) == [("k", 1.0)]
    assert type(pairs([("k", 1)])[0][1]) is float
    as_floats = [("k", 1.0)]
    assert pairs(as_floats) is as_floats
    row_type = Types.ROW_NAMED(["n", "count"], [Types.DOUBLE(), Types.DOUBLE()])
    rows = as_delivered(row_type)
    assert rows is not None
    deleted = Row.of_kind(RowKind.DELETE, n=1, count=None)
    (out,) = rows([deleted])
    assert out.as_dict() == {"n": 1.0, "count": None} and type(out.n) is float
    assert out.get_row_kind() is RowKind.DELETE
    (out,) = rows([Row(n=2.5, count=3)])
    assert type(out["count"]) is float
    target = _Collected()
    CheckedOutput(target, OutputCheck(Types.DOUBLE(), "map()"), "x").collect_batch([4], None)  # type: ignore[arg-type]
    assert target.batches[0] == [4.0] and type(target.batches[0][0]) is float


def test_a_bool_under_an_integer_type_goes_on_as_pyflinks_coder_writes_it() -> None:
    """PyFlink 2.3 prints 1 for ``map(lambda x: True, output_type=Types.LONG())`` (run
    2026-12-03): a bool passes and goes on as an ``int``; a batch of ints goes on as it is."""
    target = _Collected()
    checked = CheckedOutput(target, OutputCheck(Types.LONG(), "map()"), "x")
    checked.collect_batch([True, 2, False], None)  # type: ignore[arg-type]
    ints = [1, 2]
    checked.collect_batch(ints, None)  # type: ignore[arg-type]
    assert target.batches[0] == [1, 2, 0] and {type(v) for v in target.batches[0]} == {int}
    assert target.batches[1] is ints
