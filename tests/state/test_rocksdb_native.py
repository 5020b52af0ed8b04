"""RocksDB's native snapshots (``state/rocksdb_native.py``): what a new checkpoint may reuse,
what a NATIVE savepoint shares, and a restore from another backend's native state.

Upload, download and the restores themselves run in ``test_rocksdb_incremental.py``; here the
backend's own bookkeeping, with uploads written to a local checkpoint storage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.core.errors import StateError
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.rocksdb import RocksDBKeyedStateBackend
from undertow.state.rocksdb_incremental import upload
from undertow.state.rocksdb_native import RocksDBNativeSnapshots
from undertow.storage import CheckpointStorage


def _backend(tmp: Path) -> RocksDBKeyedStateBackend:
    backend = RocksDBKeyedStateBackend(
        "sum", 8, range(8), lambda: 0, local_dir=str(tmp / "local"), incremental=True
    )
    state: Any = backend.get_partitioned_state(ValueStateDescriptor("v", None))
    for key in range(300):
        backend.set_current_key(key)
        state.update(key)
    return backend


def test_confirmed_files_are_reused_once_no_earlier_pending_checkpoint_could_drop_them(
    tmp_path: Path,
) -> None:
    """Checkpoint 2 is taken before 1 is confirmed, so it reuses nothing; while 2 (and later 3,
    taken while 2 was pending) may still complete and subsume 1, no checkpoint reuses 1's
    files either (FLINK-29913). Once both are done, 1's files are reused."""
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    assert isinstance(backend, RocksDBNativeSnapshots) and backend.takes_native_checkpoints
    first = upload(backend.native_checkpoint(1, False), storage.write_shared_file,
                   storage.write_file)  # fmt: skip
    assert first.shared and backend.native_checkpoint(2, False).reuse == {}  # 1 unconfirmed
    backend.notify_checkpoint_complete(1)
    assert backend.native_checkpoint(3, False).reuse == {}  # 2 is pending and reuses nothing
    backend.notify_checkpoint_complete(2)
    assert backend.native_checkpoint(4, False).reuse == {}  # so is 3
    backend.notify_checkpoint_complete(4)
    reuse = backend.native_checkpoint(5, False).reuse
    assert {f.handle for f in reuse.values()} == {f.handle for f in first.shared}
    backend.dispose()


def test_a_native_savepoint_reuses_nothing_and_is_not_a_base(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path / "chk"), "job")
    backend = _backend(tmp_path)
    first = upload(backend.native_checkpoint(1, False), storage.write_shared_file,
                   storage.write_file)  # fmt: skip
    backend.notify_checkpoint_complete(1)
    savepoint = backend.native_savepoint(2)
    assert savepoint.exclusive and savepoint.reuse == {}
    upload(savepoint, storage.write_shared_file, storage.write_file)
    backend.notify_checkpoint_complete(2)  # the savepoint's files stay its own
    reuse = backend.native_checkpoint(3, False).reuse
    assert {f.handle for f in reuse.values()} == {f.handle for f in first.shared}
    backend.dispose()


def test_native_state_of_another_backend_is_refused_naming_operator_and_type(
    tmp_path: Path,
) -> None:
    backend = _backend(tmp_path)
    with pytest.raises(StateError, match=r"'sum'.*another backend \(object\).*savepoint"):
        backend.restore_native([object()])
    backend.dispose()
