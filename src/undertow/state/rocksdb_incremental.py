"""Incremental RocksDB checkpoints: a native DB checkpoint, of which only new SST files upload.

:func:`upload` writes each SST file the last confirmed checkpoint did not upload into
``<job>/shared/`` and reuses the handles of those it did (SST files are immutable);
:func:`download` brings a handle's files back, each verified by size and SHA-256 before use.
A NATIVE savepoint writes every file into its own directory, so it is self-contained.

Threading: :func:`upload` and :func:`download` do blocking I/O (the I/O pool); the dataclasses
are immutable values.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.state.rocksdb_local import new_restore_directory
from undertow.state.snapshot_strategy import PrivateWriter, Reader, SharedWriter
from undertow.storage import FileHandle
from undertow.storage.checkpoint_storage import SHARED_DIR
from undertow.storage.errors import CorruptCheckpointError


@dataclass(frozen=True, slots=True)
class SharedFile:
    """One SST file in ``shared/``: its handle, its name in the DB directory, and the
    checkpoint that uploaded it (named when the file turns out corrupt)."""

    handle: FileHandle
    local_name: str
    created_by: int

    @property
    def in_shared_dir(self) -> bool:
        """In ``shared/`` (registered, reusable by later checkpoints); else exclusive to one
        snapshot (a NATIVE savepoint's ``chk-<n>/``)."""
        return self.handle.path.startswith(SHARED_DIR + "/")


@dataclass(frozen=True, slots=True)
class IncrementalKeyedHandle:
    """The keyed state of one operator in one subtask at one incremental checkpoint.

    ``states`` maps a state name to ``(kind, ttl)``; ``key_groups`` is the subtask's range
    ``(start, stop)``; ``private`` pairs a local file name with its handle in ``chk-<n>/``.
    """

    checkpoint_id: int
    operator_name: str
    backend_id: str
    key_groups: tuple[int, int]
    max_parallelism: int
    states: dict[str, tuple[str, bool]]
    shared: tuple[SharedFile, ...]
    private: tuple[tuple[str, FileHandle], ...]

    @property
    def shared_handles(self) -> tuple[FileHandle, ...]:
        """The handles of the files in ``shared/`` (the coordinator's registry counts them)."""
        return tuple(f.handle for f in self.shared if f.in_shared_dir)

    @property
    def full_size(self) -> int:
        """Bytes of every file the state consists of (shared ones uploaded earlier too)."""
        return sum(f.handle.size for f in self.shared) + sum(h.size for _, h in self.private)

    @property
    def incremental_size(self) -> int:
        """Bytes this checkpoint uploaded (its new shared files and its private files)."""
        new = sum(f.handle.size for f in self.shared if f.created_by == self.checkpoint_id)
        return new + sum(h.size for _, h in self.private)

    def download(self, read: Reader, restoring_checkpoint: int, local_dir: str) -> DownloadedNative:
        """Every file into a fresh directory under ``local_dir`` (:func:`download`)."""
        return download(self, read, restoring_checkpoint, new_restore_directory(local_dir))

    def without_shared_file(self, path: str) -> None:
        """None: an SST file cannot be dropped from a RocksDB checkpoint."""
        return None


@dataclass(frozen=True, slots=True)
class NativeCheckpoint:
    """A RocksDB checkpoint in a local directory, not uploaded yet (never pickled into a state
    file: :func:`upload` turns it into an :class:`IncrementalKeyedHandle`). ``reuse`` maps a
    local SST name to the shared file the last confirmed checkpoint uploaded for it."""

    checkpoint_id: int
    operator_name: str
    backend_id: str
    key_groups: tuple[int, int]
    max_parallelism: int
    states: dict[str, tuple[str, bool]]
    directory: str
    reuse: dict[str, SharedFile]
    #: Called on the I/O thread with the result, before the directory is deleted.
    on_uploaded: Callable[[IncrementalKeyedHandle], None]
    #: A NATIVE savepoint: every file goes into ``chk-<n>/`` (none into ``shared/``).
    exclusive: bool = False

    @property
    def pending(self) -> PendingKeyGroups | None:
        """None: the synchronous part made the local checkpoint; nothing is left to pickle."""
        return None

    def upload(
        self, write_shared: SharedWriter, write_private: PrivateWriter
    ) -> IncrementalKeyedHandle:
        """:func:`upload` (the module's; I/O pool)."""
        return upload(self, write_shared, write_private)

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError(
            f"operator {self.operator_name!r}: the RocksDB checkpoint {self.checkpoint_id} in "
            f"{self.directory} was not uploaded before the state file was written"
        )


@dataclass(frozen=True, slots=True)
class DownloadedNative:
    """An :class:`IncrementalKeyedHandle` whose files were downloaded into ``directory`` (a DB
    the restoring backend opens or reads, then deletes)."""

    handle: IncrementalKeyedHandle
    directory: str


def upload(
    native: NativeCheckpoint, write_shared: SharedWriter, write_private: PrivateWriter
) -> IncrementalKeyedHandle:
    """Upload ``native`` (see the module docstring) and delete its local directory."""
    cid = native.checkpoint_id
    safe = "".join(c if c.isalnum() else "_" for c in native.operator_name)[:40]
    shared: list[SharedFile] = []
    private: list[tuple[str, FileHandle]] = []
    try:
        for name in sorted(os.listdir(native.directory)):
            path = os.path.join(native.directory, name)
            if name.endswith(".sst"):
                known = native.reuse.get(name)
                if known is not None and known.handle.size == os.path.getsize(path):
                    shared.append(known)
                    continue
                data = _read(path)
                if native.exclusive:
                    handle = write_private(cid, f"{safe}-{native.backend_id}-{name}", data)
                else:
                    handle = write_shared(f"{safe}-{native.backend_id}-{cid}-{name}", data)
                shared.append(SharedFile(handle, name, cid))
            else:
                data = _read(path)
                stored = write_private(cid, f"{safe}-{native.backend_id}-{name}", data)
                private.append((name, stored))
        result = IncrementalKeyedHandle(
            cid, native.operator_name, native.backend_id, native.key_groups,
            native.max_parallelism, dict(native.states), tuple(shared), tuple(private),
        )  # fmt: skip
        native.on_uploaded(result)
        return result
    finally:
        shutil.rmtree(native.directory, ignore_errors=True)


def download(
    handle: IncrementalKeyedHandle, read: Reader, restoring_checkpoint: int, directory: str
) -> DownloadedNative:
    """Fetch every file of ``handle`` into ``directory`` (created), verified before use.

    A shared file that is missing or differs from its recorded size or SHA-256 raises
    :class:`CorruptCheckpointError` naming the file, the checkpoint that uploaded it and the
    checkpoint being restored (which shares it).
    """
    os.makedirs(directory, exist_ok=True)
    for shared in handle.shared:
        try:
            data = read(shared.handle, restoring_checkpoint)
        except CorruptCheckpointError as err:
            raise CorruptCheckpointError(
                f"operator {handle.operator_name!r}: shared file {shared.handle.path} "
                f"(uploaded by checkpoint {shared.created_by}, shared with checkpoint "
                f"{restoring_checkpoint} being restored) is corrupt: {err}",
                checkpoint=restoring_checkpoint,
                path=err.path,
                expected=err.expected,
                actual=err.actual,
            ) from err
        _write(os.path.join(directory, shared.local_name), data)
    for name, private in handle.private:
        _write(os.path.join(directory, name), read(private, restoring_checkpoint))
    return DownloadedNative(handle, directory)


def _read(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)
