"""Heap incremental checkpoints (:mod:`undertow.state.heap_incremental`): every write path marks
its key group, only changed key groups are written, and a restore from any completed checkpoint
gives exactly the state at that checkpoint, also when completions reach the subtask late and
the coordinator deleted what subsumed checkpoints held (Hypothesis, with the real registry)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.state.clock import Clock

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError, StateError
from undertow.runtime.checkpoint.shared_state_registry import SharedStateRegistry
from undertow.state.backend import VOID_NAMESPACE
from undertow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from undertow.state.factory import keyed_backend_factory
from undertow.state.heap import HeapKeyedStateBackend, decode_key_group_blob
from undertow.state.heap_incremental import (
    CompactionPolicy,
    HeapIncrementalHandle,
    download,
)
from undertow.state.key_groups import assign_to_key_group
from undertow.storage import FileHandle
from undertow.storage.errors import CorruptCheckpointError

MAX_P = 16


class Store:
    """``<job>/shared/`` in memory, verified on read like :class:`CheckpointStorage`."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def write(self, name: str, data: bytes) -> FileHandle:
        path = f"shared/{name}"
        assert path not in self.files, f"{path} written twice"
        self.files[path] = data
        return FileHandle.of(path, data)

    def read(self, handle: FileHandle, checkpoint_id: int) -> bytes:
        data = self.files.get(handle.path)
        if data is None or hashlib.sha256(data).hexdigest() != handle.sha256:
            message = f"checkpoint {checkpoint_id}: {handle.path} missing or corrupt"
            raise CorruptCheckpointError(message, checkpoint=checkpoint_id, path=handle.path)
        return data


def new_backend(clock: Callable[[], int] = lambda: 0, key_groups: range = range(MAX_P),
                policy: CompactionPolicy | None = None) -> HeapKeyedStateBackend:  # fmt: skip
    return HeapKeyedStateBackend("op", MAX_P, key_groups, clock, incremental=True,
                                 compaction=policy or CompactionPolicy(1000, 1000.0))  # fmt: skip


def checkpoint(b: HeapKeyedStateBackend, store: Store, cid: int,
               full: bool = False) -> HeapIncrementalHandle:  # fmt: skip
    native = b.native_checkpoint(cid, full)
    native.blobs.result()  # the task thread's part
    return native.upload(store.write)


def restore(handle: HeapIncrementalHandle, store: Store, cid: int,
            clock: Callable[[], int] = lambda: 0, key_groups: range = range(MAX_P),
            ) -> HeapKeyedStateBackend:  # fmt: skip
    b = new_backend(clock, key_groups)
    b.restore_native([download(handle, store.read, cid)])
    return b


def canonical(b: HeapKeyedStateBackend) -> dict[int, Any]:
    """The backend's whole state as a full snapshot decodes (expired TTL entries left out)."""
    blobs = b.snapshot().result()
    return {kg: decode_key_group_blob(blob, "op", kg)["states"] for kg, blob in blobs.items()}


def written(handle: HeapIncrementalHandle) -> set[int]:
    """The key groups this checkpoint wrote itself (the others reuse earlier segments)."""
    return {kg for kg, (i, _, _) in handle.groups.items()
            if handle.segments[i].created_by == handle.checkpoint_id}  # fmt: skip


def keys_in_distinct_groups(n: int) -> list[int]:
    found: dict[int, int] = {}
    k = 0
    while len(found) < n:
        found.setdefault(assign_to_key_group(k, MAX_P), k)
        k += 1
    return list(found.values())


A, B, C, D = keys_in_distinct_groups(4)


class Count:
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, acc: int) -> int:
        return acc + value

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def descriptors() -> dict[str, Any]:
    return {
        "v": ValueStateDescriptor("v", None),
        "l": ListStateDescriptor("l", None),
        "m": MapStateDescriptor("m", None, None),
        "r": ReducingStateDescriptor("r", lambda a, b: a + b),
        "a": AggregatingStateDescriptor("a", Count()),
    }


