"""Tests of processing-time TTL in the keyed state backends (each test runs on heap and RocksDB)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.state.clock import Clock

from undertow.state.backend import KeyedStateBackend
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.heap_ttl import TtlValueState
from undertow.state.rocksdb import RocksDBKeyedStateBackend

TTL = 100


def ttl_config(*, on_read: bool = False, return_expired: bool = False) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(TTL)
    if on_read:
        builder.update_ttl_on_read_and_write()
    if return_expired:
        builder.return_expired_if_not_cleaned_up()
    return builder.build()


def with_ttl(descriptor: StateDescriptor, **kwargs: bool) -> StateDescriptor:
    descriptor.enable_time_to_live(ttl_config(**kwargs))
    return descriptor


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["heap", "rocksdb"])
def make(request: pytest.FixtureRequest) -> Any:
    """Builds a backend of the parametrized kind over all 16 key groups: ``make(clock)``."""
    cls = HeapKeyedStateBackend if request.param == "heap" else RocksDBKeyedStateBackend
    return lambda clock: cls("op", 16, range(16), clock)


@pytest.fixture
def backend(make: Any, clock: Clock) -> Any:
    b = make(clock)
    b.set_current_key("k")
    return b


def test_ttl_states_only_for_ttl_descriptors(backend: KeyedStateBackend) -> None:
    def logic(state: Any) -> Any:
        return getattr(state, "inner", state)  # a RocksDB state runs the heap state's logic

    assert isinstance(
        logic(backend.get_partitioned_state(with_ttl(ValueStateDescriptor("t")))), TtlValueState
    )
    assert not isinstance(
        logic(backend.get_partitioned_state(ValueStateDescriptor("p"))), TtlValueState
    )


def test_value_expires_on_create_and_write(backend: KeyedStateBackend, clock: Clock) -> None:
    s: Any = backend.get_partitioned_state(with_ttl(ValueStateDescriptor("v")))
    s.update(1)
    clock.now += TTL - 1
    assert s.value() == 1  # a read does not extend the TTL
    clock.now += 1
    assert s.value() is None
    assert list(backend.keys("v")) == []  # cleaned up on access


def test_value_on_read_and_write_extends(backend: KeyedStateBackend, clock: Clock) -> None:
    s: Any = backend.get_partitioned_state(with_ttl(ValueStateDescriptor("v"), on_read=True))
    s.update(1)
    for _ in range(5):
        clock.now += TTL - 1
        assert s.value() == 1
    clock.now += TTL
    assert s.value() is None


def test_return_expired_if_not_cleaned_up(backend: KeyedStateBackend, clock: Clock) -> None:
    s: Any = backend.get_partitioned_state(with_ttl(ValueStateDescriptor("v"), return_expired=True))
    s.update(1)
    clock.now += TTL
    assert s.value() == 1  # returned once, then cleaned up
    assert s.value() is None


def test_list_ttl_per_element(backend: KeyedStateBackend, clock: Clock) -> None:
    s: Any = backend.get_partitioned_state(with_ttl(ListStateDescriptor("l")))
    s.add(1)
    clock.now += 50
    s.add_all([2, 3])
    clock.now += 50
    assert list(s.get()) == [2, 3]
    clock.now += 50
    assert list(s.get()) == []
    assert list(backend.keys("l")) == []
    s.update([4])
    assert list(s) == [4]


def test_map_ttl_per_entry(backend: KeyedStateBackend, clock: Clock) -> None:
    s: Any = backend.get_partitioned_state(with_ttl(MapStateDescriptor("m"), on_read=True))
    s.put("a", 1)
    clock.now += 50
    s.put_all({"b": 2})
    clock.now += 60
    assert s.get("a") is None and not s.contains("a")
    assert sorted(s.items()) == [("b", 2)]  # the read refreshes "b"
    clock.now += 99
    assert list(s.keys()) == ["b"] and list(s.values()) == [2]
    clock.now += 100
    assert s.is_empty()
    assert list(backend.keys("m")) == []


def test_reducing_and_aggregating_ignore_expired(backend: KeyedStateBackend, clock: Clock) -> None:
    class Count:
        def create_accumulator(self) -> int:
            return 0

        def add(self, value: int, acc: int) -> int:
            return acc + 1

        def get_result(self, acc: int) -> int:
            return acc

        def merge(self, a: int, b: int) -> int:
            return a + b

    red: Any = backend.get_partitioned_state(
        with_ttl(ReducingStateDescriptor("r", lambda a, b: a + b), return_expired=True)
    )
    agg: Any = backend.get_partitioned_state(with_ttl(AggregatingStateDescriptor("a", Count())))
    for s in (red, agg):
        s.add(5)
        s.add(5)
    assert red.get() == 10 and agg.get() == 2
    clock.now += TTL
    red.add(1)
    agg.add(1)
    assert red.get() == 1 and agg.get() == 1


def test_merge_namespaces_drops_expired(backend: KeyedStateBackend, clock: Clock) -> None:
    lst: Any = backend.get_partitioned_state(with_ttl(ListStateDescriptor("l")))
    red: Any = backend.get_partitioned_state(with_ttl(ReducingStateDescriptor("r", max)))
    for s in (lst, red):
        s.set_current_namespace("old")
        s.add(9)
    clock.now += TTL
    for s in (lst, red):
        s.set_current_namespace("new")
        s.add(1)
        s.merge_namespaces("target", ["old", "new"])
        s.set_current_namespace("target")
    assert list(lst.get()) == [1]
    assert red.get() == 1


def test_snapshot_drops_expired_and_keeps_timestamps(make: Any, clock: Clock) -> None:
    b = make(clock)
    s: Any = b.get_partitioned_state(with_ttl(ValueStateDescriptor("v")))
    for k in range(20):
        b.set_current_key(k)
        s.update(k)
        clock.now += 10
    blobs = b.snapshot()  # keys 11..19 were written less than TTL ago
    clock.now -= 5
    fresh = make(clock)
    fresh.restore(blobs)
    assert sorted(fresh.keys("v")) == list(range(11, 20))
    t: Any = fresh.get_partitioned_state(with_ttl(ValueStateDescriptor("v")))
    clock.now += 50  # restored timestamps survive: keys 11..14 expire
    live = []
    for k in range(11, 20):
        fresh.set_current_key(k)
        if t.value() is not None:
            live.append(k)
    assert live == list(range(15, 20))


def test_restore_across_ttl_change(make: Any, clock: Clock) -> None:
    plain = make(clock)
    s: Any = plain.get_partitioned_state(ListStateDescriptor("l"))
    plain.set_current_key("k")
    s.add_all([1, 2])
    with_ttl_backend = make(clock)
    with_ttl_backend.restore(plain.snapshot())
    t: Any = with_ttl_backend.get_partitioned_state(with_ttl(ListStateDescriptor("l")))
    with_ttl_backend.set_current_key("k")
    assert list(t.get()) == [1, 2]  # entries restored without TTL start their TTL now
    back = make(clock)
    back.get_partitioned_state(ListStateDescriptor("l"))
    back.restore(with_ttl_backend.snapshot())
    back.set_current_key("k")
    assert list(back.get_partitioned_state(ListStateDescriptor("l")).get()) == [1, 2]  # type: ignore[attr-defined]
    clock.now += TTL
    assert list(t.get()) == []
