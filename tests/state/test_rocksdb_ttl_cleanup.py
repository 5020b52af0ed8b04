"""TTL background cleanup on the RocksDB backend: expired entries whose keys are never read
again leave the DB within a bounded number of state accesses (values, maps, lists); live
values, elements and timestamps are never changed (a read returns what it would without the
cleanup); a snapshot taken before the cleanup deleted an entry still holds it, and the next
incremental checkpoint no longer does."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.state.clock import Clock

from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.state import rocksdb_ttl_cleanup
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.heap_ttl import TtlPolicy
from undertow.state.heap_ttl_cleanup import PASSES_PER_TTL, TtlPace
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_incremental import IncrementalKeyedHandle, upload
from undertow.storage import CheckpointStorage

MAX_P = 16
TTL = 100


def _config(cleanup: str, entries: int = 1000) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(TTL)
    if cleanup == "off":
        builder.disable_cleanup_in_background()
    elif cleanup == "entries":
        builder.cleanup_in_rocksdb_compact_filter(entries)
    return builder.build()  # "default": PyFlink's, in background, 1000 entries a time query


def _backend(tmp: Path, clock: Clock, incremental: bool = False) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend(
        "op", MAX_P, range(MAX_P), clock, local_dir=str(tmp / "local"), incremental=incremental
    )


def _state(backend: RocksDBKeyedStateBackend, descriptor: StateDescriptor, config: Any) -> Any:
    descriptor.enable_time_to_live(config)
    return backend.get_partitioned_state(descriptor)


def _entries(backend: RocksDBKeyedStateBackend, name: str) -> int:
    """The DB entries of state ``name`` (a map: one per map key)."""
    column: Any = backend.column(name)
    return sum(1 for _ in column.values())


def _sessions(tmp: Path, config: StateTtlConfig, accesses: int) -> tuple[int, int]:
    """1,000 keys written once and never read again, then ``accesses`` writes and reads of
    one live key, 1 ms apart: the DB entries of the state, before and after."""
    clock = Clock()
    backend = _backend(tmp, clock)
    state = _state(backend, ValueStateDescriptor("session", None), config)
    for key in range(1_000):
        backend.set_current_key(f"session-{key}")
        state.update(key)
    clock.now += TTL + 1
    before = _entries(backend, "session")
    backend.set_current_key("live")
    for _ in range(accesses // 2):
        clock.now += 1
        state.update(-1)
        assert state.value() == -1
    after = _entries(backend, "session")
    backend.dispose()
    return before, after


def test_expired_entries_nobody_reads_leave_within_a_bounded_number_of_accesses(
    tmp_path: Path,
) -> None:
    # a walk every 32 accesses, counted from the first write: the first after the expiry
    # (the 24th access) knows 1,000 entries from RocksDB's estimate and is due more than a
    # pass, at most 1,000 entries (the default): the next one finds the last of them
    assert _sessions(tmp_path / "a", _config("default"), 60) == (1_000, 1)
    # 100 entries a walk: all gone within 11 walks (344 accesses)
    assert _sessions(tmp_path / "b", _config("entries", 100), 350) == (1_000, 1)


def test_query_time_after_num_entries_caps_the_entries_a_walk_looks_at(tmp_path: Path) -> None:
    """One walk (at the 24th access) of at most 100 entries: the rest stay."""
    assert _sessions(tmp_path, _config("entries", 100), 40) == (1_000, 901)


def test_without_background_cleanup_expired_entries_stay(tmp_path: Path) -> None:
    """The control: PyFlink's ``disable_cleanup_in_background()`` keeps them until read."""
    assert _sessions(tmp_path, _config("off"), 1_000) == (1_000, 1_001)


