"""MapState on RocksDB, one DB entry per map key (``state/rocksdb_map.py``).

A Hypothesis state machine runs random MapState operations on RocksDB and on the heap backend
in lockstep and checks both against a dict, across canonical snapshots restored at another
key-group split (rescale), on the other backend (savepoint interchange), and native
checkpoints restored as they are and split. With TTL, random operations and clock moves give
the same answers and snapshots on both backends. A native checkpoint written by the old
layout (one entry per key and namespace, ``data/rocksdb_map_v1.tar.gz``) still restores.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from tests.state.clock import Clock

from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import MapStateDescriptor, StateTtlConfig, ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend, decode_key_group_blob
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_incremental import DownloadedNative, IncrementalKeyedHandle
from undertow.state.rocksdb_map import (
    LAYOUT_KEY,
    group_map_entries,
    prefix_end,
    scan_prefix,
    split_entry_key,
)
from undertow.state.rocksdb_states import KeyEncoder, encode_key

MAX_P = 8
KEYS = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", ("t", 1)]))
NAMESPACE_LIST = [VOID_NAMESPACE, "w1", ("w", 2)]
NAMESPACES = st.sampled_from(NAMESPACE_LIST)
MAP_KEYS = st.one_of(st.integers(0, 4), st.sampled_from(["x", "yy", (1, "z")]))
VALUES = st.one_of(st.none(), st.integers(-50, 50), st.text(max_size=3))
FIXTURE = Path(__file__).parent / "data" / "rocksdb_map_v1.tar.gz"
#: One encoder for every example: its bytes must not depend on what it encoded before.
ENCODER = KeyEncoder()


def _rocks(key_groups: range = range(MAX_P), clock: Any = lambda: 0) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend("op", MAX_P, key_groups, clock)


def _map(backend: Any, descriptor: MapStateDescriptor | None = None) -> Any:
    return backend.get_partitioned_state(descriptor or MapStateDescriptor("m", None, None))


def _native(backend: RocksDBKeyedStateBackend, checkpoint_id: int, into: Path) -> DownloadedNative:
    """A native checkpoint of ``backend`` as a restore would see it downloaded (no upload)."""
    native = backend.native_checkpoint(checkpoint_id, full=True)
    shutil.copytree(native.directory, into)
    shutil.rmtree(native.directory)
    handle = IncrementalKeyedHandle(
        checkpoint_id, "op", native.backend_id, native.key_groups, MAX_P, dict(native.states),
        (), (),
    )  # fmt: skip
    return DownloadedNative(handle, str(into))


class MapMachine(RuleBasedStateMachine):
    """RocksDB and heap MapState against ``{(key, namespace): {map key: value}}``."""

    def __init__(self) -> None:
        super().__init__()
        self.rocks = _rocks()
        self.heap = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), lambda: 0)
        self.model: dict[tuple[Any, Any], dict[Any, Any]] = {}
        self.key: Any = 0
        self.namespace: Any = VOID_NAMESPACE
        self.checkpoints = 0
        self._bind()

    def _bind(self) -> None:
        self.states = [_map(self.rocks), _map(self.heap)]
        for backend in (self.rocks, self.heap):
            backend.set_current_key(self.key)
        for state in self.states:
            state.set_current_namespace(self.namespace)

    def teardown(self) -> None:
        self.rocks.dispose()

    @property
    def entry(self) -> dict[Any, Any]:
        return self.model.get((self.key, self.namespace), {})

    def _store(self, entry: dict[Any, Any]) -> None:
        if entry:
            self.model[(self.key, self.namespace)] = entry
        else:
            self.model.pop((self.key, self.namespace), None)

    @rule(key=KEYS)
    def set_key(self, key: Any) -> None:
        self.key = key
        for backend in (self.rocks, self.heap):
            backend.set_current_key(key)

    @rule(namespace=NAMESPACES)
    def set_namespace(self, namespace: Any) -> None:
        self.namespace = namespace
        for state in self.states:
            state.set_current_namespace(namespace)

    @rule(map_key=MAP_KEYS, value=VALUES)
    def put(self, map_key: Any, value: Any) -> None:
        for state in self.states:
            state.put(map_key, value)
        self._store({**self.entry, map_key: value})

    @rule(mapping=st.dictionaries(MAP_KEYS, VALUES, max_size=3))
    def put_all(self, mapping: dict[Any, Any]) -> None:
        for state in self.states:
            state.put_all(mapping)
        self._store({**self.entry, **mapping})

    @rule(map_key=MAP_KEYS)
    def remove(self, map_key: Any) -> None:
        for state in self.states:
            state.remove(map_key)
        self._store({k: v for k, v in self.entry.items() if k != map_key})

    @rule(map_key=MAP_KEYS)
    def get_and_contains(self, map_key: Any) -> None:
        for state in self.states:
            assert state.get(map_key) == self.entry.get(map_key)
            assert state.contains(map_key) == (map_key in self.entry)

    @rule()
    def clear(self) -> None:
        for state in self.states:
            state.clear()
        self._store({})

    @invariant()
    def views_match(self) -> None:
        entry = self.entry
        for state in self.states:
            assert dict(state.items()) == entry
            assert sorted(map(repr, state.keys())) == sorted(map(repr, entry))
            assert sorted(map(repr, state.values())) == sorted(map(repr, entry.values()))
            assert state.is_empty() == (not entry)

    @rule(namespace=NAMESPACES)
    def backend_keys_match(self, namespace: Any) -> None:
        expected = sorted(repr(k) for k, ns in self.model if ns == namespace)
        for backend in (self.rocks, self.heap):
            assert sorted(repr(k) for k in backend.keys("m", namespace)) == expected

    def _check(self, backend: Any) -> None:
        """``backend`` holds exactly the model's maps of its key groups."""
        owned = {slot: entry for slot, entry in self.model.items()
                 if assign_to_key_group(slot[0], MAX_P) in backend.key_group_range}  # fmt: skip
        state = _map(backend)
        found = {}
        for ns in NAMESPACE_LIST:
            state.set_current_namespace(ns)
            for key in backend.keys("m", ns):
                backend.set_current_key(key)
                found[(key, ns)] = dict(state.items())
        assert found == owned

    @rule(split=st.integers(1, MAX_P - 1))
    def canonical_rescale_and_switch(self, split: int) -> None:
        """Canonical snapshot -> two RocksDB halves -> one RocksDB; heap <-> RocksDB."""
        halves = [_rocks(range(0, split)), _rocks(range(split, MAX_P))]
        blobs = self.rocks.snapshot()
        for half in halves:
            half.restore(blobs)
            self._check(half)
        whole = _rocks()
        for half in halves:
            whole.restore(half.snapshot())
            half.dispose()
        from_heap = _rocks()
        from_heap.restore(self.heap.snapshot())
        self._check(from_heap)
        from_heap.dispose()
        heap = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), lambda: 0)
        heap.restore(whole.snapshot())
        self.rocks.dispose()
        self.rocks, self.heap = whole, heap
        self._bind()

    @rule(split=st.integers(1, MAX_P - 1))
    def native_rescale(self, split: int) -> None:
        """A native checkpoint restored as it is (adopted), and split into two (copied)."""
        self.checkpoints += 1
        base = Path(self.rocks.directory).parent / f"native-{id(self)}-{self.checkpoints}"
        download = _native(self.rocks, self.checkpoints, base / "whole")
        halves = [_rocks(range(0, split)), _rocks(range(split, MAX_P))]
        for i, half in enumerate(halves):
            copy = base / f"half-{i}"
            shutil.copytree(download.directory, copy)
            half.restore_native([DownloadedNative(download.handle, str(copy))])
            self._check(half)
            half.dispose()
        adopted = _rocks()
        adopted.restore_native([download])
        shutil.rmtree(base, ignore_errors=True)
        self.rocks.dispose()
        self.rocks = adopted
        self._bind()


MapMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
test_map_state_on_rocksdb_matches_a_dict_and_the_heap = MapMachine.TestCase


TTL_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), MAP_KEYS, st.integers(0, 9)),
        st.tuples(st.just("put_all"), st.dictionaries(MAP_KEYS, st.integers(0, 9), max_size=2)),
        st.tuples(st.sampled_from(["get", "contains", "remove"]), MAP_KEYS),
        st.tuples(st.sampled_from(["items", "keys", "values", "is_empty", "clear", "snapshot"])),
        st.tuples(st.just("tick"), st.integers(0, 120)),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ops=TTL_OPS, on_read=st.booleans(), return_expired=st.booleans())
def test_ttl_map_state_answers_as_the_heap_one(
    ops: list[tuple[Any, ...]], on_read: bool, return_expired: bool
) -> None:
    """Each map entry expires on its own, on RocksDB as on the heap; the snapshots agree."""
    builder = StateTtlConfig.new_builder(100)
    if on_read:
        builder.update_ttl_on_read_and_write()
    if return_expired:
        builder.return_expired_if_not_cleaned_up()
    clock = Clock()
    rocks = _rocks(clock=clock)
    heap = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    states = []
    for backend in (rocks, heap):
        descriptor = MapStateDescriptor("m", None, None)
        descriptor.enable_time_to_live(builder.build())
        states.append(_map(backend, descriptor))
        backend.set_current_key("k")
    try:
        for op, *args in ops:
            if op == "tick":
                clock.now += args[0]
                continue
            if op == "snapshot":
                assert _decoded(rocks) == _decoded(heap)
                continue
            answers = [getattr(state, op)(*args) for state in states]
            if op in ("items", "keys", "values"):
                answers = [sorted(map(repr, answer)) for answer in answers]
            assert answers[0] == answers[1], (op, args)
        assert _decoded(rocks) == _decoded(heap)
    finally:
        rocks.dispose()