def fill(b: HeapKeyedStateBackend) -> dict[str, Any]:
    s = {name: b.get_partitioned_state(d) for name, d in descriptors().items()}
    for key in (A, B, C, D):
        b.set_current_key(key)
        s["v"].update(key)
        s["l"].add(key)
        s["m"].put("x", key)
        s["r"].add(key)
        s["a"].add(key)
    return s


def _fold(b: HeapKeyedStateBackend, s: dict[str, Any]) -> None:
    # A then D: the fold must mark A's group itself (the last key, D, is left current anyway)
    b.fold_values(s["v"], [A, D], [5, 6], lambda old, new: old + new)


def _fold_keyed(b: HeapKeyedStateBackend, s: dict[str, Any]) -> None:
    # a built-in aggregation's fold (no key context): A's group must be marked all the same
    b.fold_keyed(s["v"], [(A, 5), (D, 6)], lambda r: r[0], lambda old, new: new[1],
                 key_context=False)  # fmt: skip


def _window(b: HeapKeyedStateBackend, s: dict[str, Any]) -> None:
    b.set_current_key(A)
    s["l"].set_current_namespace("w1")
    s["l"].add(1)
    s["l"].set_current_namespace("w2")
    s["l"].add(2)
    s["l"].merge_namespaces("w3", ["w1", "w2"])
    s["l"].set_current_namespace(VOID_NAMESPACE)


WRITES: dict[str, Callable[[HeapKeyedStateBackend, dict[str, Any]], None]] = {
    "value-update": lambda b, s: (b.set_current_key(A), s["v"].update(99)),
    "value-clear": lambda b, s: (b.set_current_key(A), s["v"].clear()),
    "list-add": lambda b, s: (b.set_current_key(A), s["l"].add(7)),
    "list-update": lambda b, s: (b.set_current_key(A), s["l"].update([1, 2])),
    "list-clear": lambda b, s: (b.set_current_key(A), s["l"].clear()),
    "map-put-list": lambda b, s: (b.set_current_key(A), s["m"].put("y", [1])),
    "map-put": lambda b, s: (b.set_current_key(A), s["m"].put("z", 1)),
    "map-remove": lambda b, s: (b.set_current_key(A), s["m"].remove("x")),
    "map-clear": lambda b, s: (b.set_current_key(A), s["m"].clear()),
    "reducing-add": lambda b, s: (b.set_current_key(A), s["r"].add(3)),
    "aggregating-add": lambda b, s: (b.set_current_key(A), s["a"].add(3)),
    "every-state-cleared": lambda b, s: (
        b.set_current_key(A),
        [state.clear() for state in s.values()],
    ),
    "fold-values": _fold,
    "fold-keyed": _fold_keyed,
    "window-merge": _window,
}


@pytest.mark.parametrize("name", list(WRITES))
def test_every_write_path_marks_its_key_group(name: str) -> None:
    store = Store()
    b = new_backend()
    s = fill(b)
    first = checkpoint(b, store, 1)
    assert written(first) == set(first.groups), "the first checkpoint is full"
    b.notify_checkpoint_complete(1)
    b.set_current_key(D)  # the key context at a checkpoint is stamped for the next one
    checkpoint(b, store, 2)
    b.notify_checkpoint_complete(2)
    WRITES[name](b, s)
    at_three = canonical(b)
    third = checkpoint(b, store, 3)
    a, d = assign_to_key_group(A, MAX_P), assign_to_key_group(D, MAX_P)
    assert written(third) == {a, d} & set(third.groups), "only the changed key groups"
    assert set(third.groups) | {a} == {assign_to_key_group(k, MAX_P) for k in (A, B, C, D)}
    assert canonical(restore(third, store, 3)) == at_three


def test_the_current_key_group_at_a_checkpoint_is_written_by_the_next() -> None:
    """The caller may go on writing under the key it set before the checkpoint, without
    switching keys: that key group must be in the next checkpoint."""
    store = Store()
    b = new_backend()
    s = fill(b)
    checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    b.set_current_key(B)
    checkpoint(b, store, 2)
    s["v"].update(1234)  # no set_current_key after the checkpoint
    third = checkpoint(b, store, 3)
    assert assign_to_key_group(B, MAX_P) in written(third)
    b.notify_checkpoint_complete(2)
    fourth = checkpoint(b, store, 4)
    assert canonical(restore(fourth, store, 4)) == canonical(b)


