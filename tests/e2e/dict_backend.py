"""A third keyed state backend, for tests only: the proof that a backend with its own native
snapshot format is added without a change to the task or the worker.

``state.backend.type: e2e.dict_backend.dict_backend`` selects it (workers must import this
module: the ``local-threads`` target). It keeps state like the heap backend (it reuses the
heap's state objects: the point here is the snapshot strategy, not the tables), but every
checkpoint is *native*: the whole keyed state pickled into one private file of the checkpoint
(``chk-<id>/<operator>-dict-<first key group>.kv``), which the worker downloads and
:meth:`DictBackend.restore_native` loads. Module-level counters record what ran (the
workers are threads of the test process).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from undertow.core.config import Configuration
from undertow.core.errors import StateError
from undertow.state.backend import KeyedStateBackendFactory
from undertow.state.heap import HeapKeyedStateBackend
from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.state.snapshot_strategy import PrivateWriter, Reader, SharedWriter
from undertow.storage import FileHandle

#: What the strategy did, in this process: uploads (operator, checkpoint) and restores
#: (operator, restored checkpoint, key groups loaded).
UPLOADS: list[tuple[str, int]] = []
RESTORES: list[tuple[str, int, int]] = []


@dataclass(frozen=True, slots=True)
class DictDownload:
    checkpoint_id: int
    blobs: dict[int, bytes]


@dataclass(frozen=True, slots=True)
class DictHandle:
    """One operator subtask's state in one private file of its checkpoint."""

    checkpoint_id: int
    operator_name: str
    file: FileHandle

    @property
    def shared_handles(self) -> tuple[FileHandle, ...]:
        return ()

    @property
    def full_size(self) -> int:
        return self.file.size

    @property
    def incremental_size(self) -> int:
        return self.file.size

    def download(self, read: Reader, restoring_checkpoint: int, local_dir: str) -> DictDownload:
        blobs: dict[int, bytes] = pickle.loads(read(self.file, restoring_checkpoint))
        return DictDownload(self.checkpoint_id, blobs)

    def without_shared_file(self, path: str) -> None:
        return None


@dataclass(frozen=True, slots=True)
class DictNativeSnapshot:
    checkpoint_id: int
    operator_name: str
    first_key_group: int
    blobs: PendingKeyGroups

    @property
    def pending(self) -> PendingKeyGroups:
        return self.blobs

    def upload(self, write_shared: SharedWriter, write_private: PrivateWriter) -> DictHandle:
        data = pickle.dumps(self.blobs.result())
        name = f"{self.operator_name}-dict-{self.first_key_group}.kv".replace(" ", "_")
        UPLOADS.append((self.operator_name, self.checkpoint_id))
        return DictHandle(self.checkpoint_id, self.operator_name,
                          write_private(self.checkpoint_id, name, data))  # fmt: skip


class DictBackend(HeapKeyedStateBackend):
    """The heap's tables with a snapshot strategy of its own (see the module docstring)."""

    @property
    def takes_native_checkpoints(self) -> bool:
        return True

    def native_checkpoint(self, checkpoint_id: int, full: bool) -> DictNativeSnapshot:
        start = self.key_group_range.start
        return DictNativeSnapshot(checkpoint_id, self.operator_name, start, self.snapshot())

    def restore_native(self, downloads: Sequence[object]) -> None:
        blobs: dict[int, bytes] = {}
        for download in downloads:
            if not isinstance(download, DictDownload):
                raise StateError(f"{self.operator_name}: not a dict backend's state: {download}")
            blobs.update(download.blobs)
            owned = [g for g in download.blobs if g in self.key_group_range]
            RESTORES.append((self.operator_name, download.checkpoint_id, len(owned)))
        self.restore(blobs)


def dict_backend(config: Configuration) -> KeyedStateBackendFactory:
    """The :data:`~undertow.state.factory.StateBackendFactory` ``state.backend.type`` names."""
    make: Callable[..., DictBackend] = DictBackend
    return make
