"""The types a keyed state's descriptor declares, through the DataStream API: a function that
writes a value of another type fails the job naming the operator, subtask, state, declared
type and value (PyFlink's state serializer fails that job too); fitting values pass."""

from __future__ import annotations

import pytest

from undertow.common.typeinfo import Types
from undertow.core.errors import JobExecutionError
from undertow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from undertow.datastream.state import MapStateDescriptor, ValueStateDescriptor


class _Count(KeyedProcessFunction):
    """Counts records per key in an ``INT`` value state and keeps the last record per key in
    a map of ``STRING`` to ``LONG``; ``wrong`` writes a str into the count at record 3."""

    def __init__(self, wrong: bool) -> None:
        self.wrong = wrong

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        self.last = runtime_context.get_map_state(
            MapStateDescriptor("last", Types.STRING(), Types.LONG())
        )

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        n = (self.count.value() or 0) + 1
        self.count.update(f"{n}" if self.wrong and value == 3 else n)
        self.last.put(f"key-{value % 2}", value)
        yield value % 2, n


def _job(env: StreamExecutionEnvironment, wrong: bool) -> list[tuple[int, int]]:
    stream = env.from_collection(list(range(1, 7)), type_info=Types.LONG())
    return sorted(stream.key_by(lambda v: v % 2).process(_Count(wrong)).name("count")
                  .execute_and_collect())  # fmt: skip


def test_fitting_values_pass(env: StreamExecutionEnvironment) -> None:
    assert _job(env, wrong=False) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)]


def test_a_value_of_another_type_fails_the_job_naming_operator_subtask_and_state(
    env: StreamExecutionEnvironment,
) -> None:
    with pytest.raises(JobExecutionError, match=(
        r"operator 'count' \(subtask \d/2.*StateTypeError: value state 'count' declared value "
        r"type Integer, but was given '2' \(str\): expected Integer"
    )):  # fmt: skip
        _job(env, wrong=True)


class _Totals(KeyedProcessFunction):
    """Keeps per key a map of seen values to 1, written with ``put_all`` of pairs, as
    PyFlink 2.3 takes them (its ``put_all`` iterates its argument as pairs)."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.seen = runtime_context.get_map_state(
            MapStateDescriptor("seen", Types.LONG(), Types.INT())
        )

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        self.seen.put_all({value: 1}.items())
        yield value % 2, sorted(self.seen.keys())


def test_map_state_put_all_takes_pairs(env: StreamExecutionEnvironment) -> None:
    stream = env.from_collection(list(range(1, 5)), type_info=Types.LONG())
    got = sorted(stream.key_by(lambda v: v % 2).process(_Totals()).execute_and_collect())
    assert got == [(0, [2]), (0, [2, 4]), (1, [1]), (1, [1, 3])]