def _decoded(backend: Any) -> dict[int, Any]:
    return {g: decode_key_group_blob(b, "op", g) for g, b in backend.snapshot().items()}


def test_a_native_checkpoint_of_the_old_layout_restores_adopted_and_rescaled(
    tmp_path: Path,
) -> None:
    """``data/rocksdb_map_v1.tar.gz`` is a native checkpoint made at 4b1c396, when a map was
    one DB entry per key and namespace: keys "a", "b", 3, ("t", 1), each with map "m" {1:
    "one", "two": 2, (3,): [3]} (and {"x": key} in namespace ("w", 5)), TTL map "mt" {key:
    10} written at 1,000 ms with a TTL of 60 s, and value state "v" str(key); 8 key groups."""
    states = {"m": ("map", False), "mt": ("map", True), "v": ("value", False)}
    handle = IncrementalKeyedHandle(1, "op", "old", (0, MAX_P), MAX_P, states, (), ())
    expected = {key: {1: "one", "two": 2, (3,): [3]} for key in ["a", "b", 3, ("t", 1)]}

    def unpacked(name: str) -> DownloadedNative:
        with tarfile.open(FIXTURE) as archive:
            archive.extractall(tmp_path / name, filter="data")
        return DownloadedNative(handle, str(tmp_path / name))

    ttl = MapStateDescriptor("mt", None, None)
    ttl.enable_time_to_live(StateTtlConfig.new_builder(60_000).build())
    adopted = _rocks(clock=lambda: 2_000)
    halves = [_rocks(range(0, 3), lambda: 2_000), _rocks(range(3, MAX_P), lambda: 2_000)]
    adopted.restore_native([unpacked("whole")])
    for i, half in enumerate(halves):
        half.restore_native([unpacked(f"half-{i}")])
    seen: dict[Any, Any] = {}
    for backend in [adopted, *halves]:
        m, mt = _map(backend), _map(backend, ttl)
        value = backend.get_partitioned_state(ValueStateDescriptor("v", None))
        assert backend._db.get(LAYOUT_KEY) is not None
        for key in backend.keys("m"):
            backend.set_current_key(key)
            assert dict(m.items()) == expected[key] and m.get("two") == 2
            assert mt.get(key) == 10 and list(mt.keys()) == [key]
            assert value.value() == str(key)
            m.set_current_namespace(("w", 5))
            assert dict(m.items()) == {"x": key}
            m.set_current_namespace(VOID_NAMESPACE)
            seen.setdefault(key, 0)
            seen[key] += 1
    assert seen == {key: 2 for key in expected}  # each key once whole, once in its half
    for backend in [adopted, *halves]:
        backend.dispose()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values=st.lists(st.recursive(
    st.one_of(st.integers(), st.text(), st.binary(), st.none(), st.booleans(),
              st.floats(allow_nan=False)),
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3), max_leaves=6,
), max_size=6))  # fmt: skip
def test_the_backend_encoder_gives_a_fresh_picklers_bytes_call_after_call(
    values: list[Any],
) -> None:
    for value in values:
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=5)
        pickler.fast = True
        pickler.dump(value)
        assert ENCODER(value) == buffer.getvalue() == encode_key(value)
        assert ENCODER(value) == buffer.getvalue()  # remembered (int, short str) or not


