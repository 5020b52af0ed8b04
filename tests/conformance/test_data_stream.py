"""Conformance with PyFlink's ``pyflink/datastream/tests/test_data_stream.py`` (apache/flink).

One test per PyFlink scenario, named after it, with PyFlink's expected values; the pipelines
are written anew against undertow's public API. PyFlink runs most scenarios in several test
classes (streaming and batch, process and thread mode); where the expected values differ, the
batch variant is a second test ending in ``_batch``. Results are compared the way PyFlink's
test sink reports them (see ``_datastream_support``). Skipped: scenarios that need the JVM.
Expected failures (strict): features another part of issue 11 adds.

PyFlink 2.x dropped ``TimeCharacteristic`` (event time is the default); the scenarios that set
it run here without that call.
"""

# No ``from __future__ import annotations``: as in PyFlink's module, annotations are evaluated
# when the functions are defined.
import datetime
import decimal
import json
from collections import defaultdict
from typing import Any

import pytest

from undertow.common import Row, Time, Types
from undertow.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from undertow.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    OutputTag,
    RuntimeContext,
    SlotSharingGroup,
    StreamExecutionEnvironment,
)
from undertow.datastream.data_stream import DataStream, KeyedStream
from undertow.datastream.data_stream_sink import DataStreamSink
from undertow.datastream.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ReduceFunction,
)
from undertow.datastream.output_tag import OutputTag as OutputTagOfItsModule
from undertow.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.datastream.windowed_stream import AllWindowedStream, WindowedStream

from ._datastream_support import TestSink, batch_env, env

__all__ = ["batch_env", "env"]

