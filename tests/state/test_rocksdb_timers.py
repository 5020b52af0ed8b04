"""Timers in RocksDB (``state.backend.rocksdb.timer-service.factory: ROCKSDB``): the queue
matches the heap queue, timers fire in order and once, live in the DB (the Python heap does not
grow with their number), and come back from native checkpoints in place and rescaled, and from
canonical snapshots into either backend."""

from __future__ import annotations

import gc
import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.test_timers import Recorder

from undertow.core.errors import StateError
from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.runtime.task.timers import TimerServiceManager, _TimerQueue
from undertow.state import rocksdb_timers
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_incremental import upload
from undertow.state.rocksdb_timers import RocksDBTimerQueue, timer_column
from undertow.storage import CheckpointStorage

MAX_P = 8


class Clock:
    """A processing-time service that never fires by itself (tests fire explicitly)."""

    def __init__(self) -> None:
        self.registered: list[int] = []

    def current_processing_time(self) -> int:
        return 0

    def register_timer(self, timestamp: int, callback: Any) -> Any:
        self.registered.append(timestamp)

        class Handle:
            def cancel(self) -> None:
                pass

        return Handle()


def _rocksdb(tmp: Path, key_groups: range = range(MAX_P), factory: str = "ROCKSDB") -> Any:
    return RocksDBKeyedStateBackend(
        "win", MAX_P, key_groups, lambda: 0, local_dir=str(tmp / "local"), incremental=True,
        timer_service=factory,
    )  # fmt: skip


def _manager(backend: Any) -> tuple[TimerServiceManager, Recorder, Clock]:
    clock = Clock()
    manager = TimerServiceManager(backend, clock)  # type: ignore[arg-type]
    recorder = Recorder(backend)
    manager.get("timers", recorder)
    return manager, recorder, clock


def _register(manager: TimerServiceManager, keys: range, times: list[int]) -> None:
    service = manager.services["timers"]
    backend = service._backend
    for key in keys:
        if assign_to_key_group(key, MAX_P) not in backend.key_group_range:
            continue
        backend.set_current_key(key)
        for t in times:
            service.register_event_time_timer(f"w{t}", t)
        service.register_processing_time_timer("p", 1_000 + key)