def test_equal_keys_of_other_types_keep_their_own_bytes_once_one_is_remembered() -> None:
    encoder = KeyEncoder()
    assert encoder(1) == encoder(1) == pickle.dumps(1, protocol=5)
    assert encoder(True) != encoder(1) != encoder(1.0)
    assert encoder((True,)) != encoder((1,))
    assert encoder("1") != encoder(1) and encoder("1") == encode_key("1")


def test_the_encoder_recovers_from_a_value_it_cannot_pickle() -> None:
    encoder = KeyEncoder()
    encoder(("a", 1, "longer than the next one"))
    with pytest.raises((AttributeError, pickle.PicklingError)):  # pickle's choice
        encoder(("a", lambda: 0))
    assert encoder("a") == encode_key("a")


KEY_SAMPLES = [0, 7, -1, 2**40, "user-1", "é", b"\x00b", ("a", 1), (("x", 2), "y"), None, 1.5]


def test_key_bytes_are_the_same_in_another_process_with_another_hash_seed() -> None:
    """Keys written by one worker are read by another after a rescale."""
    script = (
        "from undertow.state.rocksdb import RocksDBKeyedStateBackend\n"
        "b = RocksDBKeyedStateBackend('op', 8, range(8), lambda: 0)\n"
        f"print(' '.join(b.encode_key(k).hex() for k in {KEY_SAMPLES!r}))\n"
        "b.dispose()\n"
    )
    here = _rocks()
    mine = " ".join(here.encode_key(k).hex() for k in KEY_SAMPLES)
    here.dispose()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
        assert out == mine


def test_prefix_end_bounds_exactly_the_keys_with_the_prefix() -> None:
    assert prefix_end(b"ab.") == b"ab/"
    assert prefix_end(b"a\xff\xff") == b"b"
    with pytest.raises(ValueError, match="0xff"):
        prefix_end(b"\xff")
    for prefix in (b"ab.", b"a\xff\xff"):
        assert prefix + b"\xff" * 4 < prefix_end(prefix) and prefix < prefix_end(prefix)


def test_entries_split_and_group_by_their_key_and_namespace() -> None:
    first = b"\x00\x01\x00" + encode_key("k")
    second = b"\x00\x01\x01" + encode_key(("k", "w"))
    assert split_entry_key(first[3:] + encode_key(5)) == len(first) - 3
    entries = [
        (first + encode_key(1), encode_key("one")),
        (first + encode_key("two"), encode_key(2)),
        (second + encode_key(1), encode_key(None)),
    ]
    assert list(group_map_entries(entries)) == [
        (first[:3], "k", {1: "one", "two": 2}),
        (second[:3], ("k", "w"), {1: None}),
    ]
    assert list(group_map_entries([])) == []


