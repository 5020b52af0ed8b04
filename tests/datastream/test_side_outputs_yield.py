"""PyFlink 2.x side outputs: ``yield output_tag, value`` from a function whose side output is
read goes to that side output (PyFlink 2.x has no ``ctx.output``); with no side output read,
PyFlink leaves such a tuple in the main stream, and so do we."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from undertow.common import Time
from undertow.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from undertow.datastream import (
    CoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from undertow.datastream.window import TimeWindow, TumblingEventTimeWindows

ODD = OutputTag("odd")
BIG = OutputTag("big")


class SplitOdd(ProcessFunction):
    def process_element(self, value: int, ctx: ProcessFunction.Context) -> Iterable[Any]:
        if value % 2:
            yield ODD, value
        else:
            yield value
        if value > 6:
            yield BIG, -value


def test_process_function_yields_to_side_outputs(env: StreamExecutionEnvironment) -> None:
    split = env.from_collection(list(range(10))).process(SplitOdd())
    main = split.map(lambda v: ("main", v))
    odd = split.get_side_output(ODD).map(lambda v: ("odd", v))
    big = split.get_side_output(BIG).map(lambda v: ("big", v))
    result = Counter(main.union(odd, big).execute_and_collect())
    assert result == Counter(
        [("main", v) for v in range(0, 10, 2)]
        + [("odd", v) for v in range(1, 10, 2)]
        + [("big", -v) for v in (7, 8, 9)]
    )


def test_unread_side_output_tuples_stay_in_the_main_stream_as_in_pyflink(
    env: StreamExecutionEnvironment,
) -> None:
    result = list(env.from_collection([1, 2, 3]).process(SplitOdd()).execute_and_collect())
    assert sorted(map(repr, result)) == sorted(map(repr, [(ODD, 1), 2, (ODD, 3)]))


class LateCounter(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        yield (ODD, (ctx.get_current_key(), value[1])) if value[1] % 2 else value


def test_keyed_process_function_yields_to_a_side_output(env: StreamExecutionEnvironment) -> None:
    records = [("a", 1), ("b", 2), ("a", 3), ("b", 4)]
    split = env.from_collection(records).key_by(lambda r: r[0]).process(LateCounter())
    assert sorted(split.get_side_output(ODD).execute_and_collect()) == [("a", 1), ("a", 3)]


class TagSecondInput(CoProcessFunction):
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any]:
        yield value

    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any]:
        yield BIG, value


def test_co_process_function_yields_to_a_side_output(env: StreamExecutionEnvironment) -> None:
    joined = env.from_collection([1, 2]).connect(env.from_collection(["x", "y"]))
    processed = joined.process(TagSecondInput())
    both = processed.map(lambda v: ("main", v)).union(
        processed.get_side_output(BIG).map(lambda v: ("side", v))
    )
    assert sorted(both.execute_and_collect()) == [
        ("main", 1), ("main", 2), ("side", "x"), ("side", "y")
    ]  # fmt: skip


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


class SumOrFlag(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(
        self, key: str, context: ProcessWindowFunction.Context[TimeWindow], elements: Iterable
    ) -> Iterable[tuple]:
        total = sum(e[1] for e in elements)
        yield (BIG, (key, total)) if total > 12 else (key, total)


def test_process_window_function_yields_to_a_side_output(
    env: StreamExecutionEnvironment,
) -> None:
    env.set_parallelism(1)
    records = [("a", 1), ("a", 2), ("b", 5), ("b", 8), ("a", 12)]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp())
    windowed = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
        .process(SumOrFlag())
    )
    both = windowed.map(lambda v: ("main", v)).union(
        windowed.get_side_output(BIG).map(lambda v: ("side", v))
    )
    assert sorted(both.execute_and_collect()) == [
        ("main", ("a", 3)), ("main", ("a", 12)), ("side", ("b", 13))
    ]  # fmt: skip
