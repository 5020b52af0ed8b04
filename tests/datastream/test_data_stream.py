"""What ``DataStream``'s builders ask of the functions and sinks they are given
(:mod:`undertow.datastream.data_stream`): capabilities (``SinkLike``, ``ProcessElementLike``,
``CoMapLike``, ``CoFlatMapLike``), not base classes; what lacks one is refused when the job is
built, naming the value."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.api.function_shapes import FilterLike, FlatMapLike, InvokeLike, MapLike, ReduceLike
from undertow.common import Types
from undertow.connectors.sink import Sink
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink
from undertow.datastream.state import MapStateDescriptor


class ShapedLikeASink:
    """Not a ``Sink``: it hands its work to a discarding sink."""

    def __init__(self) -> None:
        self._inner: Sink = DiscardingSink()

    def create_writer(self, context: Any) -> Any:
        return self._inner.create_writer(context)

    def restore_writer(self, context: Any, recovered_state: list[Any]) -> Any:
        return self._inner.restore_writer(context, recovered_state)

    def create_committer(self) -> Any:
        return None


class WriterOnly:
    def create_writer(self, context: Any) -> Any:
        raise AssertionError("never asked")


class Pairwise:
    """A co-map and co-flat-map by shape alone."""

    def map1(self, value: Any) -> Any:
        return ("left", value)

    def map2(self, value: Any) -> Any:
        return ("right", value)

    def flat_map1(self, value: Any) -> Any:
        return [value]

    def flat_map2(self, value: Any) -> Any:
        return [value, value]


class LeftOnly:
    def map1(self, value: Any) -> Any:
        return value

    def flat_map1(self, value: Any) -> Any:
        return [value]


class TimedPairwise:
    """A keyed co-process function by shape alone, with a timer callback."""

    def process_element1(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(100 + value)
        yield ("left", value)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        yield ("right", value)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", timestamp, ctx.get_current_key())


class UntimedBroadcast:
    """A broadcast process function by shape alone (no ``on_timer``)."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield ("element", value)

    def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
        yield ("broadcast", value)


class Doubling:
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value * 2


def test_a_sink_is_what_has_a_sinks_methods() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).sink_to(ShapedLikeASink())
    with pytest.raises(GraphBuildError, match=r"sink_to\(\): <.*WriterOnly.*restore_writer\(\)"):
        env.from_collection([1, 2]).sink_to(WriterOnly())


def test_keyed_process_takes_anything_with_process_element() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    keyed = env.from_collection([1, 2, 3]).key_by(lambda v: v % 2)
    assert sorted(keyed.process(Doubling()).execute_and_collect()) == [2, 4, 6]
    with pytest.raises(GraphBuildError, match=r"process\(\) needs a KeyedProcessFunction"):
        keyed.process(LeftOnly())


def test_connected_streams_take_co_functions_by_their_two_methods() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    assert sorted(connected.map(Pairwise()).execute_and_collect()) == [("left", 1), ("right", 2)]
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    assert sorted(connected.flat_map(Pairwise()).execute_and_collect()) == [1, 2, 2]
    with pytest.raises(GraphBuildError, match=r"map\(\) needs a CoMapFunction"):
        connected.map(LeftOnly())  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match=r"flat_map\(\) needs a CoFlatMapFunction"):
        connected.flat_map(LeftOnly())  # type: ignore[arg-type]


def test_a_co_process_function_is_what_has_its_two_methods_and_its_timers_fire() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    connected = env.from_collection([1, 2]).connect(env.from_collection([3]))
    out = connected.key_by(lambda v: v, lambda v: v).process(TimedPairwise()).execute_and_collect()
    assert sorted(out) == [("left", 1), ("left", 2), ("right", 3), ("timer", 101, 1),
                           ("timer", 102, 2)]  # fmt: skip


def test_a_broadcast_process_function_is_what_has_its_two_methods() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    descriptor = MapStateDescriptor("rules", Types.STRING(), Types.STRING())
    rules = env.from_collection(["r"]).broadcast(descriptor)
    out = env.from_collection([1]).connect(rules).process(UntimedBroadcast())
    assert sorted(out.execute_and_collect()) == [("broadcast", "r"), ("element", 1)]


@pytest.mark.parametrize("method", ["process", "broadcast process"])
def test_a_two_input_process_without_its_methods_is_refused_naming_the_value(
    method: str,
) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    left, right = env.from_collection([1]), env.from_collection([2])
    if method == "process":
        with pytest.raises(GraphBuildError, match=r"Streams\.process\(\) needs .*Pairwise"):
            left.connect(right).process(Pairwise())
    else:
        broadcast = right.broadcast(MapStateDescriptor("rules", Types.STRING(), Types.STRING()))
        with pytest.raises(
            GraphBuildError, match=r"BroadcastConnectedStream\.process\(\) needs .*TimedPairwise"
        ):
            left.connect(broadcast).process(TimedPairwise())


class Shaped:
    """A map, flat-map, filter, reduce and sink function by shape alone."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def map(self, value: Any) -> Any:
        return value * 10

    def flat_map(self, value: Any) -> Any:
        return [value, -value]

    def filter(self, value: Any) -> bool:
        return value > 1

    def reduce(self, value1: Any, value2: Any) -> Any:
        return value1 + value2

    def invoke(self, value: Any, context: Any) -> None:
        self.seen.append(value)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda s: s.map(Shaped()), [10, 20, 30]),
        (lambda s: s.flat_map(Shaped()), [-3, -2, -1, 1, 2, 3]),
        (lambda s: s.filter(Shaped()), [2, 3]),
        (lambda s: s.key_by(lambda v: 0).reduce(Shaped()), [1, 3, 6]),
        (lambda s: s.key_by(lambda v: v).map(Shaped()), [10, 20, 30]),
    ],
)
def test_a_function_is_what_has_its_method(build: Any, expected: list[Any]) -> None:
    assert isinstance(Shaped(), (MapLike, FlatMapLike, FilterLike, ReduceLike, InvokeLike))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert sorted(build(env.from_collection([1, 2, 3])).execute_and_collect()) == expected


def test_what_has_neither_the_method_nor_a_call_is_refused_naming_the_value() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1])
    with pytest.raises(GraphBuildError, match=r"map\(\): expected a MapFunction .*got int 5"):
        stream.map(5)
    with pytest.raises(GraphBuildError, match=r"add_sink\(\): expected a SinkFunction .*Doubling"):
        stream.add_sink(Doubling())
    with pytest.raises(GraphBuildError, match=r"reduce\(\): expected a ReduceFunction .*LeftOnly"):
        stream.key_by(lambda v: v).reduce(LeftOnly())