def test_maps_lists_and_aggregates_lose_only_their_expired_entries_and_elements(
    tmp_path: Path,
) -> None:
    clock = Clock()
    backend = _backend(tmp_path, clock)
    config = _config("default")
    lists = _state(backend, ListStateDescriptor("l", None), config)
    maps = _state(backend, MapStateDescriptor("m", None, None), config)
    sums = _state(backend, AggregatingStateDescriptor("s", _Sum(), None), config)
    for key in ("old", "mixed"):
        backend.set_current_key(key)
        lists.add("a")
        lists.add_all(["b", "c"])  # an appended entry: several pickles
        maps.put_all({"a": 1, "b": 2})
        sums.add(1)
    clock.now += TTL // 2
    backend.set_current_key("mixed")
    lists.add("d")
    maps.put("d", 4)
    clock.now += TTL // 2 + 1  # "old"'s all expired; "mixed" keeps "d"
    backend.set_current_key("other")
    for _ in range(40):  # each state cleans its own entries on its own accesses
        lists.get()
        maps.is_empty()
        sums.get()
    assert (_entries(backend, "l"), _entries(backend, "m"), _entries(backend, "s")) == (1, 1, 0)
    column: Any = backend.column("l")
    (raw,) = list(column.values())
    assert [v for v, _ in pickle.loads(raw)] == ["d"], "one pickle, only the live element"
    backend.set_current_key("mixed")
    assert (list(lists.get()), dict(maps.items())) == (["d"], {"d": 4})
    backend.dispose()


class _Sum:
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, acc: int) -> int:
        return acc + value

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def _checkpoint(backend: RocksDBKeyedStateBackend, storage: CheckpointStorage,
                native: Any) -> IncrementalKeyedHandle:  # fmt: skip
    handle = upload(native, storage.write_shared_file, storage.write_file)
    backend.notify_checkpoint_complete(native.checkpoint_id)
    return handle


def _restored(tmp: Path, storage: CheckpointStorage, handle: IncrementalKeyedHandle,
              cid: int) -> RocksDBKeyedStateBackend:  # fmt: skip
    snapshot = SubtaskSnapshot({"op": OperatorSnapshot(keyed_native=handle)})
    snapshot = pickle.loads(pickle.dumps(snapshot))  # as read back from a state file
    snapshot.download_native(storage.read_file, cid, str(tmp / f"restored-{cid}"))
    restored = _backend(tmp / f"restored-{cid}", Clock(), incremental=True)
    restored.restore_native([snapshot.operators["op"].keyed_native])
    return restored


def test_snapshots_taken_before_the_cleanup_hold_its_deletions_and_later_checkpoints_not(
    tmp_path: Path,
) -> None:
    """Entries live when a full snapshot and a native checkpoint are taken expire and are
    deleted by the walk before the checkpoint is uploaded: both still hold them. The next
    incremental checkpoint (a deletion is a write) does not."""
    clock = Clock()
    backend = _backend(tmp_path, clock, incremental=True)
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), "job")
    state = _state(backend, ValueStateDescriptor("v", None), _config("default"))
    for key in range(100):
        backend.set_current_key(key)
        state.update(key)
    blobs = backend.snapshot()
    pending = backend.native_checkpoint(1, False)  # taken, not uploaded yet
    clock.now += TTL + 1
    backend.set_current_key("reader")
    for _ in range(80):
        clock.now += 1
        state.value()
    assert _entries(backend, "v") == 0
    first = _checkpoint(backend, storage, pending)
    second = _checkpoint(backend, storage, backend.native_checkpoint(2, False))
    assert {f.local_name for f in second.shared} != {f.local_name for f in first.shared}
    one, two = _restored(tmp_path, storage, first, 1), _restored(tmp_path, storage, second, 2)
    full = _backend(tmp_path / "full", Clock())
    full.restore(blobs)
    assert [_entries(b, "v") for b in (full, one, two)] == [100, 100, 0]
    for restored in (full, one, two, backend):
        restored.dispose()


