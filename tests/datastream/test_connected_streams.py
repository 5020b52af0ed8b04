"""Two-input streams (:mod:`undertow.datastream.connected_streams`): ``connect`` takes co-map,
co-flat-map and co-process functions, and a broadcast connection takes broadcast process
functions, by their methods (capabilities, not base classes), timers of a keyed co-process
function included; what lacks them is refused when the job is built, naming the value."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.common import Types
from undertow.core.errors import GraphBuildError
from undertow.datastream import CoMapFunction, StreamExecutionEnvironment
from undertow.datastream.connected_streams import BroadcastConnectedStream, ConnectedStreams
from undertow.datastream.state import MapStateDescriptor


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


class FirstOnly:
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


def test_connected_streams_take_co_functions_by_their_two_methods() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    assert isinstance(connected, ConnectedStreams)
    assert sorted(connected.map(Pairwise()).execute_and_collect()) == [("left", 1), ("right", 2)]
    connected = env.from_collection([1]).connect(env.from_collection([2]))
    assert sorted(connected.flat_map(Pairwise()).execute_and_collect()) == [1, 2, 2]
    with pytest.raises(GraphBuildError, match=r"map\(\) needs a CoMapFunction"):
        connected.map(FirstOnly())  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match=r"flat_map\(\) needs a CoFlatMapFunction"):
        connected.flat_map(FirstOnly())  # type: ignore[arg-type]


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
    connected = env.from_collection([1]).connect(rules)
    assert isinstance(connected, BroadcastConnectedStream)
    out = connected.process(UntimedBroadcast())
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


class _OddsAndWords(CoMapFunction):
    """Returns None for even numbers and for 'skip'."""

    def map1(self, value: int) -> int | None:
        return value if value % 2 else None

    def map2(self, value: str) -> str | None:
        return None if value == "skip" else value


@pytest.mark.parametrize("keyed", [False, True])
def test_a_co_map_result_of_none_is_dropped_as_in_pyflink(
    env: StreamExecutionEnvironment, keyed: bool
) -> None:
    """PyFlink's CoMap adapters (keyed or not) yield map1's/map2's result only if it is not
    None; undertow emitted the None as a record."""
    env.set_parallelism(1)
    connected = env.from_collection([1, 2, 3, 4]).connect(env.from_collection(["x", "skip"]))
    if keyed:
        connected = connected.key_by(lambda v: 0, lambda v: 0)
    with connected.map(_OddsAndWords()).execute_and_collect() as out:
        assert sorted(map(str, out)) == ["1", "3", "x"]
