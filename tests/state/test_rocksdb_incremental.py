"""Incremental RocksDB checkpoints at the backend: native checkpoint, upload of new SST files
only, restore in place (same key groups) and by key-group ranges (rescale), corrupt files."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.key_groups import assign_to_key_group
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_incremental import IncrementalKeyedHandle, upload
from undertow.storage import CheckpointStorage
from undertow.storage.errors import CorruptCheckpointError

MAX_P = 8


def _backend(tmp: Path, key_groups: range = range(MAX_P)) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend(
        "sum", MAX_P, key_groups, lambda: 0, local_dir=str(tmp / "local"), incremental=True
    )


def _fill(backend: RocksDBKeyedStateBackend, keys: range, value: int) -> None:
    state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", None))
    for key in keys:
        if assign_to_key_group(key, MAX_P) in backend.key_group_range:
            backend.set_current_key(key)
            state.update(value * 1000 + key)


def _read(backend: RocksDBKeyedStateBackend, keys: range) -> dict[int, Any]:
    state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", None))
    found = {}
    for key in keys:
        if assign_to_key_group(key, MAX_P) in backend.key_group_range:
            backend.set_current_key(key)
            found[key] = state.value()
    return found


def _checkpoint(
    backend: RocksDBKeyedStateBackend, storage: CheckpointStorage, cid: int, full: bool = False
) -> IncrementalKeyedHandle:
    native = backend.native_checkpoint(cid, full)
    handle = upload(native, storage.write_shared_file, storage.write_file)
    assert not os.path.exists(native.directory), "the local checkpoint goes once uploaded"
    backend.notify_checkpoint_complete(cid)
    return handle


def _restore(
    handles: list[IncrementalKeyedHandle],
    storage: CheckpointStorage,
    tmp: Path,
    key_groups: range,
    cid: int,
) -> RocksDBKeyedStateBackend:
    snapshots = []
    for handle in handles:
        snapshot = SubtaskSnapshot({"sum": OperatorSnapshot(keyed_native=handle)})
        snapshot = pickle.loads(pickle.dumps(snapshot))  # as read back from a state file
        snapshot.download_native(storage.read_file, cid, str(tmp / "local"))
        snapshots.append(snapshot.operators["sum"].keyed_native)
    restored = _backend(tmp, key_groups)
    restored.restore_native(snapshots)
    return restored


def test_second_checkpoint_uploads_only_new_files(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    _fill(backend, range(2000), 1)
    first = _checkpoint(backend, storage, 1)
    _fill(backend, range(10), 2)  # a few hot keys change
    second = _checkpoint(backend, storage, 2)

    assert first.shared, "the first checkpoint uploads the SST files"
    assert all(f.created_by == 1 for f in first.shared)
    reused = [f for f in second.shared if f.created_by == 1]
    new = [f for f in second.shared if f.created_by == 2]
    assert reused == list(first.shared), "unchanged SST files are referenced, not uploaded"
    assert len(new) == 1, second.shared
    assert second.incremental_size < first.incremental_size
    on_disk = sorted(os.listdir(tmp_path / "chk" / "job" / "shared"))
    assert on_disk == sorted(f.handle.path.split("/")[1] for f in second.shared)
    assert {name for name, _ in second.private} >= {"CURRENT"}
    assert all(h.path.startswith("chk-2/") for _, h in second.private)
    full = _checkpoint(backend, storage, 3, full=True)
    assert all(f.created_by == 3 for f in full.shared), "a FULL checkpoint reuses nothing"


def test_restore_in_place_then_reuse_restored_files(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    _fill(backend, range(500), 1)
    handle = _checkpoint(backend, storage, 4)
    _fill(backend, range(500), 9)  # after the checkpoint: must not be restored
    backend.dispose()

    restored = _restore([handle], storage, tmp_path, range(MAX_P), 4)
    assert _read(restored, range(500)) == {k: 1000 + k for k in range(500)}
    after = _checkpoint(restored, storage, 5)
    assert {f.handle for f in handle.shared} <= {f.handle for f in after.shared}
    restored.dispose()
    leftovers = [n for n in os.listdir(tmp_path / "local") if n.startswith("undertow-rocksdb")]
    assert leftovers == []


def test_rescale_reads_key_group_ranges_of_each_old_db(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    old = [_backend(tmp_path, range(0, 4)), _backend(tmp_path, range(4, 8))]
    handles = []
    for backend in old:
        _fill(backend, range(300), 1)
        handles.append(_checkpoint(backend, storage, 7))
        backend.dispose()
    expected = {k: 1000 + k for k in range(300)}

    parts = [range(0, 3), range(3, 6), range(6, 8)]
    seen: dict[int, Any] = {}
    for part in parts:
        restored = _restore(handles, storage, tmp_path, part, 7)
        mine = _read(restored, range(300))
        assert all(assign_to_key_group(k, MAX_P) in part for k in mine)
        seen.update(mine)
        assert sorted(restored.keys("v")) == sorted(mine)  # nothing outside the range
        restored.dispose()
    assert seen == expected


def test_corrupt_shared_file_names_file_and_both_checkpoints(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    _fill(backend, range(500), 1)
    _checkpoint(backend, storage, 1)
    _fill(backend, range(3), 2)
    second = _checkpoint(backend, storage, 2)
    backend.dispose()
    old = next(f for f in second.shared if f.created_by == 1)
    path = tmp_path / "chk" / "job" / old.handle.path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    with pytest.raises(CorruptCheckpointError) as caught:
        _restore([second], storage, tmp_path, range(MAX_P), 2)
    message = str(caught.value)
    assert old.handle.path in message
    assert "uploaded by checkpoint 1" in message
    assert "checkpoint 2 being restored" in message
    assert caught.value.checkpoint == 2


def test_native_checkpoint_is_never_pickled_before_upload(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    _fill(backend, range(10), 1)
    native = backend.native_checkpoint(1, False)
    with pytest.raises(TypeError, match="was not uploaded"):
        pickle.dumps(SubtaskSnapshot({"sum": OperatorSnapshot(keyed_native=native)}))
    backend.dispose()


def _savepoint(
    backend: RocksDBKeyedStateBackend, storage: CheckpointStorage, cid: int
) -> IncrementalKeyedHandle:
    """A NATIVE savepoint's upload, as the subtask does it (shared writer given, unused)."""
    handle = upload(backend.native_savepoint(cid), storage.write_shared_file, storage.write_file)
    backend.notify_checkpoint_complete(cid)  # a stop's savepoint is notified
    return handle


