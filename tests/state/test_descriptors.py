"""The function capabilities a state descriptor's holder looks for
(:mod:`undertow.state.descriptors`): a reduce and an aggregate function as Protocols, so a
function shaped like PyFlink's is accepted without subclassing, and a bad one is refused
naming the state and the value."""

from __future__ import annotations

import re
from typing import Any

import pytest

from undertow.api.functions import AggregateFunction, ReduceFunction
from undertow.core.errors import StateError
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    SupportsAggregate,
    SupportsReduce,
    ValueStateDescriptor,
    aggregate_function_of,
    as_reducer,
    reducer_of,
)


class Longest(ReduceFunction):
    def reduce(self, value1: Any, value2: Any) -> Any:
        return max(value1, value2, key=len)


class ShapedLikeAReduce:
    """Not a ReduceFunction: only its shape says it reduces."""

    def reduce(self, value1: Any, value2: Any) -> Any:
        return value1 * value2


class ShapedLikeAnAggregate:
    def create_accumulator(self) -> list[Any]:
        return []

    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        return [*accumulator, value]

    def get_result(self, accumulator: list[Any]) -> int:
        return len(accumulator)

    def merge(self, acc_a: list[Any], acc_b: list[Any]) -> list[Any]:
        return acc_a + acc_b


class CountAll(ShapedLikeAnAggregate, AggregateFunction):
    """PyFlink's base class, with the shaped one's methods."""


def test_a_reduce_is_the_reduce_method_of_anything_shaped_like_one_or_a_callable() -> None:
    assert isinstance(ShapedLikeAReduce(), SupportsReduce)
    assert reducer_of(ReducingStateDescriptor("s", Longest()))("ab", "abc") == "abc"
    assert reducer_of(ReducingStateDescriptor("s", ShapedLikeAReduce()))(3, 4) == 12
    assert reducer_of(ReducingStateDescriptor("s", lambda a, b: a - b))(3, 4) == -1
    assert as_reducer(7) is None


def test_a_bad_reduce_function_is_refused_naming_the_state_and_the_value() -> None:
    with pytest.raises(StateError, match=r"reducing state 'sum': .*got 5"):
        reducer_of(ReducingStateDescriptor("sum", 5))


def test_an_aggregate_function_needs_all_four_methods_not_the_base_class() -> None:
    counting = CountAll()
    assert aggregate_function_of(AggregatingStateDescriptor("n", counting)) is counting
    shaped = ShapedLikeAnAggregate()
    assert isinstance(shaped, SupportsAggregate)
    assert aggregate_function_of(AggregatingStateDescriptor("n", shaped)) is shaped

    class NoMerge:
        create_accumulator = ShapedLikeAnAggregate.create_accumulator
        add = ShapedLikeAnAggregate.add
        get_result = ShapedLikeAnAggregate.get_result

    for bad in (object(), NoMerge()):
        named = "aggregating state 'avg': agg_function " + re.escape(repr(bad))
        with pytest.raises(StateError, match=named):
            aggregate_function_of(AggregatingStateDescriptor("avg", bad))


def test_a_descriptor_of_another_kind_has_neither_function() -> None:
    with pytest.raises(StateError, match=r"reducing state 'v': .*got None"):
        reducer_of(ValueStateDescriptor("v"))
    with pytest.raises(StateError, match="aggregating state 'v': agg_function None"):
        aggregate_function_of(ValueStateDescriptor("v"))
