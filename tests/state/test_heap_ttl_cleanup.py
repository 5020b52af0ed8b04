"""Incremental TTL cleanup on the heap backend: expired entries whose keys are never read
again leave memory within a bounded number of state accesses; live values, elements and
timestamps are never changed (a read returns what it would without the cleanup); a key group
is serialized for a pending snapshot before the cleanup changes it."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.state.clock import Clock

from undertow.state import heap_ttl_cleanup
from undertow.state.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.heap_states import StateTable
from undertow.state.heap_ttl import TtlPolicy
from undertow.state.heap_ttl_cleanup import TtlSweeper

MAX_P = 16
TTL = 100


def _config(cleanup: str) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(TTL)
    if cleanup == "off":
        builder.disable_cleanup_in_background()
    elif cleanup == "every-record":
        builder.cleanup_incrementally(5, True)
    return builder.build()  # "default": PyFlink's, in background with 5 entries an access


def _state(backend: HeapKeyedStateBackend, descriptor: StateDescriptor, cleanup: str) -> Any:
    descriptor.enable_time_to_live(_config(cleanup))
    return backend.get_partitioned_state(descriptor)


def _entries(backend: HeapKeyedStateBackend, name: str) -> int:
    table = backend._tables[name]
    return sum(len(table.void[o]) for o in range(table.groups))


def _sessions(cleanup: str, accesses: int, ms_apart: int = 1) -> tuple[int, int]:
    """1,000 keys written once and never read again, then ``accesses`` writes and reads of
    one live key, ``ms_apart`` apart: the entries left, before and after."""
    clock = Clock()
    backend = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    state = _state(backend, ValueStateDescriptor("session", None), cleanup)
    for key in range(1_000):
        backend.set_current_key(f"session-{key}")
        state.update(key)
    clock.now += TTL + 1
    before = _entries(backend, "session")
    backend.set_current_key("live")
    state.update(-1)
    for _ in range(accesses // 2):
        clock.now += ms_apart
        state.update(-1)
        assert state.value() == -1
    return before, _entries(backend, "session")


def test_expired_entries_nobody_reads_leave_within_a_bounded_number_of_accesses() -> None:
    # 1,000 entries and 32 dicts, at most 5 steps an access (160 a walk): a whole pass in 7
    # walks (224 accesses), and entries added behind the walk are found in the next pass
    assert _sessions("default", 600) == (1_000, 1)
    assert _sessions("default", 40)[1] > 800  # a few at a time, not all at once


def test_the_pace_is_time_two_walks_a_ttl_not_five_entries_every_access() -> None:
    """While no time passes, a walk is one step: accesses alone do not make it look at the
    same live entries again and again."""
    left = _sessions("default", 320, ms_apart=0)[1]
    assert 800 < left < 1_000  # the first walk, due since the entries were written; then ~none


def test_without_background_cleanup_expired_entries_stay() -> None:
    """The control: PyFlink's ``disable_cleanup_in_background()`` keeps them until read."""
    assert _sessions("off", 1_000) == (1_000, 1_001)


def test_run_cleanup_for_every_record_cleans_without_any_state_access() -> None:
    clock = Clock()
    backend = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    state = _state(backend, ValueStateDescriptor("v", None), "every-record")
    for key in range(200):
        backend.set_current_key(key)
        state.update(key)
    clock.now += TTL + 1
    for key in range(1_000, 1_100):
        clock.now += 1
        backend.set_current_key(key)  # a record of another key, no state touched
    assert _entries(backend, "v") == 0


def test_list_and_map_entries_lose_only_their_expired_elements() -> None:
    clock = Clock()
    backend = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    lists = _state(backend, ListStateDescriptor("l", None), "default")
    maps = _state(backend, MapStateDescriptor("m", None, None), "default")
    backend.set_current_key("old")
    lists.add("a")
    maps.put("a", 1)
    clock.now += TTL // 2
    lists.add("b")
    maps.put("b", 2)
    clock.now += TTL // 2 + 1  # "a" expired, "b" live
    backend.set_current_key("other")
    for _ in range(100):  # each state cleans its own entries on its own accesses
        maps.is_empty()
        lists.get()
    table_l, table_m = backend._tables["l"], backend._tables["m"]
    old_l = next(d for d in table_l.void if "old" in d)["old"]
    old_m = next(d for d in table_m.void if "old" in d)["old"]
    assert ([v for v, _ in old_l], list(old_m)) == (["b"], ["b"])
    backend.set_current_key("old")
    assert (list(lists.get()), dict(maps.items())) == (["b"], {"b": 2})


def test_a_key_group_is_serialized_for_a_pending_snapshot_before_the_cleanup_changes_it() -> None:
    """Entries live when a snapshot is taken expire before its key groups are serialized:
    the snapshot still holds them."""
    clock = Clock()
    backend = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    state = _state(backend, ValueStateDescriptor("v", None), "default")
    for key in range(100):
        backend.set_current_key(key)
        state.update(key)
    snapshot = backend.snapshot()
    clock.now += TTL + 1
    backend.set_current_key("reader")
    for _ in range(200):
        clock.now += 1
        state.value()
    assert _entries(backend, "v") == 0
    restored = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), Clock())
    restored.restore(snapshot.result())
    again = _state(restored, ValueStateDescriptor("v", None), "off")
    values = []
    for key in range(100):
        restored.set_current_key(key)
        values.append(again.value())
    assert values == list(range(100))


OPS = st.lists(
    st.tuples(st.sampled_from(["put", "get", "tick"]), st.integers(0, 5), st.integers(1, 40)),
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(OPS, st.integers(1, 7))
@example(
    [("put", 0, 1), ("tick", 0, 40), ("tick", 0, 40)] + [("get", 1, 0)] * 8 + [("get", 0, 0)], 7
)  # near its end of life, the entry is still read
def test_reads_are_the_same_with_and_without_the_cleanup(ops: list[Any], size: int) -> None:
    """Random writes, reads and clock ticks over value and list state, on a backend that
    cleans ``size`` entries an access (a walk at every access) and on one that does not:
    every read agrees."""
    with mock.patch.object(heap_ttl_cleanup, "BATCH", 1):
        _compare(ops, size)


def _compare(ops: list[Any], size: int) -> None:
    clocks = [Clock(), Clock()]
    backends = [HeapKeyedStateBackend("op", 4, range(4), c) for c in clocks]  # a short walk
    cleaning = StateTtlConfig.new_builder(TTL).cleanup_incrementally(size, False).build()
    states = []
    for backend, config in zip(backends, (cleaning, _config("off"))):
        value, elements = ValueStateDescriptor("v", None), ListStateDescriptor("l", None)
        value.enable_time_to_live(config)
        elements.enable_time_to_live(config)
        states.append((backend.get_partitioned_state(value),
                       backend.get_partitioned_state(elements)))  # fmt: skip
    for op, key, amount in ops:
        if op == "tick":
            for c in clocks:
                c.now += amount
            continue
        reads = []
        for backend, (value, elements) in zip(backends, states):
            backend.set_current_key(key)
            if op == "put":
                value.update(amount)  # type: ignore[attr-defined]
                elements.add(amount)  # type: ignore[attr-defined]
            else:
                reads.append((value.value(), list(elements.get())))  # type: ignore[attr-defined]
        if reads:
            assert reads[0] == reads[1]


def test_a_cleanup_size_must_be_positive() -> None:
    table = StateTable("t", "value", True, 4, {})
    policy = TtlPolicy(_config("default"), Clock())
    with pytest.raises(ValueError, match="cleanup size must be > 0, got 0"):
        TtlSweeper(table, policy, 0, lambda offset: None)