# --- the queue against the heap queue --------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "pop", "peek"]),
        st.integers(-3, 12),
        st.integers(0, 6),
        st.sampled_from(["x", ("w", 1)]),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_queue_matches_the_heap_queue(ops: list[tuple[str, int, int, Any]]) -> None:
    """Same answers as the heap queue for any program; a 3-entry head cache exercises the
    refills and evictions. Timers of one timestamp may pop in another order (by key bytes)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        backend = _rocksdb(Path(tmp))
        try:
            queue = RocksDBTimerQueue(backend.column("q"), MAX_P, cache_size=3)
            model = _TimerQueue()
            for op, ts, key, ns in ops:
                if op == "add":
                    new = (ts, key, ns) not in model.entries()
                    earliest = queue.add(ts, key, ns)
                    model.add(ts, key, ns)
                    assert earliest == (new and model.peek_timestamp() == ts)
                elif op == "remove":
                    queue.remove(ts, key, ns)
                    model.remove(ts, key, ns)
                elif op == "pop":
                    got = queue.pop_due(ts)
                    if got is None:
                        assert model.peek_timestamp() is None or model.peek_timestamp() > ts
                    else:
                        assert got[0] == model.peek_timestamp()
                        assert got in model.entries()
                        model.remove(*got)
                assert queue.peek_timestamp() == model.peek_timestamp()
                assert len(queue) == len(model)
                assert queue.cached() <= 3
            assert sorted(queue.entries(), key=repr) == sorted(model.entries(), key=repr)
        finally:
            backend.dispose()


def test_timers_fire_in_order_and_once(tmp_path: Path) -> None:
    backend = _rocksdb(tmp_path)
    manager, recorder, _ = _manager(backend)
    _register(manager, range(300), [500, 100, 300])
    service = manager.services["timers"]
    service.advance_watermark(299)
    service.advance_watermark(299)
    assert [f[1] for f in recorder.fired] == [100] * 300
    service.advance_watermark(10_000)
    times = [f[1] for f in recorder.fired]
    assert times == sorted(times) and len(times) == 900
    assert len(set(recorder.fired)) == 900, "no timer fired twice"
    assert service.num_event_time_timers() == 0
    service.fire_all_processing_timers()
    assert [f[1] for f in recorder.fired[900:]] == [1_000 + k for k in range(300)]
    backend.dispose()


def test_timers_live_in_rocksdb_not_on_the_python_heap(tmp_path: Path) -> None:
    """100,000 event-time timers: the Python heap holds at most the head cache of them (with
    the HEAP factory the same timers take tens of MiB)."""
    grown = {}
    for factory in ("ROCKSDB", "HEAP"):
        backend = _rocksdb(tmp_path / factory, factory=factory)
        manager, _, _ = _manager(backend)
        service = manager.services["timers"]
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for key in range(100_000):
            backend.set_current_key(key)
            service.register_event_time_timer(None, 5_000 + key % 977)
        gc.collect()
        grown[factory] = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert service.num_event_time_timers() == 100_000
        if factory == "ROCKSDB":
            column: Any = backend.column(timer_column("timers", "event"))
            assert len(list(column.keys())) == 100_000, "every timer is a DB entry"
            assert service._event.cached() <= rocksdb_timers.HEAD_CACHE_SIZE
        backend.dispose()
    assert grown["ROCKSDB"] < 2 * 2**20, grown
    assert grown["HEAP"] > 10 * grown["ROCKSDB"], grown


# --- snapshots ---------------------------------------------------------------------------------


def _native_roundtrip(
    tmp: Path, backend: Any, manager: TimerServiceManager, key_groups: list[range]
) -> list[tuple[Any, TimerServiceManager, Recorder, Clock]]:
    """A native checkpoint of ``backend`` (timers snapshot as the chain takes it), uploaded,
    then restored into one new backend per range of ``key_groups``."""
    storage = CheckpointStorage(str(tmp / "chk"), "job")
    native = backend.native_checkpoint(7, False)
    timer_blobs = manager.snapshot(native=True)
    assert timer_blobs == {}, "timers in RocksDB are in the native checkpoint, not in blobs"
    handle = upload(native, storage.write_shared_file, storage.write_file)
    restored = []
    for i, kg in enumerate(key_groups):
        snapshot = SubtaskSnapshot({"win": OperatorSnapshot(keyed_native=handle)})
        snapshot = pickle.loads(pickle.dumps(snapshot))
        snapshot.download_native(storage.read_file, 7, str(tmp / f"dl{i}"))
        target = _rocksdb(tmp / f"r{i}", kg)
        target.restore_native([snapshot.operators["win"].keyed_native])
        restored.append((target, *_manager(target)))
    return restored


@pytest.mark.parametrize("rescale", [False, True], ids=["same-range", "rescaled"])
def test_timers_survive_a_native_checkpoint(tmp_path: Path, rescale: bool) -> None:
    backend = _rocksdb(tmp_path)
    manager, _, _ = _manager(backend)
    _register(manager, range(200), [100, 200])
    ranges = [range(0, 3), range(3, MAX_P)] if rescale else [range(MAX_P)]
    restored = _native_roundtrip(tmp_path, backend, manager, ranges)
    fired: list[tuple[str, int, Any, Any]] = []
    for target, new_manager, recorder, clock in restored:
        owned = [k for k in range(200) if assign_to_key_group(k, MAX_P) in target.key_group_range]
        assert clock.registered == [1_000 + min(owned)], "the earliest restored one is scheduled"
        service = new_manager.services["timers"]
        service.advance_watermark(1_000)
        service.fire_all_processing_timers()
        for f in recorder.fired:
            assert assign_to_key_group(f[2], MAX_P) in target.key_group_range
        fired += recorder.fired
        target.dispose()
    expected = {("event", t, k, f"w{t}") for k in range(200) for t in (100, 200)}
    expected |= {("processing", 1_000 + k, k, "p") for k in range(200)}
    assert sorted(fired, key=repr) == sorted(expected, key=repr)
    backend.dispose()


@pytest.mark.parametrize("target", ["heap", "rocksdb"])
def test_canonical_snapshot_restores_timers_on_either_backend(tmp_path: Path, target: str) -> None:
    backend = _rocksdb(tmp_path)
    manager, _, _ = _manager(backend)
    _register(manager, range(50), [100])
    blobs = dict(manager.snapshot())
    assert blobs, "a canonical snapshot writes the timers in RocksDB as blobs"
    other: Any = (HeapKeyedStateBackend("win", MAX_P, range(MAX_P), lambda: 0)
                  if target == "heap" else _rocksdb(tmp_path / "other"))  # fmt: skip
    clock = Clock()
    heap_manager = TimerServiceManager(other, clock)  # type: ignore[arg-type]
    heap_manager.restore(blobs)
    recorder = Recorder(other)
    service = heap_manager.get("timers", recorder)
    service.advance_watermark(100)
    assert sorted(f[2] for f in recorder.fired) == list(range(50))
    assert service.num_processing_time_timers() == 50
    backend.dispose()


def test_heap_factory_refuses_a_checkpoint_with_timers_in_rocksdb(tmp_path: Path) -> None:
    backend = _rocksdb(tmp_path)
    manager, _, _ = _manager(backend)
    _register(manager, range(10), [100])
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    handle = upload(backend.native_checkpoint(3, False), storage.write_shared_file,
                    storage.write_file)  # fmt: skip
    snapshot = SubtaskSnapshot({"win": OperatorSnapshot(keyed_native=handle)})
    snapshot.download_native(storage.read_file, 3, str(tmp_path / "dl"))
    heap_timers = _rocksdb(tmp_path / "h", factory="HEAP")
    with pytest.raises(StateError, match=r"'win'.*checkpoint 3.*_timer_state/event_timers.*HEAP"):
        heap_timers.restore_native([snapshot.operators["win"].keyed_native])
    heap_timers.dispose()
    backend.dispose()


def test_state_names_of_timers_are_reserved(tmp_path: Path) -> None:
    from undertow.state.descriptors import ValueStateDescriptor

    backend = _rocksdb(tmp_path)
    with pytest.raises(StateError, match="reserved for timers"):
        backend.get_partitioned_state(ValueStateDescriptor("_timer_state/event_x", None))
    backend.dispose()


def test_queue_keys_sort_by_time_then_key_group(tmp_path: Path) -> None:
    backend = _rocksdb(tmp_path)
    queue = backend.timer_queue("t", "event")
    assert isinstance(queue, RocksDBTimerQueue)
    for ts in (5, -(2**62), 2**62, 0, -1):
        queue.add(ts, 1, None)
    assert [e[0] for e in queue.entries()] == [-(2**62), -1, 0, 5, 2**62]
    backend.dispose()