STRING_INT_ROW = Types.ROW([Types.STRING(), Types.INT()])
INT_STRING_ROW = Types.ROW([Types.INT(), Types.STRING()])
INT_STRING_TUPLE = Types.TUPLE([Types.INT(), Types.STRING()])
AE_RECORDS = [("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 2)]


class MyKeySelector(KeySelector):
    def get_key(self, value: Any) -> Any:
        return value[1]


class SecondColumnTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


def _timestamps() -> WatermarkStrategy:
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        SecondColumnTimestampAssigner()
    )


def _sink(stream: Any) -> TestSink:
    sink = TestSink()
    stream.add_sink(sink)
    return sink


def _plan(env: StreamExecutionEnvironment) -> Any:
    return json.loads(env.get_execution_plan())


# --- DataStreamTests ---------------------------------------------------------------------------


def test_basic_operations(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(
        [("ab", Row("a", decimal.Decimal(1))), ("bdc", Row("b", decimal.Decimal(2))),
         ("cfgs", Row("c", decimal.Decimal(3))), ("deeefg", Row("d", decimal.Decimal(4)))],
        type_info=Types.TUPLE([Types.STRING(), Types.ROW([Types.STRING(), Types.BIG_DEC()])]),
    )  # fmt: skip

    class MyMapFunction(MapFunction):
        def map(self, value: Any) -> Any:
            return Row(value[0], value[1] + 1, value[2])

    class MyFlatMapFunction(FlatMapFunction):
        def flat_map(self, value: Any) -> Any:
            if value[1] % 2 == 0:
                yield value

    class MyFilterFunction(FilterFunction):
        def filter(self, value: Any) -> bool:
            return bool(value[1] > 2)

    triple = Types.TUPLE([Types.STRING(), Types.INT(), Types.BIG_DEC()])
    sink = _sink(
        ds.map(lambda i: (i[0], len(i[0]), i[1][1]), output_type=triple)
        .flat_map(MyFlatMapFunction(), output_type=triple)
        .filter(MyFilterFunction())
        .map(MyMapFunction(), output_type=Types.ROW([Types.STRING(), Types.INT(), Types.BIG_DEC()]))
    )
    env.execute("test_basic_operations")
    assert sorted(sink.results()) == sorted(["+I[cfgs, 5, 3]", "+I[deeefg, 7, 4]"])


class _PartitionCheck(MapFunction):
    """PyFlink's Java ``PartitionCustomTestMapFunction`` in Python: a record must reach the
    subtask its key chose (``key % partitions``)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value: Any) -> Any:
        if value[1] % 5 != self.index:
            raise AssertionError(f"{value} reached subtask {self.index}, not {value[1] % 5}")
        return value


def test_partition_custom(env: StreamExecutionEnvironment) -> None:
    row = Types.ROW([Types.STRING(), Types.INT()])
    ds = env.from_collection(
        [("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 2),
         ("f", 7), ("g", 7), ("h", 8), ("i", 8), ("j", 9)],
        type_info=row,
    )  # fmt: skip
    expected_num_partitions = 5

    def my_partitioner(key: int, num_partitions: int) -> int:
        assert expected_num_partitions == num_partitions
        return key % num_partitions

    partitioned_stream = (
        ds.map(lambda x: x, output_type=row)
        .set_parallelism(4)
        .partition_custom(my_partitioner, lambda x: x[1])
    )
    sink = _sink(
        partitioned_stream.map(_PartitionCheck(), output_type=row).set_parallelism(
            expected_num_partitions
        )
    )
    env.execute("test_partition_custom")
    expected = ["+I[a, 0]", "+I[b, 0]", "+I[c, 1]", "+I[d, 1]", "+I[e, 2]",
                "+I[f, 7]", "+I[g, 7]", "+I[h, 8]", "+I[i, 8]", "+I[j, 9]"]  # fmt: skip
    assert sorted(sink.results()) == expected


def test_keyed_process_function_with_state(env: StreamExecutionEnvironment) -> None:
    env.get_config().set_auto_watermark_interval(2000)
    data_stream = env.from_collection(
        [(1, "hi", "1603708211000"), (2, "hello", "1603708224000"), (3, "hi", "1603708226000"),
         (4, "hello", "1603708289000"), (5, "hi", "1603708291000"),
         (6, "hello", "1603708293000")],
        type_info=Types.ROW([Types.INT(), Types.STRING(), Types.STRING()]),
    )  # fmt: skip

    class MyTimestampAssigner(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[2])

    class MyProcessFunction(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.value_state = runtime_context.get_state(
                ValueStateDescriptor("value_state", Types.INT())
            )
            self.list_state = runtime_context.get_list_state(
                ListStateDescriptor("list_state", Types.INT())
            )
            map_state_descriptor = MapStateDescriptor("map_state", Types.INT(), Types.STRING())
            ttl = (
                StateTtlConfig.new_builder(Time.seconds(1))
                .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
                .set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
                .disable_cleanup_in_background()
                .build()
            )
            map_state_descriptor.enable_time_to_live(ttl)
            self.map_state = runtime_context.get_map_state(map_state_descriptor)

        def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
            current_value = self.value_state.value()
            self.value_state.update(value[0])
            current_list = list(self.list_state.get())
            self.list_state.add(value[0])
            entries = dict(self.map_state.items())
            shown = "{" + ", ".join(f"{k}: {entries[k]}" for k in sorted(entries)) + "}"
            self.map_state.put(value[0], value[1])
            yield (
                f"current key: {ctx.get_current_key()}, current value state: {current_value}, "
                f"current list state: {current_list}, current map state: {shown}, "
                f"current value: {value}"
            )

        def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> None:
            pass

    sink = _sink(
        data_stream.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                MyTimestampAssigner()
            )
        )
        .key_by(lambda x: x[1], key_type=Types.STRING())
        .process(MyProcessFunction(), output_type=Types.STRING())
    )
    env.execute("test time stamp assigner with keyed process function")
    expected = [
        "current key: hi, current value state: None, current list state: [], current map "
        "state: {}, current value: Row(f0=1, f1='hi', f2='1603708211000')",
        "current key: hello, current value state: None, current list state: [], current map "
        "state: {}, current value: Row(f0=2, f1='hello', f2='1603708224000')",
        "current key: hi, current value state: 1, current list state: [1], current map state: "
        "{1: hi}, current value: Row(f0=3, f1='hi', f2='1603708226000')",
        "current key: hello, current value state: 2, current list state: [2], current map "
        "state: {2: hello}, current value: Row(f0=4, f1='hello', f2='1603708289000')",
        "current key: hi, current value state: 3, current list state: [1, 3], current map "
        "state: {1: hi, 3: hi}, current value: Row(f0=5, f1='hi', f2='1603708291000')",
        "current key: hello, current value state: 4, current list state: [2, 4], current map "
        "state: {2: hello, 4: hello}, current value: Row(f0=6, f1='hello', "
        "f2='1603708293000')",
    ]
    assert sorted(sink.results()) == sorted(expected)


HI_HELLO = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello")]
HI_HELLO_SUMS = ["(1,hi)", "(2,hello)", "(4,hi)", "(6,hello)", "(9,hi)", "(12,hello)"]


def test_reducing_state(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    data_stream = env.from_collection(HI_HELLO, type_info=INT_STRING_TUPLE)

    class MyProcessFunction(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.reducing_state = runtime_context.get_reducing_state(
                ReducingStateDescriptor("reducing_state", lambda i, i2: i + i2, Types.INT())
            )

        def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
            self.reducing_state.add(value[0])
            yield self.reducing_state.get(), value[1]

    sink = _sink(
        data_stream.key_by(lambda x: x[1], key_type=Types.STRING()).process(
            MyProcessFunction(), output_type=Types.TUPLE([Types.INT(), Types.STRING()])
        )
    )
    env.execute("test_reducing_state")
    assert sorted(sink.results()) == sorted(HI_HELLO_SUMS)


def test_aggregating_state(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    data_stream = env.from_collection(HI_HELLO, type_info=INT_STRING_TUPLE)

    class MyAggregateFunction(AggregateFunction):
        def create_accumulator(self) -> int:
            return 0

        def add(self, value: int, accumulator: int) -> int:
            return value + accumulator

        def get_result(self, accumulator: int) -> int:
            return accumulator

        def merge(self, acc_a: int, acc_b: int) -> int:
            return acc_a + acc_b

    class MyProcessFunction(KeyedProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            descriptor = AggregatingStateDescriptor(
                "aggregating_state", MyAggregateFunction(), Types.INT()
            )
            ttl = (
                StateTtlConfig.new_builder(Time.seconds(1))
                .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
                .disable_cleanup_in_background()
                .build()
            )
            descriptor.enable_time_to_live(ttl)
            self.aggregating_state = runtime_context.get_aggregating_state(descriptor)

        def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
            self.aggregating_state.add(value[0])
            yield self.aggregating_state.get(), value[1]

    sink = _sink(
        data_stream.key_by(lambda x: x[1], key_type=Types.STRING()).process(
            MyProcessFunction(), output_type=Types.TUPLE([Types.INT(), Types.STRING()])
        )
    )
    env.execute("test_aggregating_state")
    assert sorted(sink.results()) == sorted(HI_HELLO_SUMS)


class PlusMinusOneCoFlatMap(CoFlatMapFunction):
    def flat_map1(self, value: Any) -> Any:
        yield value + 1

    def flat_map2(self, value: Any) -> Any:
        yield value - 1


CO_OPERATIONS_EXPECTED = ["4", "5", "6", "7", "8", "3", "5", "7", "9", "11", "3", "5", "7", "9",
                          "11"]  # fmt: skip


def test_basic_co_operations(env: StreamExecutionEnvironment, tmp_path: Any) -> None:
    library = tmp_path / "python_file_dir"
    library.mkdir()
    (library / "test_stream_dependency_manage_lib.py").write_text(
        "def add_two(a):\n    return a + 2\n"
    )

    class MyCoMapFunction(CoMapFunction):
        def map1(self, value: Any) -> Any:
            from test_stream_dependency_manage_lib import add_two  # type: ignore[import-not-found]

            return add_two(value)

        def map2(self, value: Any) -> Any:
            return value + 1

    env.add_python_file(str(library / "test_stream_dependency_manage_lib.py"))  # type: ignore[attr-defined]
    ds_1 = env.from_collection([1, 2, 3, 4, 5])
    ds_2 = ds_1.map(lambda x: x * 2)
    sink = _sink(
        ds_1.connect(ds_2).flat_map(PlusMinusOneCoFlatMap()).connect(ds_2).map(MyCoMapFunction())
    )
    env.execute("test_basic_co_operations")
    assert sorted(sink.results(python_objects=True)) == sorted(CO_OPERATIONS_EXPECTED)


class MyKeyedCoProcessFunction(KeyedCoProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.timer_registered = False
        self.count_state = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def _count(self) -> int:
        count = (self.count_state.value() or 0) + 1
        self.count_state.update(count)
        return count

    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        if not self.timer_registered:
            ctx.timer_service().register_event_time_timer(3)
            self.timer_registered = True
        return [Row(value[0], self._count())]

    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        return [Row(value[0], self._count())]

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Any:
        return [Row("on_timer", timestamp)]


def test_keyed_co_process(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    ds1 = env.from_collection([("a", 1), ("b", 2), ("c", 3)], type_info=STRING_INT_ROW)
    ds2 = env.from_collection([("b", 2), ("c", 3), ("d", 4)], type_info=STRING_INT_ROW)
    ds1 = ds1.assign_timestamps_and_watermarks(_timestamps())
    ds2 = ds2.assign_timestamps_and_watermarks(_timestamps())
    sink = _sink(
        ds1.connect(ds2)
        .key_by(lambda x: x[0], lambda x: x[0])
        .process(MyKeyedCoProcessFunction())
        .map(lambda x: Row(x[0], x[1] + 1))
    )
    env.execute("test_keyed_co_process_function")
    expected = ["<Row('a', 2)>", "<Row('b', 2)>", "<Row('b', 3)>", "<Row('c', 2)>",
                "<Row('c', 3)>", "<Row('d', 2)>", "<Row('on_timer', 4)>"]  # fmt: skip
    assert sorted(sink.results(python_objects=True)) == sorted(expected)


def test_co_broadcast_process(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection([1, 2, 3, 4, 5], type_info=Types.INT())
    ds_broadcast = env.from_collection(
        [(0, "a"), (1, "b")], type_info=Types.TUPLE([Types.INT(), Types.STRING()])
    )

    class MyBroadcastProcessFunction(BroadcastProcessFunction):
        def __init__(self, map_state_desc: MapStateDescriptor) -> None:
            self._map_state_desc = map_state_desc
            self._cache: dict[int, list[int]] = defaultdict(list)

        def process_element(self, value: int, ctx: Any) -> Any:
            ro_broadcast_state = ctx.get_broadcast_state(self._map_state_desc)
            key = value % 2
            if ro_broadcast_state.contains(key):
                for v in self._cache.get(key) or []:
                    yield ro_broadcast_state.get(key) + str(v)
                self._cache[key].clear()
                yield ro_broadcast_state.get(key) + str(value)
            else:
                self._cache[key].append(value)

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            key = value[0]
            yield str(key) + value[1]
            ctx.get_broadcast_state(self._map_state_desc).put(key, value[1])
            for v in self._cache.get(key) or []:
                yield value[1] + str(v)
            self._cache[key].clear()

    map_state_desc = MapStateDescriptor(
        "mapping", key_type_info=Types.INT(), value_type_info=Types.STRING()
    )
    sink = _sink(
        ds.connect(ds_broadcast.broadcast(map_state_desc)).process(
            MyBroadcastProcessFunction(map_state_desc), output_type=Types.STRING()
        )
    )
    env.execute("test_co_broadcast_process")
    expected = ["0a", "0a", "1b", "1b", "a2", "a4", "b1", "b3", "b5"]
    assert sorted(sink.results()) == sorted(expected)


def test_keyed_co_broadcast_process(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(
        [(1, "1603708211000"), (2, "1603708212000"), (3, "1603708213000"),
         (4, "1603708214000")],
        type_info=INT_STRING_ROW,
    ).assign_timestamps_and_watermarks(_timestamps())  # fmt: skip
    ds_broadcast = env.from_collection(
        [(0, "1603708215000", "a"), (1, "1603708215000", "b")],
        type_info=Types.ROW([Types.INT(), Types.STRING(), Types.STRING()]),
    ).assign_timestamps_and_watermarks(_timestamps())

    def shown(s: Any, t: Any) -> str:
        return f"value: {s}, ts: {t}"

    class MyKeyedBroadcastProcessFunction(KeyedBroadcastProcessFunction):
        def __init__(self, map_state_desc: MapStateDescriptor) -> None:
            self._map_state_desc = map_state_desc

        def open(self, runtime_context: RuntimeContext) -> None:
            self._cache: dict[int, list[Any]] = defaultdict(list)

        def process_element(self, value: Any, ctx: Any) -> Any:
            ro_broadcast_state = ctx.get_broadcast_state(self._map_state_desc)
            key = value[0] % 2
            if ro_broadcast_state.contains(key):
                for v in self._cache.get(key) or []:
                    yield shown(ro_broadcast_state.get(key) + str(v[0]), v[1])
                self._cache[key].clear()
                yield shown(ro_broadcast_state.get(key) + str(value[0]), value[1])
            else:
                self._cache[key].append(value)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10000)

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            key = value[0]
            yield shown(str(key) + value[2], ctx.timestamp())
            ctx.get_broadcast_state(self._map_state_desc).put(key, value[2])
            for v in self._cache.get(key) or []:
                yield shown(value[2] + str(v[0]), v[1])
            self._cache[key].clear()

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield shown(ctx.get_current_key(), timestamp)

    map_state_desc = MapStateDescriptor(
        "mapping", key_type_info=Types.INT(), value_type_info=Types.STRING()
    )
    sink = _sink(
        ds.key_by(lambda t: t[0])
        .connect(ds_broadcast.broadcast(map_state_desc))
        .process(MyKeyedBroadcastProcessFunction(map_state_desc), output_type=Types.STRING())
    )
    env.execute("test_keyed_co_broadcast_process")
    expected = [
        "value: 0a, ts: 1603708215000", "value: 0a, ts: 1603708215000",
        "value: 1, ts: 1603708221000", "value: 1b, ts: 1603708215000",
        "value: 1b, ts: 1603708215000", "value: 2, ts: 1603708222000",
        "value: 3, ts: 1603708223000", "value: 4, ts: 1603708224000",
        "value: a2, ts: 1603708212000", "value: a4, ts: 1603708214000",
        "value: b1, ts: 1603708211000", "value: b3, ts: 1603708213000",
    ]  # fmt: skip
    assert sorted(sink.results()) == sorted(expected)


SIDE = OutputTag("side", Types.INT())
ABC = [("a", 0), ("b", 1), ("c", 2)]


class FirstMainSecondSide(ProcessFunction):
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value[0]
        yield SIDE, value[1]


def test_process_side_output(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(ABC, type_info=STRING_INT_ROW)
    ds2 = ds.process(FirstMainSecondSide(), output_type=Types.STRING())
    main_sink, side_sink = _sink(ds2), _sink(ds2.get_side_output(SIDE))
    env.execute("test_process_side_output")
    assert sorted(main_sink.results()) == ["a", "b", "c"]
    assert sorted(side_sink.results()) == ["0", "1", "2"]


def test_side_output_chained_with_upstream_operator(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(ABC, type_info=STRING_INT_ROW)
    ds2 = ds.map(lambda e: (e[0], e[1] + 1)).process(
        FirstMainSecondSide(), output_type=Types.STRING()
    )
    main_sink, side_sink = _sink(ds2), _sink(ds2.get_side_output(SIDE))
    env.execute("test_side_output_chained_with_upstream_operator")
    assert sorted(main_sink.results()) == ["a", "b", "c"]
    assert sorted(side_sink.results()) == ["1", "2", "3"]


def test_process_multiple_side_output(env: StreamExecutionEnvironment) -> None:
    tag1, tag2 = OutputTag("side1", Types.INT()), OutputTag("side2", Types.STRING())

    class MyProcessFunction(ProcessFunction):
        def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
            yield value[0]
            yield tag1, value[1]
            yield tag2, value[0] + str(value[1])

    ds2 = env.from_collection(ABC, type_info=STRING_INT_ROW).process(
        MyProcessFunction(), output_type=Types.STRING()
    )
    main_sink = _sink(ds2)
    side1_sink, side2_sink = _sink(ds2.get_side_output(tag1)), _sink(ds2.get_side_output(tag2))
    env.execute("test_process_multiple_side_output")
    assert sorted(main_sink.results()) == ["a", "b", "c"]
    assert sorted(side1_sink.results()) == ["0", "1", "2"]
    assert sorted(side2_sink.results()) == ["a0", "b1", "c2"]


def test_co_process_side_output(env: StreamExecutionEnvironment) -> None:
    class MyCoProcessFunction(CoProcessFunction):
        def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
            yield value[0]
            yield SIDE, value[1]

        def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
            yield value[1]
            yield SIDE, value[0]

    ds1 = env.from_collection(ABC, type_info=STRING_INT_ROW)
    ds2 = env.from_collection([(3, "c"), (1, "a"), (0, "d")], type_info=INT_STRING_ROW)
    ds3 = ds1.connect(ds2).process(MyCoProcessFunction(), output_type=Types.STRING())
    main_sink, side_sink = _sink(ds3), _sink(ds3.get_side_output(SIDE))
    env.execute("test_co_process_side_output")
    assert sorted(main_sink.results()) == ["a", "a", "b", "c", "c", "d"]
    assert sorted(side_sink.results()) == ["0", "0", "1", "1", "2", "3"]


def test_co_broadcast_side_output(env: StreamExecutionEnvironment) -> None:
    class MyBroadcastProcessFunction(BroadcastProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield value[0]
            yield SIDE, value[1]

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            yield value[1]
            yield SIDE, value[0]

    env.set_parallelism(2)
    ds = env.from_collection(ABC, type_info=STRING_INT_ROW)
    ds_broadcast = env.from_collection([(3, "d"), (4, "f")], type_info=INT_STRING_ROW)
    map_state_desc = MapStateDescriptor(
        "dummy", key_type_info=Types.INT(), value_type_info=Types.STRING()
    )
    ds = ds.connect(ds_broadcast.broadcast(map_state_desc)).process(
        MyBroadcastProcessFunction(), output_type=Types.STRING()
    )
    side_sink, main_sink = _sink(ds.get_side_output(SIDE)), _sink(ds)
    env.execute("test_co_broadcast_process_side_output")
    assert sorted(main_sink.results()) == ["a", "b", "c", "d", "d", "f", "f"]
    assert sorted(side_sink.results()) == ["0", "1", "2", "3", "3", "4", "4"]


class SumSoFar:
    """``open`` of the keyed side-output scenarios: a reducing state summing ints."""

    def open(self, context: RuntimeContext) -> None:
        self.reducing_state = context.get_reducing_state(
            ReducingStateDescriptor("reduce", lambda i, j: i + j, Types.INT())
        )


def test_keyed_process_side_output(env: StreamExecutionEnvironment) -> None:
    class MyKeyedProcessFunction(SumSoFar, KeyedProcessFunction):
        def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
            yield value[1]
            self.reducing_state.add(value[1])
            yield SIDE, self.reducing_state.get()

    ds = env.from_collection([("a", 1), ("b", 2), ("a", 3), ("b", 4)], type_info=STRING_INT_ROW)
    ds2 = ds.key_by(lambda e: e[0]).process(MyKeyedProcessFunction(), output_type=Types.INT())
    main_sink, side_sink = _sink(ds2), _sink(ds2.get_side_output(SIDE))
    env.execute("test_keyed_process_side_output")
    assert sorted(main_sink.results()) == ["1", "2", "3", "4"]
    assert sorted(side_sink.results()) == ["1", "2", "4", "6"]


def test_keyed_co_process_side_output(env: StreamExecutionEnvironment) -> None:
    class MyKeyedCoProcessFunction(SumSoFar, KeyedCoProcessFunction):
        def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
            yield ctx.get_current_key(), value[1]
            self.reducing_state.add(1)
            yield SIDE, self.reducing_state.get()

        def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
            yield ctx.get_current_key(), value[0]
            self.reducing_state.add(1)
            yield SIDE, self.reducing_state.get()

    ds1 = env.from_collection([("a", 1), ("b", 2), ("a", 3), ("b", 4)], type_info=STRING_INT_ROW)
    ds2 = env.from_collection([(8, "a"), (7, "b"), (6, "a"), (5, "b")], type_info=INT_STRING_ROW)
    ds3 = (
        ds1.key_by(lambda e: e[0])
        .connect(ds2.key_by(lambda e: e[1]))
        .process(MyKeyedCoProcessFunction(), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    )
    main_sink, side_sink = _sink(ds3), _sink(ds3.get_side_output(SIDE))
    env.execute("test_keyed_co_process_side_output")
    assert sorted(main_sink.results()) == sorted(
        ["(a,1)", "(b,2)", "(a,3)", "(b,4)", "(b,5)", "(a,6)", "(b,7)", "(a,8)"]
    )
    assert sorted(side_sink.results()) == ["1", "1", "2", "2", "3", "3", "4", "4"]


def test_keyed_co_broadcast_side_output(env: StreamExecutionEnvironment) -> None:
    class MyKeyedBroadcastProcessFunction(SumSoFar, KeyedBroadcastProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            self.reducing_state.add(value[1])
            yield value[0]
            yield SIDE, self.reducing_state.get()

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            yield value[1]
            yield SIDE, value[0]

    env.set_parallelism(2)
    ds = env.from_collection([("a", 0), ("b", 1), ("a", 2), ("b", 3)], type_info=STRING_INT_ROW)
    ds_broadcast = env.from_collection([(5, "c"), (6, "d")], type_info=INT_STRING_ROW)
    map_state_desc = MapStateDescriptor(
        "dummy", key_type_info=Types.INT(), value_type_info=Types.STRING()
    )
    ds = (
        ds.key_by(lambda e: e[0])
        .connect(ds_broadcast.broadcast(map_state_desc))
        .process(MyKeyedBroadcastProcessFunction(), output_type=Types.STRING())
    )
    side_sink, main_sink = _sink(ds.get_side_output(SIDE)), _sink(ds)
    env.execute("test_keyed_co_broadcast_process_side_output")
    assert sorted(main_sink.results()) == ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert sorted(side_sink.results()) == ["0", "1", "2", "4", "5", "5", "6", "6"]


class ValueAndDoubleToSide(ProcessFunction):
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value
        yield SIDE, value * 2


def test_side_output_stream_execute_and_collect(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection([1, 2, 3], Types.INT()).process(ValueAndDoubleToSide())
    assert sorted(ds.get_side_output(SIDE).execute_and_collect()) == [2, 4, 6]


def test_side_output_tag_reusing(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection([1, 2, 3], Types.INT()).process(ValueAndDoubleToSide())
    side1_sink = _sink(ds.get_side_output(SIDE))
    side2_sink = _sink(
        ds.map(lambda i: i * 2).process(ValueAndDoubleToSide()).get_side_output(SIDE)
    )
    env.execute("test_side_output_tag_reusing")
    assert sorted(side1_sink.results(), key=int) == ["2", "4", "6"]
    assert sorted(side2_sink.results(), key=int) == ["4", "8", "12"]


# --- DataStreamStreamingTests / DataStreamBatchTests -------------------------------------------


class MyReduceFunction(ReduceFunction):
    """Checks, in keyed state, that it runs in the key of the record it reduces."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("test_state", Types.INT()))

    def reduce(self, value1: Any, value2: Any) -> Any:
        state_value = self.state.value()
        state_value = 2 if state_value is None else state_value + 1
        result_value = Row(value1[0] + value2[0], value1[1])
        if result_value[0] == "ab":
            assert state_value == 2
        if result_value[0] == "cde":
            assert state_value == 3
        self.state.update(state_value)
        return result_value


REDUCE_RECORDS = [("a", 0), ("c", 1), ("d", 1), ("b", 0), ("e", 1)]


def _reduce_with_state(env: StreamExecutionEnvironment) -> list[str]:
    ds = env.from_collection(REDUCE_RECORDS, type_info=STRING_INT_ROW)
    keyed_stream = ds.key_by(MyKeySelector(), key_type=Types.INT())
    with pytest.raises(Exception):  # noqa: B017 - PyFlink expects a plain Exception
        keyed_stream.name("keyed stream")
    sink = _sink(keyed_stream.reduce(MyReduceFunction()))
    env.execute("key_by_test")
    return sorted(sink.results())


def test_reduce_with_state(env: StreamExecutionEnvironment) -> None:
    expected = ["+I[a, 0]", "+I[ab, 0]", "+I[c, 1]", "+I[cd, 1]", "+I[cde, 1]"]
    assert _reduce_with_state(env) == sorted(expected)


def test_reduce_with_state_batch(batch_env: StreamExecutionEnvironment) -> None:
    assert _reduce_with_state(batch_env) == ["+I[ab, 0]", "+I[cde, 1]"]


# --- ProcessDataStreamTests --------------------------------------------------------------------


def test_basic_co_operations_with_output_type(env: StreamExecutionEnvironment) -> None:
    class MyCoMapFunction(CoMapFunction):
        def map1(self, value: Any) -> Any:
            return value + 2

        def map2(self, value: Any) -> Any:
            return value + 1

    ds_1 = env.from_collection([1, 2, 3, 4, 5])
    ds_2 = ds_1.map(lambda x: x * 2)
    sink = _sink(
        ds_1.connect(ds_2)
        .flat_map(PlusMinusOneCoFlatMap(), output_type=Types.INT())
        .connect(ds_2)
        .map(MyCoMapFunction(), output_type=Types.INT())
    )
    env.execute("test_basic_co_operations_with_output_type")
    assert sorted(sink.results()) == sorted(CO_OPERATIONS_EXPECTED)


def test_keyed_co_map(env: StreamExecutionEnvironment) -> None:
    ds1 = env.from_collection(AE_RECORDS, type_info=STRING_INT_ROW).key_by(
        MyKeySelector(), key_type=Types.INT()
    )
    ds2 = env.from_collection(AE_RECORDS, type_info=STRING_INT_ROW)

    class AssertKeyCoMapFunction(CoMapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.pre1 = runtime_context.get_state(ValueStateDescriptor("pre1", Types.STRING()))
            self.pre2 = runtime_context.get_state(ValueStateDescriptor("pre2", Types.STRING()))

        def map1(self, value: Any) -> Any:
            if value[0] == "b":
                assert self.pre1.value() == "a"
            if value[0] == "d":
                assert self.pre1.value() == "c"
            self.pre1.update(value[0])
            return value

        def map2(self, value: Any) -> Any:
            if value[0] == "b":
                assert self.pre2.value() == "a"
            if value[0] == "d":
                assert self.pre2.value() == "c"
            self.pre2.update(value[0])
            return value

    sink = _sink(
        ds1.connect(ds2)
        .key_by(MyKeySelector(), MyKeySelector(), key_type=Types.INT())
        .map(AssertKeyCoMapFunction())
        .map(lambda x: (x[0], x[1] + 1))
    )
    env.execute("test_keyed_co_map")
    expected = ["('e', 3)", "('a', 1)", "('b', 1)", "('c', 2)", "('d', 2)", "('e', 3)",
                "('a', 1)", "('b', 1)", "('c', 2)", "('d', 2)"]  # fmt: skip
    assert sorted(sink.results(python_objects=True)) == sorted(expected)


class MyRichCoFlatMapFunction(CoFlatMapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.map_state = runtime_context.get_map_state(
            MapStateDescriptor("map", Types.STRING(), Types.BOOLEAN())
        )

    def flat_map1(self, value: Any) -> Any:
        yield str(value[0] + 1)
        yield str(value[0] + 1)

    def flat_map2(self, value: Any) -> Any:
        if value[0] not in self.map_state:
            self.map_state[value[0]] = True
            yield value[0]


def test_keyed_co_flat_map(env: StreamExecutionEnvironment) -> None:
    ds1 = env.from_collection([(1, 1), (2, 2), (3, 3)], type_info=Types.ROW([Types.INT()] * 2))
    ds2 = env.from_collection(
        [("a", "a"), ("b", "b"), ("c", "c"), ("a", "a")],
        type_info=Types.ROW([Types.STRING(), Types.STRING()]),
    )
    sink = _sink(
        ds1.connect(ds2)
        .key_by(lambda x: 1, lambda x: 1)
        .flat_map(MyRichCoFlatMapFunction(), output_type=Types.STRING())
        .filter(lambda x: x != "4")
    )
    env.execute("test_keyed_co_flat_map")
    assert sorted(sink.results()) == sorted(["2", "2", "3", "3", "a", "b", "c"])


def test_keyed_map(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(
        [("a", 0), ("b", 1), ("c", 0), ("d", 1), ("e", 2)], type_info=STRING_INT_ROW
    )
    keyed_stream = ds.key_by(MyKeySelector(), key_type=Types.INT())
    with pytest.raises(Exception):  # noqa: B017 - PyFlink expects a plain Exception
        keyed_stream.name("keyed stream")

    class AssertKeyMapFunction(MapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.state = runtime_context.get_state(ValueStateDescriptor("test_state", Types.INT()))

        def _next_state_value(self) -> int:
            state_value = self.state.value()
            return 1 if state_value is None else state_value + 1

        def map(self, value: Any) -> Any:
            expected = {"b": 1, "c": 1, "d": 2}
            if value[0] in expected:
                state_value = self._next_state_value()
                assert state_value == expected[value[0]]
                self.state.update(state_value)
            return value

    sink = _sink(keyed_stream.map(AssertKeyMapFunction()).map(lambda x: (x[0], x[1] + 1)))
    env.execute("test_keyed_map")
    expected = ["('e', 3)", "('a', 1)", "('b', 2)", "('c', 1)", "('d', 2)"]
    assert sorted(sink.results(python_objects=True)) == sorted(expected)


class CountsAndRemembers:
    """Keyed state counting records of the key; ``pre`` is the previous record's name."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.pre: Any = None
        self.state = runtime_context.get_state(ValueStateDescriptor("test_state", Types.INT()))

    def check(self, value: Any) -> None:
        state_value = self.state.value()
        state_value = 1 if state_value is None else state_value + 1
        if value[0] == "b":
            assert self.pre == "a"
            assert state_value == 2
        if value[0] == "d":
            assert self.pre == "c"
            assert state_value == 2
        if value[0] == "e":
            assert state_value == 1
        self.pre = value[0]
        self.state.update(state_value)


def test_keyed_flat_map(env: StreamExecutionEnvironment) -> None:
    keyed_stream = env.from_collection(AE_RECORDS, type_info=STRING_INT_ROW).key_by(
        MyKeySelector(), key_type=Types.INT()
    )
    with pytest.raises(Exception):  # noqa: B017 - PyFlink expects a plain Exception
        keyed_stream.name("keyed stream")

    class AssertKeyFlatMapFunction(CountsAndRemembers, FlatMapFunction):
        def flat_map(self, value: Any) -> Any:
            self.check(value)
            yield value

    sink = _sink(keyed_stream.flat_map(AssertKeyFlatMapFunction()).map(
        lambda x: (x[0], x[1] + 1)))  # fmt: skip
    env.execute("test_keyed_flat_map")
    expected = ["('e', 3)", "('a', 1)", "('b', 1)", "('c', 2)", "('d', 2)"]
    assert sorted(sink.results(python_objects=True)) == sorted(expected)


def test_keyed_filter(env: StreamExecutionEnvironment) -> None:
    keyed_stream = env.from_collection(AE_RECORDS, type_info=STRING_INT_ROW).key_by(MyKeySelector())
    with pytest.raises(Exception):  # noqa: B017 - PyFlink expects a plain Exception
        keyed_stream.name("keyed stream")

    class AssertKeyFilterFunction(CountsAndRemembers, FilterFunction):
        def filter(self, value: Any) -> bool:
            self.check(value)
            return value[0] not in ("b", "d")

    sink = _sink(keyed_stream.filter(AssertKeyFilterFunction()).filter(lambda x: x[1] > 0))
    env.execute("key_by_test")
    assert sorted(sink.results()) == ["+I[c, 1]", "+I[e, 2]"]


def test_multi_key_by(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(AE_RECORDS, type_info=STRING_INT_ROW)
    sink = _sink(ds.key_by(MyKeySelector(), key_type=Types.INT()).key_by(lambda x: x[0]))
    env.execute("test multi key by")
    expected = ["+I[d, 1]", "+I[c, 1]", "+I[a, 0]", "+I[b, 0]", "+I[e, 2]"]
    assert sorted(sink.results()) == sorted(expected)


def test_collection_type_info(env: StreamExecutionEnvironment) -> None:
    row_type = Types.ROW([
        Types.INT(), Types.PRIMITIVE_ARRAY(Types.FLOAT()), Types.BASIC_ARRAY(Types.STRING()),
        Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP(), Types.LIST(Types.INT()),
    ])  # fmt: skip
    ds = env.from_collection(
        [(1, [1.1, 1.2, 1.30], [None, "hi", "flink"], datetime.date(2021, 1, 9),
          datetime.time(12, 0, 0), datetime.datetime(2021, 1, 9, 12, 0, 0, 11000), [1, 2, 3])],
        type_info=row_type,
    )  # fmt: skip
    sink = _sink(ds.map(lambda x: x, output_type=row_type))
    env.execute("test_collection_type_info")
    assert sink.results() == [
        "+I[1, [1.1, 1.2, 1.3], [null, hi, flink], 2021-01-09, 12:00:00, "
        "2021-01-09 12:00:00.011, [1, 2, 3]]"
    ]


def test_process_function(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    env.get_config().set_auto_watermark_interval(2000)
    data_stream = env.from_collection(
        [(1, "1603708211000"), (2, "1603708224000"), (3, "1603708226000"),
         (4, "1603708289000")],
        type_info=INT_STRING_ROW,
    )  # fmt: skip

    class MyProcessFunction(ProcessFunction):
        def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
            yield f"current timestamp: {ctx.timestamp()}, current_value: {value}"

    sink = _sink(
        data_stream.assign_timestamps_and_watermarks(_timestamps()).process(
            MyProcessFunction(), output_type=Types.STRING()
        )
    )
    env.execute("test process function")
    expected = [
        f"current timestamp: {ts}, current_value: Row(f0={i}, f1='{ts}')"
        for i, ts in [(1, 1603708211000), (2, 1603708224000), (3, 1603708226000),
                      (4, 1603708289000)]
    ]  # fmt: skip
    assert sorted(sink.results()) == sorted(expected)


def test_keyed_sum(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    ds = env.from_collection(
        [(1, 1), (1, 2), (1, 3), (2, 5), (2, 1)],
        type_info=Types.ROW_NAMED(["v1", "v2"], [Types.INT(), Types.INT()]),
    )
    sink = _sink(
        ds.key_by(lambda x: x[0])
        .sum("v2")
        .key_by(lambda x: x[0])
        .sum(1)
        .map(lambda x: (x[1], x[0]), output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda x: x[1])
        .sum()
    )
    env.execute("key_by_sum_test_stream")
    assert sorted(sink.results()) == sorted(["(1,1)", "(5,1)", "(15,1)", "(5,2)", "(16,2)"])


def test_keyed_sum_batch(batch_env: StreamExecutionEnvironment) -> None:
    batch_env.set_parallelism(1)
    ds = batch_env.from_collection(
        [(1, 1), (1, 2), (1, 3), (5, 1), (5, 5)],
        type_info=Types.ROW_NAMED(["v1", "v2"], [Types.INT(), Types.INT()]),
    )

    def flat_map_func1(data: Any) -> Any:
        for i in data:
            yield 12, i

    def flat_map_func2(data: Any) -> Any:
        yield from data

    sink = _sink(
        ds.key_by(lambda x: x[0])
        .sum("v2")
        .key_by(lambda x: x[1])
        .sum()
        .flat_map(flat_map_func1, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda x: x[0])
        .sum(1)
        .flat_map(flat_map_func2, output_type=Types.INT())
        .key_by(lambda x: x)
        .sum()
    )
    batch_env.execute("key_by_sum_test_batch")
    assert sink.results() == ["24"]


def test_keyed_min_by_and_max(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    ds = env.from_collection(
        [("a", 3, 0), ("a", 1, 1), ("b", 5, 0), ("b", 3, 1)],
        type_info=Types.ROW_NAMED(["v1", "v2", "v3"], [Types.STRING(), Types.INT(),
                                                       Types.INT()]),
    )  # fmt: skip
    sink = _sink(
        ds.key_by(lambda x: x[0])
        .min_by("v2")
        .map(lambda x: (x[0], x[1], x[2]),
             output_type=Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]))
        .key_by(lambda x: x[2])
        .max(1)
        .key_by(lambda x: x[2])
        .min()
        .map(lambda x: x[0], output_type=Types.STRING())
        .key_by(lambda x: x)
        .max_by()
    )  # fmt: skip
    env.execute("key_by_min_by_max_by_test_stream")
    assert sink.results() == ["a", "a", "a", "a"]


def test_keyed_min_by_and_max_batch(batch_env: StreamExecutionEnvironment) -> None:
    batch_env.set_parallelism(1)
    ds = batch_env.from_collection(
        [(1, "9", 0), (1, "5", 1), (1, "6", 2), (5, "5", 0), (5, "3", 1)],
        type_info=Types.ROW_NAMED(["v1", "v2", "v3"], [Types.INT(), Types.STRING(),
                                                       Types.INT()]),
    )  # fmt: skip

    def flat_map_func1(data: Any) -> Any:
        for i in data:
            yield int(i), 1

    def flat_map_func2(data: Any) -> Any:
        yield from data

    sink = _sink(
        ds.key_by(lambda x: x[0])
        .min_by("v2")
        .map(lambda x: (x[0], x[1], x[2]),
             output_type=Types.TUPLE([Types.INT(), Types.STRING(), Types.INT()]))
        .key_by(lambda x: x[2])
        .max(0)
        .flat_map(flat_map_func1, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda x: [1])
        .min_by()
        .flat_map(flat_map_func2, output_type=Types.INT())
        .key_by(lambda x: x)
        .max_by()
    )  # fmt: skip
    batch_env.execute("key_by_min_by_max_by_test_batch")
    assert sink.results() == ["1"]


def test_metrics(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(
        [("ab", "a", decimal.Decimal(1)), ("bdc", "a", decimal.Decimal(2)),
         ("cfgs", "a", decimal.Decimal(3)), ("deeefg", "a", decimal.Decimal(4))],
        type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.BIG_DEC()]),
    )  # fmt: skip

    class MyMapFunction(MapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            group = runtime_context.get_metrics_group()
            self.counter, self.counter_value = group.counter("my_counter"), 0
            self.meter, self.meter_value = group.meter("my_meter", 1), 0
            self.value_to_expose = 0
            group.gauge("my_gauge", lambda: self.value_to_expose)
            self.distribution = group.distribution("my_distribution")

        def map(self, value: Any) -> Any:
            self.counter.inc()
            self.counter_value += 1
            assert self.counter.get_count() == self.counter_value
            self.meter.mark_event(1)
            self.meter_value += 1
            assert self.meter.get_count() == self.meter_value
            self.value_to_expose += 1
            self.distribution.update(int(value[2]))
            return Row(value[0], len(value[0]), value[2])

    sink = _sink(
        ds.key_by(lambda value: value[1]).map(
            MyMapFunction(), output_type=Types.ROW([Types.STRING(), Types.INT(), Types.BIG_DEC()])
        )
    )
    env.execute("test_basic_operations")
    expected = ["+I[ab, 2, 1]", "+I[bdc, 3, 2]", "+I[cfgs, 4, 3]", "+I[deeefg, 6, 4]"]
    assert sorted(sink.results()) == sorted(expected)


# --- CommonDataStreamTests ---------------------------------------------------------------------

THREE_TRIPLES = [(1, "Hi", "Hello"), (2, "Hello", "Hi")]


def test_data_stream_name(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(THREE_TRIPLES)
    ds.name("test_name")
    assert ds.get_name() == "test_name"


def test_set_parallelism(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(THREE_TRIPLES).map(lambda x: x)
    ds.set_parallelism(3).add_sink(TestSink())
    assert _plan(env)["nodes"][1]["parallelism"] == 3


def test_set_max_parallelism(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(8)
    ds = env.from_collection(THREE_TRIPLES).map(lambda x: x)
    ds.set_parallelism(4).add_sink(TestSink())
    assert _plan(env)["nodes"][1]["parallelism"] == 4


def test_force_non_parallel(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(8)
    ds = env.from_collection(THREE_TRIPLES)
    ds.force_non_parallel().add_sink(TestSink())
    assert _plan(env)["nodes"][0]["parallelism"] == 1


def test_union(env: StreamExecutionEnvironment) -> None:
    ds_1, ds_2, ds_3 = (env.from_collection(c) for c in ([1, 2, 3], [4, 5, 6], [7, 8, 9]))
    ds_3.union(ds_1, ds_2).map(lambda x: x + 1).add_sink(TestSink())
    plan = _plan(env)
    source_ids = sorted(n["id"] for n in plan["nodes"] if n["pact"] == "Data Source")
    predecessors = sorted(
        p["id"] for n in plan["nodes"] if n["pact"] == "Operator" for p in n["predecessors"]
    )
    assert source_ids == predecessors


def test_keyed_stream_union(env: StreamExecutionEnvironment) -> None:
    ds_1, ds_2 = env.from_collection([1, 2, 3]), env.from_collection([4, 5, 6])
    union = ds_1.key_by(lambda x: x).union(ds_2.key_by(lambda x: x))
    sink = _sink(union)
    plan = _plan(env)
    values = sorted(n["id"] for n in plan["nodes"] if n["type"] == "_keyed_stream_values_operator")
    [node] = [n for n in plan["nodes"] if n["pact"] == "Data Sink"]
    assert sorted(p["id"] for p in node["predecessors"]) == values and len(values) == 2
    # as in PyFlink's plan: each values operator reads its input's key partition
    by_id = {n["id"]: n for n in plan["nodes"]}
    assert [p["ship_strategy"] for v in values for p in by_id[v]["predecessors"]] == ["HASH"] * 2
    env.execute("keyed stream union")
    assert sorted(sink.results()) == ["1", "2", "3", "4", "5", "6"]


def test_project(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(
        [[1, 2, 3, 4], [5, 6, 7, 8]],
        type_info=Types.TUPLE([Types.INT(), Types.INT(), Types.INT(), Types.INT()]),
    )
    ds.project(1, 3).map(lambda x: (x[0], x[1] + 1)).add_sink(TestSink())
    assert _plan(env)["nodes"][1]["type"] == "Projection"


def _ship_strategy_into_second_node(env: StreamExecutionEnvironment, partitioned: Any) -> Any:
    partitioned.map(lambda x: x + 1).set_parallelism(3).add_sink(TestSink())
    return _plan(env)["nodes"][1]["predecessors"][0]["ship_strategy"]


def test_broadcast(env: StreamExecutionEnvironment) -> None:
    stream = env.from_collection([1, 2, 3]).broadcast()
    assert _ship_strategy_into_second_node(env, stream) == "BROADCAST"


def test_rebalance(env: StreamExecutionEnvironment) -> None:
    stream = env.from_collection([1, 2, 3]).rebalance()
    assert _ship_strategy_into_second_node(env, stream) == "REBALANCE"


def test_rescale(env: StreamExecutionEnvironment) -> None:
    stream = env.from_collection([1, 2, 3]).rescale()
    assert _ship_strategy_into_second_node(env, stream) == "RESCALE"


def test_shuffle(env: StreamExecutionEnvironment) -> None:
    stream = env.from_collection([1, 2, 3]).shuffle()
    assert _ship_strategy_into_second_node(env, stream) == "SHUFFLE"


def test_keyed_stream_partitioning(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection([("ab", 1), ("bdc", 2), ("cfgs", 3), ("deeefg", 4)])
    keyed_stream = ds.key_by(lambda x: x[1])
    for repartition in (keyed_stream.shuffle, keyed_stream.rebalance, keyed_stream.rescale,
                        keyed_stream.broadcast, keyed_stream.forward):  # fmt: skip
        with pytest.raises(Exception, match="Cannot override partitioning for KeyedStream"):
            repartition()


def test_slot_sharing_group(env: StreamExecutionEnvironment) -> None:
    # PyFlink reads the groups from Java's StreamGraph; undertow's stream graph holds them.
    source_operator_name, map_operator_name = "collection source", "map_operator"
    ds_1 = env.from_collection([1, 2, 3]).name(source_operator_name)
    ds_1.slot_sharing_group(SlotSharingGroup.builder("slot_sharing_group_1").build()).map(
        lambda x: x + 1
    ).set_parallelism(3).name(map_operator_name).slot_sharing_group(
        "slot_sharing_group_2"
    ).add_sink(TestSink())
    groups = {n.name: n.slot_sharing_group for n in env.get_stream_graph().nodes.values()}
    assert groups[source_operator_name] == "slot_sharing_group_1"
    assert groups[map_operator_name] == "slot_sharing_group_2"


def test_chaining_strategy(env: StreamExecutionEnvironment) -> None:
    # PyFlink asks Java's StreamingJobGraphGenerator.isChainable about map_operator_1's edges;
    # undertow's job graph answers with its chains (one vertex per chain).
    def chained_with_map_1(configure: Any) -> tuple[bool, bool]:
        ds = env.from_collection([1, 2, 3])
        map_1 = ds.map(lambda x: x).set_parallelism(2).name("map_operator_0")
        map_1 = configure(map_1.map(lambda x: x).set_parallelism(2).name("map_operator_1"))
        map_1.map(lambda x: x).set_parallelism(2).name("map_operator_2").add_sink(TestSink())
        graph = env._job_graph("chaining")
        env._sinks.clear()
        chain_of = {op.name: v.id for v in graph.vertices for op in v.operators}
        return (
            chain_of["map_operator_0"] == chain_of["map_operator_1"],
            chain_of["map_operator_1"] == chain_of["map_operator_2"],
        )

    assert chained_with_map_1(lambda s: s) == (True, True)
    assert chained_with_map_1(lambda s: s.start_new_chain()) == (False, True)
    assert chained_with_map_1(lambda s: s.disable_chaining()) == (False, False)


def test_execute_and_collect(env: StreamExecutionEnvironment) -> None:
    test_data = ["pyflink", "datastream", "execute", "collect"]
    ds = env.from_collection(test_data)
    assert list(ds.execute_and_collect(limit=3)) == test_data[:3]

    keyed_data = [("pyflink", 1), ("datastream", 2), ("pyflink", 1), ("collect", 2)]
    ds = env.from_collection(keyed_data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    with ds.key_by(lambda i: i[0], Types.STRING()).execute_and_collect() as results:
        actual = list(results)
    expected = [Row(f0=name, f1=(name, n)) for name, n in keyed_data]
    assert actual == expected  # input order, as PyFlink's

    all_types = [
        (1, None, 1, True, 32767, -2147483648, 1.23, 1.98932, bytearray(b"flink"), "pyflink",
         datetime.date(2014, 9, 13), datetime.time(hour=12, minute=0, second=0,
                                                   microsecond=123000),
         datetime.datetime(2018, 3, 11, 3, 0, 0, 123000), [1, 2, 3],
         [["pyflink", "datastream"], ["execute", "collect"]],
         decimal.Decimal("1000000000000000000.05"),
         decimal.Decimal("1000000000000000000.05999999999999999899999999999")),
        (2, None, 2, True, 23878, 652516352, 9.87, 2.98936, bytearray(b"flink"), "pyflink",
         datetime.date(2015, 10, 14), datetime.time(hour=11, minute=2, second=2,
                                                    microsecond=234500),
         datetime.datetime(2020, 4, 15, 8, 2, 6, 235000), [2, 4, 6],
         [["pyflink", "datastream"], ["execute", "collect"]],
         decimal.Decimal("2000000000000000000.74"),
         decimal.Decimal("2000000000000000000.06111111111111111111111111111")),
    ]  # fmt: skip
    with env.from_collection(all_types).execute_and_collect() as results:
        assert sorted(results, key=str) == sorted(all_types, key=str)

    arrays = [[1, 2, 3], [4, 5]]
    ds = env.from_collection(arrays, type_info=Types.PRIMITIVE_ARRAY(Types.INT()))
    with ds.execute_and_collect() as results:
        assert sorted(results) == sorted(arrays)

    object_arrays = [(["test", "test"], [0.0, 0.0]), ([None], [0.0, 0.0])]
    ds = env.from_collection(
        object_arrays,
        type_info=Types.TUPLE([Types.OBJECT_ARRAY(Types.STRING()),
                               Types.OBJECT_ARRAY(Types.DOUBLE())]),
    )  # fmt: skip
    with ds.execute_and_collect() as results:
        assert sorted(results, key=str) == sorted(object_arrays, key=str)


def test_function_with_error(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection([("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 1)],
                             type_info=STRING_INT_ROW)  # fmt: skip
    keyed_stream = ds.key_by(MyKeySelector(), key_type=Types.INT())

    def flat_map_func(x: Any) -> Any:
        raise ValueError("flat_map_func error")
        yield x

    # PyFlink raises the JVM's Py4JJavaError; the job's failure must carry the cause's message
    with pytest.raises(Exception, match="flat_map_func error"):
        keyed_stream.flat_map(flat_map_func).print()
        env.execute("test_process_function_with_error")


class Data:
    def __init__(self, name: str, num: int) -> None:
        self.name = name
        self.num = num


def test_data_with_custom_class(env: StreamExecutionEnvironment) -> None:
    ds = env.from_collection(ABC, type_info=STRING_INT_ROW)
    sink = _sink(ds.map(lambda a: Data(a[0], a[1])).flat_map(lambda data: [data.name] * data.num))
    env.execute("test_data_with_custom_class")
    assert sorted(sink.results(python_objects=True)) == ["b", "c", "c"]


def test_each_step_returns_pyflinks_class_for_it(env: StreamExecutionEnvironment) -> None:
    source = env.from_collection([1, 2, 3])
    keyed = source.key_by(lambda x: x % 2)
    assert type(source) is DataStream and type(keyed) is KeyedStream
    assert type(keyed.count_window(2)) is WindowedStream
    assert type(source.count_window_all(2)) is AllWindowedStream
    assert type(source.print()) is DataStreamSink
    assert OutputTagOfItsModule is OutputTag  # one class, re-exported by the package
