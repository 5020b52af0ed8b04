"""The rolling reduce (``StreamGroupedReduce``) hands its field aggregation to the backend's
fold, which combines pairs inline (no call of the fold function), with the same output and
state as the fold function; a user's reduce keeps its calls, each in its record's key."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from undertow.core.errors import RecordFieldError
from undertow.datastream.field_functions import FieldCheck, field_aggregator
from undertow.runtime.task.keyed_operators import KeyedProcessOperator, StreamGroupedReduce
from undertow.state.backend import PairAggregation
from undertow.testing.harness import KeyedOneInputOperatorTestHarness

RECORDS = [("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5)]


def _run(pair: PairAggregation | None) -> tuple[list[Any], int, dict[int, bytes]]:
    calls = 0
    aggregate = field_aggregator(1, operator.add)

    def fold(a: Any, b: Any) -> Any:
        nonlocal calls
        calls += 1
        return aggregate(a, b)

    op = StreamGroupedReduce(None, fold, lambda r: r[0], pair=pair)
    with KeyedOneInputOperatorTestHarness(op) as harness:
        harness.process_elements(RECORDS)
        return harness.extract_output_values(), calls, harness.keyed_backend.snapshot()


def test_a_field_aggregation_of_pairs_runs_without_its_fold_function() -> None:
    inline, inline_calls, inline_state = _run(PairAggregation(1, operator.add))
    called, fold_calls, fold_state = _run(None)
    assert inline == called == [("a", 1), ("b", 2), ("a", 4), ("b", 6), ("a", 9)]
    assert inline_state == fold_state
    assert (inline_calls, fold_calls) == (0, 3)


def test_a_users_reduce_runs_in_each_records_key() -> None:
    seen: list[Any] = []
    op: StreamGroupedReduce

    def reduce(a: Any, b: Any) -> Any:
        seen.append(op.backend.get_current_key())
        return (a[0], a[1] + b[1])

    op = StreamGroupedReduce(reduce, reduce, lambda r: r[0])
    with KeyedOneInputOperatorTestHarness(op) as harness:
        harness.process_elements(RECORDS)
        assert harness.extract_output_values()[-1] == ("a", 9)
    assert seen == ["a", "b", "a"]


class Reminding:
    """A keyed process function by shape, without ``on_timer``: its timers fire to no effect."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value[1])
        yield value


class Alarm(Reminding):
    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", ctx.get_current_key(), timestamp)


def _timer_output(function: Any) -> list[Any]:
    op = KeyedProcessOperator(function)
    with KeyedOneInputOperatorTestHarness(op, key_selector=lambda r: r[0]) as harness:
        harness.process_elements([("a", 1), ("b", 2)])
        harness.process_watermark(5)
        return harness.extract_output_values()


def test_a_keyed_process_functions_on_timer_is_bound_when_it_has_one() -> None:
    assert _timer_output(Alarm()) == [("a", 1), ("b", 2), ("timer", "a", 1), ("timer", "b", 2)]
    assert _timer_output(Reminding()) == [("a", 1), ("b", 2)]


def _summing(records: list[Any]) -> None:
    check = FieldCheck(1, "KeyedStream.sum(1)")
    op = StreamGroupedReduce(None, field_aggregator(1, operator.add, check.what), lambda r: r[0],
                             pair=PairAggregation(1, operator.add), check_record=check)  # fmt: skip
    with KeyedOneInputOperatorTestHarness(op) as harness:
        harness.process_elements(records)


def test_a_built_in_aggregation_checks_the_first_record_it_sees() -> None:
    """A key that comes once is never folded: only the check finds its missing field."""
    with pytest.raises(RecordFieldError, match=r"sum\(1\): no field 1 in a record of tuple of 1"):
        _summing([("a",), ("b", 2)])


def test_a_record_without_the_field_in_the_inline_pair_fold_is_named() -> None:
    with pytest.raises(RecordFieldError, match=r"sum\(1\): no field 1 .* tuple of 1 field: \('a',"):
        _summing([("a", 1), ("b", 2), ("a",)])


class Dividing:
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield 12 // value[1]


def test_a_keyed_process_function_raising_on_a_record_fails_naming_that_record() -> None:
    op = KeyedProcessOperator(Dividing())
    with (
        KeyedOneInputOperatorTestHarness(op, key_selector=lambda r: r[0]) as harness,
        pytest.raises(ZeroDivisionError) as caught,
    ):
        harness.process_elements([("a", 1), ("b", 0), ("a", 2)])
    assert caught.value.__notes__ == ["on the record ('b', 0)"]