def test_ttl_expiry_and_ttl_conversion_mark_key_groups() -> None:
    clock = Clock()
    ttl = StateTtlConfig.new_builder(100).build()
    store = Store()
    b = new_backend(clock)
    v: Any = b.get_partitioned_state(_with_ttl(ValueStateDescriptor("t", None), ttl))
    for key in (A, B):
        b.set_current_key(key)
        v.update(key)
    checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    clock.now += 500
    b.set_current_key(A)
    assert v.value() is None  # expired: the read removes the entry
    second = checkpoint(b, store, 2)
    assert assign_to_key_group(A, MAX_P) not in second.groups, "not the expired entry's slice"
    assert canonical(restore(second, store, 2, clock)) == canonical(b) == {}
    b.notify_checkpoint_complete(2)
    # the same name read without TTL converts every entry: every key group changed
    plain: Any = b.get_partitioned_state(ValueStateDescriptor("t", None))
    assert plain is not None
    third = checkpoint(b, store, 3)
    assert written(third) == set(third.groups)


def _with_ttl(descriptor: Any, ttl: StateTtlConfig) -> Any:
    descriptor.enable_time_to_live(ttl)
    return descriptor


def test_a_declined_checkpoint_loses_no_mark() -> None:
    store = Store()
    b = new_backend()
    s = fill(b)
    checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    b.set_current_key(A)
    s["v"].update(-1)
    checkpoint(b, store, 2)  # declined or aborted: never completes
    b.set_current_key(C)
    third = checkpoint(b, store, 3)
    assert assign_to_key_group(A, MAX_P) in written(third)
    b.notify_checkpoint_complete(3)
    assert canonical(restore(third, store, 3)) == canonical(b)


def test_restore_marks_everything_and_the_next_checkpoint_is_full() -> None:
    store = Store()
    b = new_backend()
    fill(b)
    handle = checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    again = restore(handle, store, 1)
    nxt = checkpoint(again, store, 2)
    assert written(nxt) == set(nxt.groups) == set(handle.groups)


def test_compaction_after_n_checkpoints_and_on_dead_bytes() -> None:
    store = Store()
    b = new_backend(policy=CompactionPolicy(3, 1000.0))
    s = fill(b)
    kinds = []
    for cid in range(1, 8):
        b.set_current_key(A)
        s["v"].update(cid)
        handle = checkpoint(b, store, cid)
        b.notify_checkpoint_complete(cid)
        kinds.append(handle.since_full)
    assert kinds == [0, 1, 2, 0, 1, 2, 0]
    # dead bytes: one key group rewritten, the base's segment still referenced in full
    b = new_backend(policy=CompactionPolicy(1000, 1.5))
    s = fill(b)
    since = []
    for cid in range(1, 12):
        for key in (A, B):
            b.set_current_key(key)
            s["l"].add(list(range(200)))
        handle = checkpoint(b, store, 100 + cid)
        b.notify_checkpoint_complete(100 + cid)
        since.append(handle.since_full)
        assert handle.full_size <= 3 * handle.live_size, handle
    assert 0 in since[1:], f"a full checkpoint compacted the dead slices: {since}"


def test_the_writer_acknowledges_every_segment_a_checkpoint_references() -> None:
    """The task's snapshot writer acknowledges ``shared_handles`` of every native keyed handle
    (RocksDB's too) so that the coordinator's registry counts them: for heap state that is
    every segment referenced, the reused ones from earlier checkpoints included."""
    store = Store()
    b = new_backend()
    s = fill(b)
    first = checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    b.set_current_key(A)
    s["v"].update(2)
    second = checkpoint(b, store, 2)
    assert [seg.created_by for seg in second.segments] == [1, 2]
    assert second.shared_handles == tuple(seg.handle for seg in second.segments)
    assert second.shared_handles[0] == first.shared_handles[0]
    assert all(h.path in store.files for h in second.shared_handles)


