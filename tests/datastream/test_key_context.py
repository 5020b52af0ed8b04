"""User functions on keyed streams see the key of the record they are called for.

Keys interleave in every input below (``a, b, a, c, b, ...``), so a function that read the
previous record's key, or no key at all, would produce different numbers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from tests.datastream.environments import threads_env

from undertow.common import Row, WatermarkStrategy
from undertow.common.typeinfo import Types
from undertow.common.watermark_strategy import TimestampAssigner
from undertow.core.errors import JobExecutionError
from undertow.datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from undertow.datastream.state import ValueStateDescriptor
from undertow.datastream.window import TumblingEventTimeWindows

RECORDS = [("a", 1), ("b", 10), ("a", 2), ("c", 100), ("b", 20), ("a", 3), ("c", 200)]


def running_counts(records: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """(key, number of records of the key so far), per record."""
    seen: Counter[str] = Counter()
    out = []
    for key, _ in records:
        seen[key] += 1
        out.append((key, seen[key]))
    return out


class CountingReduce(ReduceFunction):
    """Sums the values and counts, in keyed state, how often ``reduce`` ran for the key."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.calls = runtime_context.get_state(ValueStateDescriptor("calls"))

    def reduce(self, value1: Any, value2: Any) -> Any:
        calls = (self.calls.value() or 0) + 1
        self.calls.update(calls)
        return value1[0], value1[1] + value2[1], calls


def test_reduce_function_reads_the_state_of_the_current_records_key(
    env: StreamExecutionEnvironment,
) -> None:
    env.set_parallelism(1)
    stream = env.from_collection(RECORDS).key_by(lambda r: r[0]).reduce(CountingReduce())
    result = list(stream.execute_and_collect())
    # a key's first record passes unreduced; reduce's call count is the record's rank - 1
    assert result == [
        ("a", 1), ("b", 10), ("a", 3, 1), ("c", 100), ("b", 30, 1), ("a", 6, 2), ("c", 300, 1)
    ]  # fmt: skip