OPS = st.lists(
    st.tuples(st.sampled_from(["put", "get", "tick"]), st.integers(0, 5), st.integers(1, 40)),
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(OPS, st.integers(1, 7))
@example(
    [("put", 0, 1), ("tick", 0, 40), ("tick", 0, 40), ("tick", 0, 5), ("get", 1, 0),
     ("get", 0, 0)], 7,
)  # fmt: skip  # near its end of life, the entry is still read
def test_reads_are_the_same_with_and_without_the_cleanup(ops: list[Any], entries: int) -> None:
    """Random writes, reads and clock ticks over value, list and map state, on a backend
    that looks at ``entries`` DB entries a walk (a walk at every access) and on one without
    the cleanup: every read agrees."""
    with mock.patch.object(rocksdb_ttl_cleanup, "BATCH", 1):
        _compare(ops, entries)


def _compare(ops: list[Any], entries: int) -> None:
    clocks = [Clock(), Clock()]
    backends = [RocksDBKeyedStateBackend("op", 4, range(4), c) for c in clocks]
    states = []
    for backend, config in zip(backends, (_config("entries", entries), _config("off"))):
        states.append((_state(backend, ValueStateDescriptor("v", None), config),
                       _state(backend, ListStateDescriptor("l", None), config),
                       _state(backend, MapStateDescriptor("m", None, None), config)))  # fmt: skip
    try:
        for op, key, amount in ops:
            if op == "tick":
                for c in clocks:
                    c.now += amount
                continue
            reads = []
            for backend, (value, elements, mapping) in zip(backends, states):
                backend.set_current_key(key)
                if op == "put":
                    value.update(amount)
                    elements.add(amount)
                    mapping.put(amount % 3, amount)
                else:
                    reads.append((value.value(), list(elements.get()),
                                  sorted(mapping.items())))  # fmt: skip
            if reads:
                assert reads[0] == reads[1]
    finally:
        for backend in backends:
            backend.dispose()


@pytest.mark.parametrize("deletes_per_flush", [100, 10_000])
def test_the_walk_flushes_the_memtable_once_it_deleted_more_than_a_pass_holds(
    tmp_path: Path, deletes_per_flush: int
) -> None:
    """Tombstones in a memtable are stepped over by every later pass (in a file, RocksDB's
    compactions drop them): after 1,000 deletions, more than ``deletes_per_flush`` and the
    pass so far, the memtable is flushed; after fewer, it still holds them."""
    clock = Clock()
    backend = _backend(tmp_path, clock)
    state = _state(backend, ValueStateDescriptor("v", None), _config("default"))
    with mock.patch.object(rocksdb_ttl_cleanup, "DELETES_PER_FLUSH", deletes_per_flush):
        for key in range(1_000):
            backend.set_current_key(key)
            state.update(key)
        clock.now += TTL + 1
        backend.set_current_key("reader")
        for _ in range(60):
            clock.now += 1
            state.value()
    assert _entries(backend, "v") == 0
    column: Any = backend.column("v")
    in_memtable = column.property_int_value("rocksdb.num-entries-active-mem-table")
    assert in_memtable == (0 if deletes_per_flush < 1_000 else 2_000)
    backend.dispose()


def test_the_walk_passes_once_a_ttl_where_the_heap_passes_twice(tmp_path: Path) -> None:
    """Half a TTL after the last walk, of a state of 1,000 entries: the heap's pace is due a
    whole pass, the RocksDB walk's half of one (a look costs an iterator step and an unpickle
    there; an expired entry on disk costs little)."""
    clock = Clock()
    policy = TtlPolicy(_config("default"), clock)
    heap = TtlPace(policy, 10**6, lambda: 1_000)
    backend = _backend(tmp_path, clock)
    state = _state(backend, ValueStateDescriptor("v", None), _config("default"))
    walk = state.sweep.__self__  # the state's TtlWalk
    walk._last_pass = 1_000
    clock.now += TTL // 2
    assert heap.due()[0] == PASSES_PER_TTL * 500 + 1 == 1_001
    assert walk._pace.due()[0] == rocksdb_ttl_cleanup.PASSES_PER_TTL * 500 + 1 == 501
    backend.dispose()
