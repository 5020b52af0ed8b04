"""The backends' batch fold (heap, RocksDB) equals the record-at-a-time loop of the base class."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import StateError
from undertow.state.backend import KeyedStateBackend
from undertow.state.descriptors import (
    ListStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
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


@each_backend
def test_a_fold_on_other_than_value_state_is_refused_naming_the_operator(kind: str) -> None:
    backend = _backend(kind)
    state = backend.get_partitioned_state(ListStateDescriptor("seen"))
    with pytest.raises(StateError, match="operator 'op': a batch fold needs value state, got"):
        KeyedStateBackend.fold_values(backend, state, ["a"], [1], _add)


# --- RocksDB: the write-back cache of batch folds (undertow.state.rocksdb_fold) -------------

FOLD_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("fold"), st.lists(st.tuples(st.integers(0, 7), st.integers(-5, 5)),
                                            max_size=6)),
        st.tuples(st.just("value"), st.integers(0, 7)),
        st.tuples(st.just("update"), st.integers(0, 7), st.integers(-5, 5)),
        st.tuples(st.just("clear"), st.integers(0, 7)),
        st.tuples(st.just("checkpoint")),
    ),
    max_size=25,
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(ops=FOLD_OPS)
def test_rocksdb_fold_cache_is_invisible(ops: list[tuple[Any, ...]]) -> None:
    """Folds mixed with reads, writes and clears through the state object and with native
    checkpoints behave as on the heap; a 4-entry cache forces write-backs; a native checkpoint
    after the last operation, restored, holds every folded value."""
    import tempfile

    from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
    from undertow.state.rocksdb_incremental import upload
    from undertow.storage import CheckpointStorage

    with tempfile.TemporaryDirectory() as tmp:
        rocks = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0, local_dir=tmp,
                                         incremental=True)  # fmt: skip
        rocks._write_back.limit = 4
        heap = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
        d = ValueStateDescriptor("sum")
        states = [(b, b.get_partitioned_state(d)) for b in (rocks, heap)]
        storage = CheckpointStorage(tmp + "/chk", "job")
        handle = None
        for cid, op in enumerate([*ops, ("checkpoint",)], start=1):
            results = []
            for backend, state in states:
                s: Any = state
                if op[0] == "fold":
                    keys, values = [k for k, _ in op[1]], [v for _, v in op[1]]
                    results.append(backend.fold_values(state, keys, values, _add))
                elif op[0] == "checkpoint":
                    if backend is rocks:
                        native = rocks.native_checkpoint(cid, False)
                        handle = upload(native, storage.write_shared_file, storage.write_file)
                        rocks.notify_checkpoint_complete(cid)
                    last = cid
                else:
                    backend.set_current_key(op[1])
                    if op[0] == "value":
                        results.append(s.value())
                    elif op[0] == "update":
                        s.update(op[2])
                    else:
                        s.clear()
            assert results[:1] == results[1:], op
        keys = range(8)
        expected = {}
        for key in keys:
            heap.set_current_key(key)
            expected[key] = states[1][1].value()  # type: ignore[attr-defined]
        if handle is not None:
            snapshot = SubtaskSnapshot({"op": OperatorSnapshot(keyed_native=handle)})
            snapshot.download_native(storage.read_file, last, tmp + "/dl")
            restored = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0,
                                                local_dir=tmp)  # fmt: skip
            restored.restore_native([snapshot.operators["op"].keyed_native])
            state: Any = restored.get_partitioned_state(d)
            for key in keys:
                restored.set_current_key(key)
                assert state.value() == expected[key], key
            restored.dispose()
        rocks.dispose()


def test_rocksdb_fold_cache_is_bounded(tmp_path: Any) -> None:
    rocks = RocksDBKeyedStateBackend("op", 128, range(128), lambda: 0, local_dir=str(tmp_path))
    state = rocks.get_partitioned_state(ValueStateDescriptor("sum"))
    for start in range(0, 30_000, 1000):
        keys = list(range(start, start + 1000))
        rocks.fold_values(state, keys, [1] * 1000, _add)
        assert len(rocks._write_back) <= rocks._write_back.limit
    assert sum(1 for _ in rocks.keys("sum")) == 30_000
    rocks.dispose()
