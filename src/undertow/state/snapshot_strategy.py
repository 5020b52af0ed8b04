"""How keyed state leaves a backend at a checkpoint and comes back at a restore.

Every keyed backend writes canonical snapshots (one blob per key group); it may also take
native ones. The task layer and the worker handle native state only through three protocols:
:class:`SnapshotStrategy` (what a backend offers), :class:`NativeSnapshot` (taken on the task
thread, uploaded on the I/O pool into a :class:`NativeStateHandle`) and
:class:`NativeStateHandle` (downloaded and verified on the I/O pool, restored on the task
thread before ``open``). Who may call: the operator chain (task thread), the snapshot writer
(upload) and the worker's restore reader (download); nothing else.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.storage import FileHandle

#: Writes a file into ``<job>/shared/<name>``; returns its handle.
SharedWriter = Callable[[str, bytes], FileHandle]
#: Writes a file into ``<job>/chk-<id>/<name>``; returns its handle.
PrivateWriter = Callable[[int, str, bytes], FileHandle]
#: Reads and verifies the file of a handle, naming the checkpoint id in errors.
Reader = Callable[[FileHandle, int], bytes]


class NativeStateHandle(Protocol):
    """A native snapshot once uploaded: immutable, pickled into the subtask's state file."""

    @property
    def shared_handles(self) -> tuple[FileHandle, ...]:
        """The files in ``shared/`` it references (the coordinator's registry counts them)."""
        ...

    @property
    def full_size(self) -> int:
        """Bytes of every file the state consists of (earlier checkpoints' shared ones too)."""
        ...

    @property
    def incremental_size(self) -> int:
        """Bytes this checkpoint wrote."""
        ...

    def download(self, read: Reader, restoring_checkpoint: int, local_dir: str) -> object:
        """Fetch and verify the files (blocking I/O: the I/O pool), before the chain restores;
        ``local_dir`` is the state backend's local directory (``""``: the temp directory). A
        missing or corrupt file raises
        :class:`~undertow.storage.errors.CorruptCheckpointError` naming it and
        ``restoring_checkpoint``. The result goes to :meth:`SnapshotStrategy.restore_native`."""
        ...

    def without_shared_file(self, path: str) -> NativeStateHandle | None:
        """This state as if the shared file ``path`` were empty, or None if the format cannot
        say so or does not reference ``path`` (restore controls: a lost shared file)."""
        ...


class NativeSnapshot(Protocol):
    """A native snapshot before upload: taken on the task thread, never pickled."""

    @property
    def pending(self) -> PendingKeyGroups | None:
        """Key groups still to pickle on the task thread (in mailbox slices) before
        :meth:`upload` may run; None if nothing is left to the task thread."""
        ...

    def upload(self, write_shared: SharedWriter, write_private: PrivateWriter) -> NativeStateHandle:
        """Write the files (blocking I/O: the I/O pool, once, after :attr:`pending` is done)
        and return the handle that goes into the state file."""
        ...


class SnapshotStrategy(Protocol):
    """What a keyed backend offers at checkpoints (see the module docstring).

    Threading: the owning subtask's task thread. Invariant: :meth:`native_checkpoint` is only
    asked of a strategy whose :attr:`takes_native_checkpoints` is true.
    """

    @property
    def takes_native_checkpoints(self) -> bool:
        """Whether checkpoints (not savepoints) are native (incremental) snapshots."""
        ...

    def snapshot(self) -> dict[int, bytes]:
        """The canonical snapshot: one blob per non-empty key group."""
        ...

    def native_checkpoint(self, checkpoint_id: int, full: bool) -> NativeSnapshot:
        """A native checkpoint; ``full`` (a FULL checkpoint) reuses nothing uploaded before."""
        ...

    def native_savepoint(self, checkpoint_id: int) -> NativeSnapshot | None:
        """A NATIVE savepoint's snapshot, self-contained; None: the savepoint is canonical."""
        ...

    def restore(self, blobs: dict[int, bytes]) -> None:
        """Load canonical blobs (of any backend; key groups outside the range are ignored)."""
        ...

    def restore_native(self, downloads: Sequence[object]) -> None:
        """Load downloaded native snapshots (results of :meth:`NativeStateHandle.download`);
        a download of another backend's format raises ``StateError`` naming both."""
        ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: later native checkpoints may reuse its files."""
        ...
