"""What ``DataStream``'s builders ask of the functions and sinks they are given
(:mod:`undertow.datastream.data_stream`): capabilities (``SinkLike``, ``ProcessElementLike``,
``CoMapLike``, ``CoFlatMapLike``), not base classes; what lacks one is refused when the job is
built, naming the value."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.connectors.sink import Sink
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink


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