def test_a_map_is_a_contiguous_prefix_scan_and_clear_leaves_its_neighbours() -> None:
    backend = _rocks()
    m = _map(backend)
    for key in ("a", "ab", "b"):  # "a"'s prefix is not a prefix of "ab"'s: pickles delimit
        backend.set_current_key(key)
        m.put_all({i: key for i in range(3)})
    backend.set_current_key("a")
    assert len(list(scan_prefix(backend.column("m"), backend.current_void_db_key()))) == 3
    m.clear()
    assert m.is_empty() and m.get(0) is None
    for key in ("ab", "b"):
        backend.set_current_key(key)
        assert dict(m.items()) == {i: key for i in range(3)}
    assert sorted(backend.keys("m")) == ["ab", "b"]
    backend.dispose()


def _ttl_descriptor() -> MapStateDescriptor:
    descriptor = MapStateDescriptor("m", None, None)
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(100).build())
    return descriptor


def test_a_map_restored_across_a_ttl_change_keeps_its_entries_either_way() -> None:
    """Entries restored without TTL start their TTL at the restore, per map key; restored
    with TTL into a state without, they lose their timestamps (registered before or after
    the restore: both conversions)."""
    clock = Clock()
    plain = _rocks(clock=clock)
    backend_keys: list[Any] = ["k", 5]
    for key in backend_keys:
        plain.set_current_key(key)
        _map(plain).put_all({1: "a", "b": [2]})
    restored_first = _rocks(clock=clock)
    restored_first.restore(plain.snapshot())
    registered_first = _rocks(clock=clock)
    with_ttl = _map(registered_first, _ttl_descriptor())
    registered_first.restore(plain.snapshot())
    for backend in (restored_first, registered_first):
        state = _map(backend, _ttl_descriptor())
        assert state is with_ttl or backend is restored_first
        for key in backend_keys:
            backend.set_current_key(key)
            assert dict(state.items()) == {1: "a", "b": [2]}
    back = _rocks(clock=clock)
    back.restore(registered_first.snapshot())
    without = _map(back)
    for key in backend_keys:
        back.set_current_key(key)
        assert dict(without.items()) == {1: "a", "b": [2]}
    clock.now += 100
    for key in backend_keys:
        restored_first.set_current_key(key)
        assert _map(restored_first, _ttl_descriptor()).is_empty()
        back.set_current_key(key)
        assert not without.is_empty()
    for backend in (plain, restored_first, registered_first, back):
        backend.dispose()


def test_a_fold_that_reads_a_map_reads_the_folded_records_key() -> None:
    """``fold_values`` makes each record's key current before its fold runs, so a map read
    there is the map of that record's key (int keys skip ``set_current_key``)."""
    backend = _rocks()
    weights = _map(backend)
    for key in range(6):
        backend.set_current_key(key)
        weights.put("w", key * 10)
    total = backend.get_partitioned_state(ValueStateDescriptor("total", None))

    def fold(old: int, value: int) -> int:
        return old + value * weights.get("w")

    keys = [0, 1, 2, 3, 4, 5] * 2
    out = backend.fold_values(total, keys, [1] * len(keys), fold)
    assert out[6:] == [1 + key * 10 for key in range(6)]
    backend.dispose()


def test_an_expired_entry_read_once_is_gone_from_the_db() -> None:
    """With ``ReturnExpiredIfNotCleanedUp`` the read that finds an entry expired returns it
    and cleans it up (Flink's cleanup on read): the next read finds nothing, on RocksDB as on
    the heap, and the DB holds only the live entry."""
    clock = Clock()
    descriptor = MapStateDescriptor("m", None, None)
    descriptor.enable_time_to_live(
        StateTtlConfig.new_builder(100)
        .return_expired_if_not_cleaned_up()
        .disable_cleanup_in_background()  # no incremental cleanup on the heap before the read
        .build()
    )
    rocks = _rocks(clock=clock)
    heap = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), clock)
    states = []
    for backend in (rocks, heap):
        backend.set_current_key("k")
        states.append(_map(backend, descriptor))
        states[-1].put("old", 1)
    clock.now += 50
    for state in states:
        state.put("new", 2)
    clock.now += 60  # "old" expired, "new" not
    assert [s.get("old") for s in states] == [1, 1]
    assert [s.get("old") for s in states] == [None, None]
    assert len(list(scan_prefix(rocks.column("m"), rocks.current_void_db_key()))) == 1
    rocks.dispose()
