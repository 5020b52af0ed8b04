"""Tests of the heap keyed state backend: state semantics, key groups, snapshot/restore.

The Hypothesis state machine at the end runs random operations against a dict model, with
snapshots restored into backends that own parts of the key group range.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from undertow.core.errors import StateError
from undertow.state.backend import VOID_NAMESPACE, KeyedStateBackend
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import (
    assign_to_key_group,
    key_group_range_for_subtask,
    stable_hash,
)

MAX_P = 8


def backend(key_groups: range = range(MAX_P), max_p: int = MAX_P) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend("op", max_p, key_groups, clock=lambda: 0)


class SumReduce:
    def reduce(self, a: int, b: int) -> int:
        return a + b


class AverageAggregate:
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_is_a_keyed_state_backend() -> None:
    assert isinstance(backend(), KeyedStateBackend)


def test_value_state_per_key() -> None:
    b = backend()
    s = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key("a")
    assert s.value() is None  # type: ignore[attr-defined]
    s.update(1)  # type: ignore[attr-defined]
    b.set_current_key("b")
    assert s.value() is None  # type: ignore[attr-defined]
    s.update(2)  # type: ignore[attr-defined]
    b.set_current_key("a")
    assert s.value() == 1  # type: ignore[attr-defined]
    assert b.get_current_key() == "a"
    s.clear()
    assert s.value() is None  # type: ignore[attr-defined]
    assert list(b.keys("v")) == ["b"]


def test_value_update_none_clears() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key(1)
    s.update(5)
    s.update(None)
    assert list(b.keys("v")) == []


def test_same_object_per_name_and_kind_conflict() -> None:
    b = backend()
    s = b.get_partitioned_state(ValueStateDescriptor("x"))
    assert b.get_partitioned_state(ValueStateDescriptor("x")) is s
    with pytest.raises(StateError, match="'x' is value state"):
        b.get_partitioned_state(ListStateDescriptor("x"))


def test_access_without_key_raises() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError, match="without a current key"):
        s.value()
    with pytest.raises(StateError, match="without a current key"):
        s.update(1)


def test_key_outside_range_raises_and_names_everything() -> None:
    b = backend(range(0, 4))
    outside = next(k for k in range(1000) if assign_to_key_group(k, MAX_P) >= 4)
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError) as info:
        b.set_current_key(outside)
    msg = str(info.value)
    assert "'op'" in msg
    assert repr(outside) in msg
    assert f"key group {assign_to_key_group(outside, MAX_P)}" in msg
    assert "[0, 4)" in msg
    with pytest.raises(StateError):  # the failed key is not silently current
        s.value()


def test_unhashable_key_raises_state_error() -> None:
    with pytest.raises(StateError, match="not hashable"):
        backend().set_current_key({1, 2})


def test_list_and_dict_keys_are_kept_in_their_hashable_form() -> None:
    """PyFlink keys by value: ``[1, 2]`` is a key, stored as ``(1, 2)`` in the same group."""
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key([1, 2])
    s.update("list")
    assert b.get_current_key() == (1, 2)
    b.set_current_key((1, 2))
    assert s.value() == "list"
    b.set_current_key({"k": [3]})
    s.update("dict")
    assert b.get_current_key() == (("k", (3,)),)
    assert stable_hash([1, 2]) == stable_hash((1, 2))
    assert stable_hash({"k": [3]}) == stable_hash((("k", (3,)),))
    folded = b.fold_values(s, [[1, 2], [1, 2]], ["a", "b"], lambda x, y: x + y)
    assert folded == ["lista", "listab"]


def test_list_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    b.set_current_key("k")
    assert list(s.get()) == []
    s.add(1)
    s.add_all([2, 3])
    assert list(s.get()) == [1, 2, 3]
    assert list(s) == [1, 2, 3]
    got = s.get()
    s.add(4)  # get() returned a copy
    assert list(got) == [1, 2, 3]
    s.update([9])
    assert list(s.get()) == [9]
    with pytest.raises(StateError):
        s.add(None)
    with pytest.raises(StateError):
        s.add_all([1, None])
    s.add_all([])
    s.update([])
    assert list(s.get()) == []
    assert list(b.keys("l")) == []


def test_map_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(MapStateDescriptor("m"))
    b.set_current_key("k")
    assert s.is_empty()
    assert s.get("x") is None
    s.put("x", 1)
    s.put_all({"y": 2, "z": 3})
    s["w"] = 4
    assert s["w"] == 4 and "w" in s and s.contains("x")
    del s["w"]
    assert not s.contains("w")
    assert sorted(s.items()) == [("x", 1), ("y", 2), ("z", 3)]
    for k in s:  # iterates a snapshot of the keys: removing while iterating is fine
        s.remove(k)
    assert s.is_empty()
    assert list(b.keys("m")) == []  # no empty dict left behind
    s.put("a", 1)
    assert sorted(s.values()) == [1] and list(s) == ["a"]
    s.clear()
    assert list(b.keys("m")) == []


def test_reducing_state_with_function_object_and_callable() -> None:
    b = backend()
    s1: Any = b.get_partitioned_state(ReducingStateDescriptor("r1", SumReduce()))
    s2: Any = b.get_partitioned_state(ReducingStateDescriptor("r2", lambda a, c: max(a, c)))
    b.set_current_key(7)
    assert s1.get() is None
    for v in (1, 5, 2):
        s1.add(v)
        s2.add(v)
    assert s1.get() == 8
    assert s2.get() == 5
    s1.add(None)  # as Flink: adding None clears
    assert s1.get() is None


def test_bad_reduce_and_aggregate_functions() -> None:
    b = backend()
    with pytest.raises(StateError, match="reduce_function"):
        b.get_partitioned_state(ReducingStateDescriptor("r", 42))
    with pytest.raises(StateError, match="create_accumulator"):
        b.get_partitioned_state(AggregatingStateDescriptor("a", object()))


def test_aggregating_state() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(AggregatingStateDescriptor("a", AverageAggregate()))
    b.set_current_key("k")
    assert s.get() is None
    s.add(1)
    s.add(3)
    assert s.get() == 2.0
    s.clear()
    assert s.get() is None


def test_namespaces_are_separate_and_keys_filter_by_namespace() -> None:
    b = backend()
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.set_current_key(("a", 1))  # a tuple key never collides with (key, namespace)
    s.update("void")
    s.set_current_namespace("w1")
    assert s.value() is None
    s.update("w1")
    b.set_current_key("a")
    s.update("a-w1")
    s.set_current_namespace(VOID_NAMESPACE)
    assert s.value() is None
    b.set_current_key(("a", 1))
    assert s.value() == "void"
    assert sorted(map(repr, b.keys("v", "w1"))) == sorted(map(repr, ["a", ("a", 1)]))
    assert list(b.keys("v")) == [("a", 1)]
    assert list(b.keys("unknown")) == []


def test_merge_namespaces_list_reducing_aggregating() -> None:
    b = backend()
    lst: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    red: Any = b.get_partitioned_state(ReducingStateDescriptor("r", SumReduce()))
    agg: Any = b.get_partitioned_state(AggregatingStateDescriptor("a", AverageAggregate()))
    b.set_current_key("k")
    for ns, v in (("w1", 1), ("w2", 2), ("w3", 6)):
        for s in (lst, red, agg):
            s.set_current_namespace(ns)
            s.add(v)
    for s in (lst, red, agg):
        s.merge_namespaces("w3", ["w1", "w2", "missing"])
        s.set_current_namespace("w3")
    assert list(lst.get()) == [6, 1, 2]  # target first, then the sources in order
    assert red.get() == 9
    assert agg.get() == 3.0
    for s in (lst, red, agg):
        s.set_current_namespace("w1")
        assert not list(s.get()) if s is lst else s.get() is None
    assert list(b.keys("l", "w1")) == []


def test_value_and_map_state_cannot_merge() -> None:
    b = backend()
    b.set_current_key(1)
    for d in (ValueStateDescriptor("v"), MapStateDescriptor("m")):
        with pytest.raises(NotImplementedError):
            b.get_partitioned_state(d).merge_namespaces("a", ["b"])


def fill(b: HeapKeyedStateBackend, keys: list[Any]) -> None:
    v: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    lst: Any = b.get_partitioned_state(ListStateDescriptor("l"))
    m: Any = b.get_partitioned_state(MapStateDescriptor("m"))
    for k in keys:
        b.set_current_key(k)
        v.update(f"v{k}")
        lst.add_all([k, k])
        m.put("k", k)
        m.set_current_namespace(("win", k))
        m.put("w", k)
        m.set_current_namespace(VOID_NAMESPACE)


def test_snapshot_restore_roundtrip() -> None:
    keys = [*range(50), "a", "b", ("t", 1)]
    b = backend()
    fill(b, keys)
    blobs = b.snapshot()
    assert set(blobs) <= set(range(MAX_P))
    assert all(isinstance(x, bytes) for x in blobs.values())
    fresh = backend()
    fresh.restore(blobs)
    assert sorted(map(repr, fresh.keys("v"))) == sorted(map(repr, keys))
    v: Any = fresh.get_partitioned_state(ValueStateDescriptor("v"))
    m: Any = fresh.get_partitioned_state(MapStateDescriptor("m"))
    for k in keys:
        fresh.set_current_key(k)
        assert v.value() == f"v{k}"
        m.set_current_namespace(("win", k))
        assert m.get("w") == k
        m.set_current_namespace(VOID_NAMESPACE)
    # a snapshot taken before the states are registered again still holds them
    again = backend()
    again.restore(fresh.snapshot())
    assert again.snapshot().keys() == blobs.keys()


def test_p1_snapshot_restored_into_two_halves_gives_each_exactly_its_keys() -> None:
    max_p = 128
    keys = [*range(200), *(f"user-{i}" for i in range(100))]
    whole = backend(range(max_p), max_p)
    fill(whole, keys)
    blobs = whole.snapshot()
    seen: list[Any] = []
    for index in range(2):
        kg_range = key_group_range_for_subtask(max_p, 2, index)
        half = backend(kg_range, max_p)
        half.restore(blobs)
        mine = [k for k in keys if assign_to_key_group(k, max_p) in kg_range]
        assert sorted(map(repr, half.keys("v"))) == sorted(map(repr, mine))
        assert sorted(map(repr, half.keys("l"))) == sorted(map(repr, mine))
        lst: Any = half.get_partitioned_state(ListStateDescriptor("l"))
        for k in mine:
            half.set_current_key(k)
            assert list(lst.get()) == [k, k]
        seen.extend(mine)
        assert set(half.snapshot()) <= set(kg_range)
    assert len(seen) == len(keys)


def test_restore_kind_mismatch_and_corrupt_blob() -> None:
    b = backend()
    fill(b, [1])
    blobs = b.snapshot()
    other = backend()
    other.get_partitioned_state(ListStateDescriptor("v"))
    with pytest.raises(StateError, match="'v' is list state"):
        other.restore(blobs)
    kg, blob = next(iter(blobs.items()))
    with pytest.raises(StateError, match="checksum"):
        backend().restore({kg: blob[:-1] + bytes([blob[-1] ^ 1])})
    with pytest.raises(StateError, match="magic"):
        backend().restore({kg: b"XXXX" + blob[4:]})
    with pytest.raises(StateError, match="holds key group"):
        backend().restore({(kg + 1) % MAX_P: blob})
    # restored state registered with another kind
    restored = backend()
    restored.restore(blobs)
    with pytest.raises(StateError, match="'v' is value state"):
        restored.get_partitioned_state(ReducingStateDescriptor("v", SumReduce()))


def test_dispose_drops_everything() -> None:
    b = backend()
    fill(b, [1, 2])
    s: Any = b.get_partitioned_state(ValueStateDescriptor("v"))
    b.dispose()
    assert b.snapshot() == {}
    with pytest.raises(StateError):
        s.value()


def test_bad_key_group_range() -> None:
    with pytest.raises(StateError):
        HeapKeyedStateBackend("op", 4, range(2, 6), lambda: 0)
    with pytest.raises(StateError):
        HeapKeyedStateBackend("op", 4, range(0), lambda: 0)


# --- model-based test ------------------------------------------------------------------------

KEYS = st.one_of(st.integers(-6, 6), st.sampled_from(["a", "b", "c", "dd", ""]))
NAMESPACE_LIST = [VOID_NAMESPACE, "w1", "w2", ("w", 3)]
NAMESPACES = st.sampled_from(NAMESPACE_LIST)
VALUES = st.integers(-100, 100)
KINDS = {"v": "value", "l": "list", "m": "map", "r": "reducing"}


EMPTY: dict[str, Any] = {"v": None, "l": [], "m": {}, "r": None}


def read(name: str, state: Any) -> Any:
    if name == "v":
        return state.value()
    if name == "l":
        return list(state.get())
    if name == "m":
        return dict(state.items())
    return state.get()


class HeapBackendMachine(RuleBasedStateMachine):
    """The backend against ``{(state, key, namespace): value}`` (lists, dicts, sums)."""

    @initialize()
    def start(self) -> None:
        self.backend = backend()
        self.model: dict[tuple[str, Any, Any], Any] = {}
        self.key: Any = 0
        self.namespace: Any = VOID_NAMESPACE
        self._bind()

    def _bind(self) -> None:
        b = self.backend
        self.states: dict[str, Any] = {
            "v": b.get_partitioned_state(ValueStateDescriptor("v")),
            "l": b.get_partitioned_state(ListStateDescriptor("l")),
            "m": b.get_partitioned_state(MapStateDescriptor("m")),
            "r": b.get_partitioned_state(ReducingStateDescriptor("r", SumReduce())),
        }
        for s in self.states.values():
            s.set_current_namespace(self.namespace)
        b.set_current_key(self.key)

    def _slot(self, name: str) -> tuple[str, Any, Any]:
        return (name, self.key, self.namespace)

    @rule(key=KEYS)
    def set_key(self, key: Any) -> None:
        self.key = key
        self.backend.set_current_key(key)

    @rule(namespace=NAMESPACES)
    def set_namespace(self, namespace: Any) -> None:
        self.namespace = namespace
        for s in self.states.values():
            s.set_current_namespace(namespace)

    @rule(value=st.one_of(st.none(), VALUES))
    def value_update(self, value: Any) -> None:
        self.states["v"].update(value)
        if value is None:
            self.model.pop(self._slot("v"), None)
        else:
            self.model[self._slot("v")] = value

    def _in_namespace(self, name: str, namespace: Any) -> Any:
        """The state switched to ``namespace`` (rules switch back to ``self.namespace``)."""
        state = self.states[name]
        state.set_current_namespace(namespace)
        return state

    @rule(values=st.lists(VALUES, max_size=3), replace=st.booleans(), namespace=NAMESPACES)
    def list_add(self, values: list[int], replace: bool, namespace: Any) -> None:
        state = self._in_namespace("l", namespace)
        slot = ("l", self.key, namespace)
        if replace:
            state.update(values)
            self.model.pop(slot, None)
        elif len(values) == 1:
            state.add(values[0])
        else:
            state.add_all(values)
        if values:
            self.model.setdefault(slot, []).extend(values)
        state.set_current_namespace(self.namespace)

    @rule(map_key=st.integers(0, 3), value=st.one_of(st.none(), VALUES))
    def map_put_or_remove(self, map_key: int, value: Any) -> None:
        slot = self._slot("m")
        if value is None:
            self.states["m"].remove(map_key)
            entry = self.model.get(slot, {})
            entry.pop(map_key, None)
            if not entry:
                self.model.pop(slot, None)
        else:
            self.states["m"].put(map_key, value)
            self.model.setdefault(slot, {})[map_key] = value

    @rule(value=VALUES, namespace=NAMESPACES)
    def reducing_add(self, value: int, namespace: Any) -> None:
        self._in_namespace("r", namespace).add(value)
        slot = ("r", self.key, namespace)
        self.model[slot] = self.model.get(slot, 0) + value
        self.states["r"].set_current_namespace(self.namespace)

    @rule(name=st.sampled_from(sorted(KINDS)))
    def clear(self, name: str) -> None:
        self.states[name].clear()
        self.model.pop(self._slot(name), None)

    @rule(
        name=st.sampled_from(["l", "r"]),
        into=NAMESPACES,
        sources=st.lists(NAMESPACES, min_size=1, max_size=2),
    )
    def merge(self, name: str, into: Any, sources: list[Any]) -> None:
        self.states[name].merge_namespaces(into, sources)
        merged: Any = None
        for ns in sources:
            part = self.model.pop((name, self.key, ns), None)
            if part is not None:
                merged = part if merged is None else merged + part
        if merged is not None:
            existing = self.model.get((name, self.key, into))
            self.model[(name, self.key, into)] = merged if existing is None else existing + merged
        for ns in {into, *sources}:
            state = self._in_namespace(name, ns)
            assert read(name, state) == self.model.get((name, self.key, ns), EMPTY[name])
        self.states[name].set_current_namespace(self.namespace)

    @invariant()
    def current_entries_match(self) -> None:
        for name, state in self.states.items():
            assert read(name, state) == self.model.get(self._slot(name), EMPTY[name])
        assert self.states["m"].is_empty() == (self._slot("m") not in self.model)

    @rule(namespace=NAMESPACES)
    def keys_match(self, namespace: Any) -> None:
        for name in KINDS:
            expected = {repr(k) for (n, k, ns) in self.model if n == name and ns == namespace}
            assert {repr(k) for k in self.backend.keys(name, namespace)} == expected

    @rule(split=st.integers(1, MAX_P - 1))
    def snapshot_restore_split(self, split: int) -> None:
        blobs = self.backend.snapshot()
        halves = [backend(range(0, split)), backend(range(split, MAX_P))]
        for half in halves:
            half.restore(blobs)
            self._check_backend(half)
        whole = backend()
        for half in halves:
            whole.restore(half.snapshot())
        self.backend = whole
        self._bind()

    def _check_backend(self, b: HeapKeyedStateBackend) -> None:
        owned = {
            slot: v
            for slot, v in self.model.items()
            if assign_to_key_group(slot[1], MAX_P) in b.key_group_range
        }
        states: dict[str, Any] = {
            "v": b.get_partitioned_state(ValueStateDescriptor("v")),
            "l": b.get_partitioned_state(ListStateDescriptor("l")),
            "m": b.get_partitioned_state(MapStateDescriptor("m")),
            "r": b.get_partitioned_state(ReducingStateDescriptor("r", SumReduce())),
        }
        slots = {(n, k, ns) for n in KINDS for ns in NAMESPACE_LIST for k in b.keys(n, ns)}
        assert slots == set(owned)
        for (name, key, ns), expected in owned.items():
            b.set_current_key(key)
            s = states[name]
            s.set_current_namespace(ns)
            assert read(name, s) == expected


HeapBackendMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
test_heap_backend_against_model = HeapBackendMachine.TestCase
