"""What ``DataStream``'s builders ask of the functions and sinks they are given
(:mod:`undertow.datastream.data_stream`): capabilities (``SinkLike``, ``ProcessElementLike``,
``MapLike`` ...), not base classes; what lacks one is refused when the job is built, naming
the value. Two-input streams: ``test_connected_streams``."""

from __future__ import annotations

from typing import Any

import pytest
from tests.datastream.environments import threads_env

from undertow.api.function_shapes import FilterLike, FlatMapLike, InvokeLike, MapLike, ReduceLike
from undertow.common import Types
from undertow.connectors.sink import Sink
from undertow.core.errors import GraphBuildError, JobExecutionError
from undertow.datastream import (
    CoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
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
    with pytest.raises(
        GraphBuildError, match=r"process\(\) needs a KeyedProcessFunction, got LeftOnly <"
    ):
        keyed.process(LeftOnly())


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


def test_a_side_output_id_requested_with_another_type_is_refused() -> None:
    """Flink's getSideOutput refuses it: both streams would carry the same records, one of them
    under a type they do not have. The same tag twice, or the id on another operator, is fine."""
    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_collection([1, 2])
    first, second = numbers.map(lambda n: n), numbers.map(lambda n: n)
    first.get_side_output(OutputTag("late", Types.INT()))
    first.get_side_output(OutputTag("late", Types.INT()))
    second.get_side_output(OutputTag("late", Types.STRING()))
    with pytest.raises(
        GraphBuildError,
        match=r"id 'late' of operator 'Map' was already requested"
        r" with Integer, now with String; side output ids must be unique",
    ):
        first.get_side_output(OutputTag("late", Types.STRING()))
    with pytest.raises(GraphBuildError, match=r"now with no type \(pickled objects\)"):
        first.get_side_output(OutputTag("late"))


@pytest.mark.parametrize("keyed", [False, True])
def test_a_flat_map_function_that_returns_none_fails_the_job(keyed: bool) -> None:
    """PyFlink iterates what a flat_map function returns (``yield from``): ``None`` fails the
    job there ("'NoneType' object is not iterable"); undertow skipped it silently. Now the job
    fails naming the operator, its subtask and the record."""
    env = threads_env(2)
    stream: Any = env.from_collection([1, 2, 3, 4], type_info=Types.INT())
    if keyed:
        stream = stream.key_by(lambda n: n % 2)
    evens_only = stream.flat_map(lambda n: [n] if n % 2 == 0 else None)
    with pytest.raises(JobExecutionError, match=(
        r"job failed: operator 'FlatMap' \(subtask [12]/2 of '[^']*'\) raised TypeError: "
        r"operator 'FlatMap' \(subtask [12]/2\): the flat_map\(\) function returned None, which "
        r"is not iterable: .* \(on the record [13]\)"
    )):  # fmt: skip
        list(evens_only.execute_and_collect())


class _Stamp(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield ctx.timestamp()


class _KeyedStamp(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield ctx.timestamp()


class _CoStamp(CoProcessFunction):
    def process_element1(self, value: Any, ctx: Any) -> Any:
        yield ctx.timestamp()

    def process_element2(self, value: Any, ctx: Any) -> Any:
        yield ctx.timestamp()


def test_a_process_functions_timestamp_of_a_record_without_one_is_long_min_value() -> None:
    """PyFlink's Java operator hands a record without a timestamp to Python with
    ``Long.MIN_VALUE``, so ``ctx.timestamp()`` is ``-9223372036854775808`` there (PyFlink 2.3
    run for real), not ``None``: ``ctx.timestamp() + 10`` works in a ported job."""
    env = threads_env(1)
    words = env.from_collection(["a", "b"], type_info=Types.STRING())
    stamps = words.process(_Stamp()).union(
        words.key_by(lambda w: w).process(_KeyedStamp()),
        words.connect(words).process(_CoStamp()),
    )
    assert list(stamps.execute_and_collect()) == [-(2**63)] * 8
