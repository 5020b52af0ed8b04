"""The backends' batch fold (heap, RocksDB) equals the record-at-a-time loop of the base class."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import StateError
from undertow.state.backend import KeyedStateBackend
from undertow.state.descriptors import StateTtlConfig, ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import key_group_range_for_subtask
from undertow.state.rocksdb import RocksDBKeyedStateBackend

BACKENDS = {"heap": HeapKeyedStateBackend, "rocksdb": RocksDBKeyedStateBackend}
each_backend = pytest.mark.parametrize("kind", sorted(BACKENDS))


def _backend(kind: str, key_groups: range = range(0, 128)) -> Any:
    return BACKENDS[kind]("op", 128, key_groups, lambda: 0)


def _add(a: int, b: int) -> int:
    return a + b


@each_backend
@settings(max_examples=50, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 20) | st.text(max_size=2), st.integers(-5, 5))),
        max_size=4,
    )
)
def test_fast_fold_matches_generic_loop(kind: str, batches: list[list[tuple[object, int]]]) -> None:
    fast, slow = _backend(kind), _backend(kind)
    d = ValueStateDescriptor("sum")
    fast_state, slow_state = fast.get_partitioned_state(d), slow.get_partitioned_state(d)
    for batch in batches:
        keys = [k for k, _ in batch]
        values = [v for _, v in batch]
        got = fast.fold_values(fast_state, keys, values, _add)
        expected = KeyedStateBackend.fold_values(slow, slow_state, keys, values, _add)
        assert got == expected
        if keys:
            assert fast.get_current_key() == keys[-1]
    assert fast.snapshot().keys() == slow.snapshot().keys()
    for key in {k for batch in batches for k, _ in batch}:
        fast.set_current_key(key)
        slow.set_current_key(key)
        assert fast_state.value() == slow_state.value()  # type: ignore[attr-defined]


@each_backend
def test_fold_rejects_keys_of_other_subtasks(kind: str) -> None:
    backend = _backend(kind, key_group_range_for_subtask(128, 2, 0))
    state = backend.get_partitioned_state(ValueStateDescriptor("sum"))
    keys = list(range(50))  # some of them belong to subtask 1
    try:
        backend.fold_values(state, keys, [1] * len(keys), _add)
    except StateError as err:
        assert "outside this subtask's key group range" in str(err)
    else:
        raise AssertionError("expected a StateError")


@each_backend
def test_fold_on_ttl_state_uses_the_generic_path(kind: str) -> None:
    backend = _backend(kind)
    d = ValueStateDescriptor("sum")
    d.enable_time_to_live(StateTtlConfig.new_builder(1000).build())
    state = backend.get_partitioned_state(d)
    assert backend.fold_values(state, ["a", "a", "b"], [1, 2, 3], _add) == [1, 3, 3]
