"""The settings of a stream's last operator (:mod:`undertow.datastream.operator_settings`):
recorded on its transformation, bad values refused when set naming the operator and the
value; a keyed stream refuses them (its last transformation is the key partitioning)."""

from __future__ import annotations

import pytest

from undertow.common import Types
from undertow.core.errors import GraphBuildError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.operator_settings import OperatorSettings
from undertow.graph.transformations import ChainingStrategy


def test_settings_are_recorded_on_the_last_operator() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1]).map(lambda v: v)
    assert isinstance(stream, OperatorSettings)
    same = (
        stream.name("m").uid("u").set_description("d").set_max_parallelism(8)
        .set_parallelism(3).set_buffer_timeout(5).disable_chaining().slot_sharing_group("g")
    )  # fmt: skip
    assert same is stream
    t = stream._transformation
    assert (t.name, t.uid, t.description) == ("m", "u", "d")
    assert (t.parallelism, t.parallelism_set, t.max_parallelism) == (3, True, 8)
    assert (t.buffer_timeout, t.chaining, t.slot_sharing_group) == (5, ChainingStrategy.NEVER, "g")
    assert stream.get_name() == "m" and stream.get_execution_environment() is env


@pytest.mark.parametrize(
    ("configure", "problem"),
    [
        (lambda s: s.set_parallelism(0),
         "operator 'Map': parallelism must be an int >= 1, got 0"),
        (lambda s: s.set_parallelism("2"),
         "operator 'Map': parallelism must be an int >= 1, got '2'"),
        (lambda s: s.set_max_parallelism(2).set_parallelism(3),
         "operator 'Map': parallelism 3 is larger than its max parallelism 2"),
        (lambda s: s.set_parallelism(4).set_max_parallelism(2),
         "operator 'Map': max parallelism 2 is below its parallelism 4"),
        (lambda s: s.set_max_parallelism(0), "operator 'Map': max parallelism must be >= 1"),
    ],
)  # fmt: skip
def test_a_bad_parallelism_is_refused_naming_the_operator(configure: object, problem: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1]).map(lambda v: v)
    with pytest.raises(GraphBuildError) as info:
        configure(stream)  # type: ignore[operator]
    assert str(info.value) == problem


def test_the_type_of_a_partition_or_a_union_is_its_first_inputs() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    typed = env.from_collection([1], type_info=Types.INT())
    assert typed.rebalance().get_type() == Types.INT()
    assert typed.union(env.from_collection([2], type_info=Types.INT())).get_type() == Types.INT()
    assert env.from_collection([1]).union(env.from_collection([2])).get_type() is None
    assert env.from_collection([1]).map(lambda v: v).get_type() is None


def test_a_keyed_stream_refuses_the_settings() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    keyed = env.from_collection([1]).key_by(lambda v: v)
    with pytest.raises(GraphBuildError, match="not allowed on a KeyedStream"):
        keyed.set_parallelism(2)
    with pytest.raises(GraphBuildError, match="Disable chaining for KeyedStream is not supported"):
        keyed.disable_chaining()
