"""Model-based test of the keyed state backends (heap and RocksDB).

A Hypothesis state machine runs random operations against a dict model, with snapshots restored
into backends that own parts of the key group range; it runs once per backend. (A unittest
``TestCase`` cannot take the parametrized fixture of ``test_heap.py``, hence its own module.)
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from undertow.state.backend import VOID_NAMESPACE, KeyedStateBackend
from undertow.state.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import RocksDBKeyedStateBackend

MAX_P = 8


class SumReduce:
    def reduce(self, a: int, b: int) -> int:
        return a + b


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

    impl: type[KeyedStateBackend] = HeapKeyedStateBackend

    def _new(self, key_groups: range = range(MAX_P)) -> Any:
        return self.impl("op", MAX_P, key_groups, lambda: 0)  # type: ignore[call-arg]

    @initialize()
    def start(self) -> None:
        self.backend = self._new()
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
        halves = [self._new(range(0, split)), self._new(range(split, MAX_P))]
        for half in halves:
            half.restore(blobs)
            self._check_backend(half)
        whole = self._new()
        for half in halves:
            whole.restore(half.snapshot())
        self.backend = whole
        self._bind()

    def _check_backend(self, b: Any) -> None:
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


class RocksDBBackendMachine(HeapBackendMachine):
    impl = RocksDBKeyedStateBackend


# RocksDB: fewer examples (each split snapshot opens three DBs of ~40 ms each)
for _machine, _examples in ((HeapBackendMachine, 150), (RocksDBBackendMachine, 25)):
    _machine.TestCase.settings = settings(
        max_examples=_examples,
        stateful_step_count=50,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
test_heap_backend_against_model = HeapBackendMachine.TestCase
test_rocksdb_backend_against_model = RocksDBBackendMachine.TestCase
