"""The heap states' parts (:mod:`undertow.state.heap_states`): tables per key group, the
refusal to touch state without a key, and the checks of the functions a descriptor holds."""

from __future__ import annotations

import pytest

from undertow.core.errors import StateError
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    aggregate_function_of,
    reducer_of,
)
from undertow.state.heap_states import StateTable, UnkeyedDict


def test_without_a_key_every_access_names_the_operator() -> None:
    unkeyed = UnkeyedDict("counter")
    with pytest.raises(StateError, match="operator 'counter': keyed state accessed without"):
        unkeyed.get("k")
    with pytest.raises(StateError):
        unkeyed["k"] = 1


def test_a_table_has_a_dict_per_key_group_and_the_unkeyed_one_last() -> None:
    unkeyed = UnkeyedDict("op")
    table = StateTable("s", "value", False, 3, unkeyed)
    assert table.groups == 3 and table.void[3] is unkeyed and table.windowed[3] is unkeyed
    table.void[1]["k"] = 1
    table.windowed[2][("k", "w")] = 2
    assert [table.is_empty_at(i) for i in range(3)] == [True, False, False]
    table.clear()
    assert all(table.is_empty_at(i) for i in range(3))


def test_reduce_and_aggregate_functions_are_checked_naming_the_state() -> None:
    assert reducer_of(ReducingStateDescriptor("sum", lambda a, b: a + b, None))(1, 2) == 3
    with pytest.raises(StateError, match="reducing state 'sum': reduce_function must be"):
        reducer_of(ReducingStateDescriptor("sum", 5, None))  # type: ignore[arg-type]
    with pytest.raises(StateError, match=r"aggregating state 'avg': .* has no create_accumulator"):
        aggregate_function_of(AggregatingStateDescriptor("avg", object(), None))  # type: ignore[arg-type]