class CountPerKey(CoMapFunction):
    """Both inputs count into the same keyed state of their key."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def _bump(self, key: str) -> tuple[str, int]:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return key, count

    def map1(self, value: Any) -> Any:
        return self._bump(value[0])

    def map2(self, value: Any) -> Any:
        return self._bump(value)


class CountPerKeyFlat(CoFlatMapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def _bump(self, key: str) -> Any:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield key, count

    def flat_map1(self, value: Any) -> Any:
        return self._bump(value[0])

    def flat_map2(self, value: Any) -> Any:
        return self._bump(value)


def _final_counts(result: list[tuple[str, int]]) -> dict[str, int]:
    """Per key, the highest count seen; the counts of a key must be exactly 1..n."""
    by_key: dict[str, list[int]] = {}
    for key, count in result:
        by_key.setdefault(key, []).append(count)
    for key, counts in by_key.items():
        assert sorted(counts) == list(range(1, len(counts) + 1)), (key, counts)
    return {key: max(counts) for key, counts in by_key.items()}


WORDS = ["b", "c", "a", "b"]
EXPECTED_TOTALS = {"a": 4, "b": 4, "c": 3}


def test_keyed_co_map_with_connected_streams_key_by(env: StreamExecutionEnvironment) -> None:
    records, words = env.from_collection(RECORDS), env.from_collection(WORDS)
    connected = records.connect(words).key_by(lambda r: r[0], lambda w: w)
    result = list(connected.map(CountPerKey()).execute_and_collect())
    assert _final_counts(result) == EXPECTED_TOTALS


def test_keyed_co_map_with_two_keyed_streams(env: StreamExecutionEnvironment) -> None:
    records = env.from_collection(RECORDS).key_by(lambda r: r[0])
    words = env.from_collection(WORDS).key_by(lambda w: w)
    result = list(records.connect(words).map(CountPerKey()).execute_and_collect())
    assert _final_counts(result) == EXPECTED_TOTALS


def test_keyed_co_flat_map_with_both_ways_of_keying(env: StreamExecutionEnvironment) -> None:
    records, words = env.from_collection(RECORDS), env.from_collection(WORDS)
    one = records.connect(words).key_by(lambda r: r[0], lambda w: w).flat_map(CountPerKeyFlat())
    two = (
        records.key_by(lambda r: r[0])
        .connect(words.key_by(lambda w: w))
        .flat_map(CountPerKeyFlat())
    )
    assert _final_counts(list(one.execute_and_collect())) == EXPECTED_TOTALS
    assert _final_counts(list(two.execute_and_collect())) == EXPECTED_TOTALS


class CountPerKeyProcess(CoProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def _bump(self, key: str) -> Any:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield key, count

    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        return self._bump(value[0])

    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        return self._bump(value)


def test_co_process_function_on_keyed_streams_uses_keyed_state(
    env: StreamExecutionEnvironment,
) -> None:
    records, words = env.from_collection(RECORDS), env.from_collection(WORDS)
    connected = records.connect(words).key_by(lambda r: r[0], lambda w: w)
    result = list(connected.process(CountPerKeyProcess()).execute_and_collect())
    assert _final_counts(result) == EXPECTED_TOTALS


class RankPerKey(CountPerKey):
    def map(self, value: Any) -> Any:
        return self._bump(value[0])


def test_keyed_map_function_sees_each_records_key(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    result = list(env.from_collection(RECORDS).key_by(lambda r: r[0]).map(RankPerKey())
                  .execute_and_collect())  # fmt: skip
    assert result == running_counts(RECORDS)


def test_unhashable_keys_are_keyed_by_their_content(env: StreamExecutionEnvironment) -> None:
    """PyFlink keys by value, so ``key_by(lambda r: [r[0]])`` (a list) is a valid key."""
    env.set_parallelism(1)
    stream = (
        env.from_collection(RECORDS)
        .key_by(lambda r: [r[0]])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    result = list(stream.execute_and_collect())
    assert result[-3:] == [("b", 30), ("a", 6), ("c", 300)]


class _NoB(KeySelector):
    def get_key(self, value: tuple[str, int]) -> int:
        return {"a": 1, "c": 3}[value[0]]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("key_type", [None, Types.INT()])
@pytest.mark.parametrize("selector", ["KeySelector", "lambda"])
def test_a_key_selector_that_raises_names_the_key_by_itself_and_the_record(
    parallelism: int, key_type: Any, selector: str
) -> None:
    """At parallelism 1 the keyed operator runs the selector (the one-channel partitioner does
    not), at 2 the producer's partitioner does: either way the failure names the key_by as
    the operator (PyFlink's ``_stream_key_by_map_operator``, where PyFlink's traceback is, not
    the 'Map' before it nor the 'Keyed Reduce' after it), the selector and the record (at 2,
    whichever map subtask meets a 'b' first), not only ``KeyError: 'b'``."""
    env = threads_env(parallelism)
    select = _NoB() if selector == "KeySelector" else (lambda r: {"a": 1, "c": 3}[r[0]])
    name = "_NoB.get_key" if selector == "KeySelector" else ".*<lambda>"
    stream = env.from_collection(RECORDS).map(lambda r: r).key_by(select, key_type=key_type)
    with pytest.raises(JobExecutionError, match=(
        rf"^job failed: operator '_stream_key_by_map_operator' \(subtask [12]/{parallelism} of "
        rf"'[^']+'\) raised KeySelectorError: the key selector {name} of key_by\(\) raised "
        r"KeyError: 'b' on the record \('b', (10|20)\)"
    )) as failure:  # fmt: skip
        list(stream.reduce(lambda x, y: x).execute_and_collect())
    assert failure.value.operator == "_stream_key_by_map_operator"


_NOT_A_STRING = (
    r"job failed: operator '_stream_key_by_map_operator' \(subtask [12]/[12] of '[^']*'\) "
    r"raised KeyTypeError: "
    r"key_by\(\) declared key_type String, but the key selector returned (\d+) \(int\): "
    r"expected String, got int \1 \(on the record \('[abc]', \1\)\)"
)


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("downstream", ["reduce", "map"])
def test_a_key_that_does_not_fit_the_declared_key_type_fails_the_job(
    parallelism: int, downstream: str
) -> None:
    """``key_by(..., key_type=Types.STRING())`` with int keys fails, as PyFlink's key
    serializer refuses them, naming the key_by as the operator (PyFlink's, which writes the
    key; not the producer's 'Map' that ran the selector, also with one channel and before a
    map), the subtask, the key, its type, the declared type and the record; str keys run."""
    env = threads_env(parallelism)
    mapped = env.from_collection(RECORDS).map(lambda r: r)
    bad = mapped.key_by(lambda r: r[1], key_type=Types.STRING())
    job = bad.reduce(lambda a, b: a) if downstream == "reduce" else bad.map(lambda r: r)
    with pytest.raises(JobExecutionError, match=_NOT_A_STRING):
        list(job.execute_and_collect())
    good = mapped.key_by(lambda r: r[0], key_type=Types.STRING())
    result = list(good.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect())
    totals = {key: max(total for k, total in result if k == key) for key, _ in result}
    assert len(result) == len(RECORDS) and totals == {"a": 6, "b": 30, "c": 300}


def test_connected_streams_check_the_declared_key_type_on_both_inputs() -> None:
    """``ConnectedStreams.key_by(k1, k2, key_type)`` declares the type of both keys."""
    env = threads_env(2)
    records = env.from_collection(RECORDS).map(lambda r: r)
    words = env.from_collection(["a", "b"]).map(lambda w: w)
    connected = records.connect(words).key_by(lambda r: r[1], lambda w: w, Types.STRING())
    with pytest.raises(JobExecutionError, match=_NOT_A_STRING):
        list(connected.map(CountPerKey()).execute_and_collect())


class _KeyAndSum(KeyedProcessFunction):
    """Emits the current key and the key's running sum of the records' second field."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value: tuple[Any, int], ctx: Any) -> Any:
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield ctx.get_current_key(), total


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_double_key_type_makes_int_and_float_keys_one_key_as_pyflink(parallelism: int) -> None:
    """PyFlink writes a ``Types.DOUBLE()`` key with its double serializer, so ``1`` arrives
    as ``1.0``, one key with ``1.0``; undertow delivers the key in that form, routed and
    keyed as a float (without ``key_type``, ``1`` and ``1.0`` are two keys)."""
    env = threads_env(parallelism)
    records = env.from_collection([(1, 1), (1.0, 10), (2, 100), (1, 1000)]).map(lambda r: r)
    keyed = records.key_by(lambda r: r[0], key_type=Types.DOUBLE())
    out = list(keyed.process(_KeyAndSum()).execute_and_collect())
    assert all(type(key) is float for key, _ in out), out
    finals = {key: max(total for k, total in out if k == key) for key, _ in out}
    assert len(out) == 4 and finals == {1.0: 1011, 2.0: 100}, out  # in any order of arrival