@pytest.mark.parametrize("incremental", [True, False])
def test_native_savepoint_writes_every_file_into_its_own_directory(
    tmp_path: Path, incremental: bool
) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    backend.incremental = incremental
    _fill(backend, range(500), 1)
    if incremental:
        _checkpoint(backend, storage, 1)  # uploaded into shared/ before the savepoint
    handle = _savepoint(backend, storage, 2)

    assert any(f.local_name.endswith(".sst") for f in handle.shared)
    paths = [f.handle.path for f in handle.shared] + [h.path for _, h in handle.private]
    assert all(p.startswith("chk-2/") for p in paths), "self-contained: nothing in shared/"
    assert handle.shared_handles == (), "nothing for the coordinator's registry"
    assert all(f.created_by == 2 for f in handle.shared), "a savepoint reuses no upload"
    after = _checkpoint(backend, storage, 3)
    assert not {f.handle for f in handle.shared} & {f.handle for f in after.shared}, (
        "a later checkpoint never references the savepoint's files"
    )


def test_restore_from_a_native_savepoint_reuses_none_of_its_files(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    _fill(backend, range(500), 3)
    handle = _savepoint(backend, storage, 6)
    backend.dispose()

    restored = _restore([handle], storage, tmp_path, range(MAX_P), 6)
    assert _read(restored, range(500)) == {k: 3000 + k for k in range(500)}
    first = _checkpoint(restored, storage, 7)
    assert first.shared and all(f.created_by == 7 for f in first.shared), (
        "the first checkpoint after it uploads its own SST files into shared/"
    )
    assert all(f.in_shared_dir for f in first.shared)
    restored.dispose()


def test_a_checkpoint_reuses_no_file_that_an_earlier_unconfirmed_one_uploaded_again(
    tmp_path: Path,
) -> None:
    """FLINK-29913's order: checkpoint 3's barrier came before checkpoint 2 was confirmed, so 3
    uploaded 2's new SST file again under its own name. Checkpoint 4 is taken after 2 was
    confirmed and before 3 was. When 3 completes it subsumes 2, and the coordinator deletes
    2's files that 3 does not reference; 4 must not be one of their users."""
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    _fill(backend, range(2000), 1)
    _checkpoint(backend, storage, 1)
    _fill(backend, range(10), 2)
    second = upload(backend.native_checkpoint(2, False), storage.write_shared_file,
                    storage.write_file)  # fmt: skip
    third = upload(backend.native_checkpoint(3, False), storage.write_shared_file,
                   storage.write_file)  # fmt: skip
    backend.notify_checkpoint_complete(2)
    fourth = upload(backend.native_checkpoint(4, False), storage.write_shared_file,
                    storage.write_file)  # fmt: skip
    backend.notify_checkpoint_complete(3)  # 3 completed and subsumed 2: what only 2 held goes
    kept = {f.handle.path for f in third.shared}
    gone = [f for f in second.shared if f.handle.path not in kept]
    assert gone, "checkpoint 3 uploaded checkpoint 2's new file again"
    for shared in gone:
        os.remove(tmp_path / "chk" / "job" / shared.handle.path)

    restored = _restore([fourth], storage, tmp_path / "r", range(MAX_P), 4)
    expected = {k: (2 if k < 10 else 1) * 1000 + k for k in range(2000)}
    assert _read(restored, range(2000)) == expected