def test_rescale_takes_the_owned_key_groups_of_every_old_subtask() -> None:
    store = Store()
    olds = [new_backend(key_groups=range(0, 8)), new_backend(key_groups=range(8, 16))]
    expected: dict[int, Any] = {}
    handles = []
    for b in olds:
        v: Any = b.get_partitioned_state(ValueStateDescriptor("v", None))
        for key in range(200):
            if assign_to_key_group(key, MAX_P) in b.key_group_range:
                b.set_current_key(key)
                v.update(key * 10)
        checkpoint(b, store, 1)
        b.notify_checkpoint_complete(1)
        b.set_current_key(next(k for k in range(200) if assign_to_key_group(k, MAX_P) in
                               b.key_group_range))  # fmt: skip
        v.update(-1)
        handles.append(checkpoint(b, store, 2))
        expected.update(canonical(b))
    new_ranges = [range(0, 5), range(5, 11), range(11, 16)]
    got: dict[int, Any] = {}
    for r in new_ranges:
        b = new_backend(key_groups=r)
        b.restore_native([download(h, store.read, 2) for h in handles])
        part = canonical(b)
        assert set(part) <= set(r)
        got.update(part)
    assert got == expected


def test_a_corrupt_segment_names_the_file_and_both_checkpoints() -> None:
    store = Store()
    b = new_backend()
    fill(b)
    checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    handle = checkpoint(b, store, 2)
    [path] = [s.handle.path for s in handle.segments if s.created_by == 1]
    store.files[path] = store.files[path][:-1] + b"!"
    with pytest.raises(CorruptCheckpointError) as err:
        download(handle, store.read, 2)
    assert path in str(err.value) and "checkpoint 1" in str(err.value)
    assert "checkpoint 2 being restored" in str(err.value)


def test_rocksdb_native_state_is_refused_by_name() -> None:
    b = new_backend()
    with pytest.raises(StateError, match="another backend"):
        b.restore_native([object()])


def test_the_pending_snapshot_must_be_serialized_before_the_upload() -> None:
    store = Store()
    b = new_backend()
    fill(b)
    native = b.native_checkpoint(1, False)
    with pytest.raises(StateError, match="not serialized before the upload"):
        native.upload(store.write)


# --- the property: restore from any completed checkpoint is the state at that checkpoint ------

KEYS = list(range(24))
#: (operation, argument, value); puts, checkpoints, completions and notifications weigh more.
OPERATIONS = (
    ["put"] * 4 + ["delete"] + ["checkpoint", "complete", "notify"] * 2 + ["abort", "restore"]
)
STEPS = st.lists(
    st.tuples(st.sampled_from(OPERATIONS), st.sampled_from(KEYS), st.integers(0, 5)),
    min_size=20,
    max_size=80,
)