class _RaisesOnTimer(KeyedProcessFunction):
    """Registers an event-time timer at each record's value; the timer of key 'b' raises."""

    def process_element(self, value: tuple[str, int], ctx: Any) -> None:
        ctx.timer_service().register_event_time_timer(value[1])

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if ctx.get_current_key() == "b":
            raise ValueError("no timers for b")
        yield ctx.get_current_key()


class _RaisesOnWindow(ProcessWindowFunction):
    def process(self, key: str, context: Any, elements: Any) -> Any:
        yield sum(v for _, v in elements) // (key != "c")  # ZeroDivisionError for 'c'


class _Second(TimestampAssigner):
    def extract_timestamp(self, value: tuple[str, int], record_timestamp: int) -> int:
        return value[1]


def test_an_on_timer_that_raises_names_its_timer_and_key(env: StreamExecutionEnvironment) -> None:
    """Not only ``ValueError: no timers for b``: which timer of which key it was firing (a
    record note cannot say it: no record is being processed)."""
    stream = env.from_collection(RECORDS).key_by(lambda r: r[0]).process(_RaisesOnTimer())
    named = (
        r"ValueError: no timers for b \(in on_timer\(10\) of an event-time timer of the key 'b'\)"
    )
    with pytest.raises(JobExecutionError, match=named), stream.execute_and_collect() as out:
        list(out)


def test_a_window_function_that_raises_names_the_window_and_key(
    env: StreamExecutionEnvironment,
) -> None:
    """A window fired by the watermark names its window and key, as a record names itself."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_Second())
    stream = (
        env.from_collection(RECORDS)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(1000))
        .process(_RaisesOnWindow())
    )
    named = (
        r"ZeroDivisionError: integer division or modulo by zero "
        r"\(firing the window TimeWindow\(start=0, end=1000\) of the key 'c'\)"
    )
    with pytest.raises(JobExecutionError, match=named), stream.execute_and_collect() as out:
        list(out)


class _KeyOnTimer(KeyedProcessFunction):
    """Emits the current key as the record's and the timer's function see it."""

    def process_element(self, value: tuple[str, int], ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value[1])
        yield "element", ctx.get_current_key()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield "timer", ctx.get_current_key()


class _KeyOfWindow(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield "window", key


_ROW_KEY_TYPES = {
    "ROW": (Types.ROW([Types.STRING(), Types.INT()]), ("f0", "f1")),
    "ROW_NAMED": (Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()]), ("name", "n")),
}


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("row_type", sorted(_ROW_KEY_TYPES))
@pytest.mark.parametrize("selector_returns", ["tuple", "Row"])
def test_a_row_key_type_delivers_the_key_as_a_row_as_pyflink(
    parallelism: int, row_type: str, selector_returns: str
) -> None:
    """PyFlink writes a ``ROW`` key with its row serializer, so ``ctx.get_current_key()`` (in
    ``process_element`` and ``on_timer``) and a window's key argument are a ``Row`` with the
    type's field names (PyFlink 2.3 run for real: ``Row(name='a', n=1)``); undertow delivered
    what the selector returned. A tuple key becomes a row too (PyFlink's serializer refuses a
    tuple)."""
    key_type, names = _ROW_KEY_TYPES[row_type]
    env = threads_env(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_Second())
    records = env.from_collection([("a", 1), ("b", 2), ("a", 3)]).assign_timestamps_and_watermarks(
        strategy
    )
    make = tuple if selector_returns == "tuple" else (lambda t: Row(*t))
    keyed = records.key_by(lambda r: make((r[0], len(r[0]))), key_type=key_type)
    timers = keyed.process(_KeyOnTimer())
    windows = keyed.window(TumblingEventTimeWindows.of(1000)).process(_KeyOfWindow())
    out = list(timers.union(windows).execute_and_collect())
    a, b = ("a", 1), ("b", 1)
    expected = [(what, key) for what in ("element", "timer") for key in (a, b, a)]
    assert sorted((what, tuple(key)) for what, key in out) == sorted(
        [*expected, ("window", a), ("window", b)]
    )
    for what, key in out:
        assert isinstance(key, Row) and key.as_dict() == dict(zip(names, key)), (what, key)
