"""PyFlink's KeyedStream contract: collected as ``Row(f0=key, f1=record)``, partitioning cannot
be overridden, and ``project`` on tuple streams."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest

from undertow.common import Row, Types
from undertow.core.errors import GraphBuildError
from undertow.datastream import KeyedStream, StreamExecutionEnvironment
from undertow.state.backend import PairAggregation


def test_collecting_a_keyed_stream_yields_key_and_record_rows(
    env: StreamExecutionEnvironment,
) -> None:
    records = [("pyflink", 1), ("datastream", 2), ("pyflink", 1), ("collect", 2)]
    keyed = env.from_collection(records, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    with keyed.key_by(lambda r: r[0], Types.STRING()).execute_and_collect() as results:
        collected = list(results)
    expected = [Row(f0=name, f1=(name, n)) for name, n in records]
    assert collected == expected  # in input order (one source subtask), as in PyFlink
    assert all(isinstance(row, Row) and row.f0 == row.f1[0] for row in collected)


REFUSED: list[tuple[str, Callable[[KeyedStream], Any]]] = [
    ("shuffle", lambda ks: ks.shuffle()),
    ("rebalance", lambda ks: ks.rebalance()),
    ("rescale", lambda ks: ks.rescale()),
    ("forward", lambda ks: ks.forward()),
    ("broadcast", lambda ks: ks.broadcast()),
    ("partition_custom", lambda ks: ks.partition_custom(lambda k, n: 0, lambda r: r)),
    ("get_name", lambda ks: ks.get_name()),
    ("set_max_parallelism", lambda ks: ks.set_max_parallelism(4)),
    ("force_non_parallel", lambda ks: ks.force_non_parallel()),
    ("set_buffer_timeout", lambda ks: ks.set_buffer_timeout(5)),
    ("start_new_chain", lambda ks: ks.start_new_chain()),
    ("disable_chaining", lambda ks: ks.disable_chaining()),
    ("slot_sharing_group", lambda ks: ks.slot_sharing_group("g")),
]


@pytest.mark.parametrize("call", [c for _, c in REFUSED], ids=[n for n, _ in REFUSED])
def test_keyed_stream_refuses_what_pyflink_refuses(
    env: StreamExecutionEnvironment, call: Callable[[KeyedStream], Any]
) -> None:
    keyed = env.from_collection([("ab", 1), ("bdc", 2)]).key_by(lambda r: r[1])
    with pytest.raises(GraphBuildError):
        call(keyed)


def test_keyed_stream_partitioning_message_is_pyflinks(env: StreamExecutionEnvironment) -> None:
    keyed = env.from_collection([("ab", 1)]).key_by(lambda r: r[1])
    with pytest.raises(Exception, match="Cannot override partitioning for KeyedStream"):
        keyed.rebalance()


def test_project_keeps_the_chosen_fields_in_order(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    four_ints = Types.TUPLE([Types.INT(), Types.INT(), Types.INT(), Types.STRING()])
    ds = env.from_collection([(1, 2, 3, "a"), (5, 6, 7, "b")], type_info=four_ints)
    projected = ds.project(3, 1)
    assert projected.get_type() == Types.TUPLE([Types.STRING(), Types.INT()])
    assert list(projected.execute_and_collect()) == [("a", 2), ("b", 6)]
    keyed_projection = ds.key_by(lambda r: r[3]).project(0)
    assert sorted(keyed_projection.execute_and_collect()) == [(1,), (5,)]


def test_project_refuses_streams_that_are_not_tuples(env: StreamExecutionEnvironment) -> None:
    untyped = env.from_collection([(1, 2)])
    with pytest.raises(GraphBuildError, match="Only Tuple DataStreams can be projected"):
        untyped.project(0)
    typed = env.from_collection([(1, 2)], type_info=Types.TUPLE([Types.INT(), Types.INT()]))
    with pytest.raises(GraphBuildError, match=r"among 0\.\.1"):
        typed.project(2)


def test_sum_min_max_of_field_0_or_1_hand_the_fold_a_pair_aggregation(
    env: StreamExecutionEnvironment,
) -> None:
    keyed = env.from_collection([(1, 2)]).key_by(lambda r: r[0])

    def pair(stream: Any) -> PairAggregation | None:
        return stream._transformation.operator.pair  # type: ignore[no-any-return]

    assert pair(keyed.sum(1)) == PairAggregation(1, operator.add)
    assert pair(keyed.min(0)) == PairAggregation(0, min)
    assert pair(keyed.max(1)) == PairAggregation(1, max)
    for other in (keyed.sum(2), keyed.sum("f0"), keyed.sum(True), keyed.min_by(1),
                  keyed.reduce(lambda a, b: a)):  # fmt: skip
        assert pair(other) is None