class Coordinator:
    """The coordinator's side, reduced: completion aborts the pending checkpoints before it,
    then registers and subsumes (one retained); an aborted pending checkpoint releases its
    uploads; the registry decides what is deleted from the store; notifications reach the
    subtask later (``notify``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.registry = SharedStateRegistry()
        self.pending: dict[int, HeapIncrementalHandle] = {}
        self.retained: tuple[int, HeapIncrementalHandle] | None = None
        self.undelivered: list[int] = []

    def _delete(self, paths: tuple[str, ...]) -> None:
        for path in paths:
            del self.store.files[path]

    def complete(self, cid: int) -> HeapIncrementalHandle:
        handle = self.pending.pop(cid)
        for older in [c for c in self.pending if c < cid]:
            self.abort(older)  # subsumed while pending: before the retained one lets go
        self.registry.register(cid, [s.handle.path for s in handle.segments])
        if self.retained is not None:
            self._delete(self.registry.release(self.retained[0]).delete)
        self.retained = (cid, handle)
        self.undelivered.append(cid)
        return handle

    def abort(self, cid: int) -> None:
        handle = self.pending.pop(cid)
        self.registry.register(cid, [s.handle.path for s in handle.segments])
        self._delete(self.registry.release(cid).delete)


#: Checkpoint 2 reuses checkpoint 1's segment, 3 rewrites it and completes first (CI, once).
REUSED_BY_A_SUBSUMED_PENDING = [("put", 0, 0)] * 11 + [("put", 20, 0), ("put", 0, 0)] + [
    ("checkpoint", 0, 0), ("complete", 0, 0), ("notify", 0, 0), ("checkpoint", 0, 0),
    ("put", 14, 0), ("checkpoint", 0, 0), ("complete", 0, 1),
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
@example(steps=REUSED_BY_A_SUBSUMED_PENDING)
def test_restore_from_any_completed_checkpoint_is_the_state_at_that_checkpoint(
    steps: list[tuple[str, int, int]],
) -> None:
    store = Store()
    coordinator = Coordinator(store)
    b = new_backend(policy=CompactionPolicy(4, 2.0))
    v: Any = b.get_partitioned_state(ValueStateDescriptor("v", None))
    model: dict[int, int] = {}
    at: dict[int, dict[int, int]] = {}  # checkpoint id -> the model when it was taken
    cid = 0
    force_full = False

    def state_of(backend: HeapKeyedStateBackend) -> dict[int, int]:
        state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", None))
        out = {}
        for key in KEYS:
            backend.set_current_key(key)
            if state.value() is not None:
                out[key] = state.value()
        return out

    for op, arg, value in steps:
        if op == "put":
            b.set_current_key(arg)
            v.update(value)
            model[arg] = value
        elif op == "delete":
            b.set_current_key(arg)
            v.clear()
            model.pop(arg, None)
        elif op == "checkpoint":
            cid += 1
            coordinator.pending[cid] = checkpoint(b, store, cid, full=force_full)
            force_full = False
            at[cid] = dict(model)
        elif op in ("complete", "abort") and coordinator.pending:
            chosen = sorted(coordinator.pending)[value % len(coordinator.pending)]
            if op == "abort":
                coordinator.abort(chosen)
                continue
            handle = coordinator.complete(chosen)
            assert state_of(restore(handle, store, chosen)) == at[chosen]
        elif op == "notify" and coordinator.undelivered:
            b.notify_checkpoint_complete(coordinator.undelivered.pop(0))
        elif op == "restore" and coordinator.retained is not None:
            rid, handle = coordinator.retained
            for pending in list(coordinator.pending):
                coordinator.abort(pending)
            coordinator.undelivered.clear()
            b = restore(handle, store, rid)
            v = b.get_partitioned_state(ValueStateDescriptor("v", None))
            model = dict(at[rid])
            assert state_of(b) == model
            force_full = True  # the coordinator's first checkpoint after a restore
    if coordinator.retained is not None:
        rid, handle = coordinator.retained
        assert state_of(restore(handle, store, rid)) == at[rid]
    held = {s.handle.path for _, h in [coordinator.retained] if h for s in h.segments} if (
        coordinator.retained) else set()  # fmt: skip
    assert held <= set(store.files)


def test_incremental_state_restores_into_a_heap_backend_without_the_option() -> None:
    store = Store()
    b = new_backend()
    fill(b)
    checkpoint(b, store, 1)
    b.notify_checkpoint_complete(1)
    b.set_current_key(A)
    b.get_partitioned_state(ValueStateDescriptor("v", None)).update(-5)
    handle = checkpoint(b, store, 2)
    plain = HeapKeyedStateBackend("op", MAX_P, range(MAX_P), lambda: 0)
    plain.restore_native([download(handle, store.read, 2)])
    assert canonical(plain) == canonical(b)
    with pytest.raises(StateError, match="built without incremental checkpoints"):
        plain.native_checkpoint(3, False)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("state.backend.hashmap.incremental.compaction-interval", "0"),
        ("state.backend.hashmap.incremental.max-space-amplification", "0.5"),
    ],
)
def test_bad_compaction_options_are_refused_by_key(key: str, value: str) -> None:
    config = Configuration({"execution.checkpointing.incremental": "true", key: value})
    with pytest.raises(ConfigurationError, match=re.escape(key)):
        keyed_backend_factory(config)
