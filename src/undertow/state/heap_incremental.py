"""Incremental checkpoints of the heap backend (beyond Flink: FLIP-151 never landed).

Every keyed-state access goes through a current key, so the backend stamps the key group of
each key it switches to with the snapshot count (:class:`DirtyKeyGroups`). A checkpoint pickles
the key groups stamped after its base's snapshot (the last completed checkpoint) into ONE
segment in ``<job>/shared/``; every other key group is a slice of an earlier segment
(:class:`HeapIncrementalHandle`). One file per checkpoint, not per key group: thousands of
small files would cost more than the full state. Only a completion moves the base, so an
aborted checkpoint loses no stamp. A slice is reused only if every checkpoint taken since the
base reuses it too (one may complete and subsume the base before this subtask hears of it).
Full again: without a base (first, after a restore), when asked (FULL), every
``compaction-interval`` checkpoints, or past ``max-space-amplification`` dead bytes.

Threading: the task thread, except :meth:`HeapNativeSnapshot.upload` and :func:`download`
(the I/O pool; blocking I/O) and :meth:`DirtyKeyGroups.uploaded` (one dict store).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from undertow.core.errors import StateError
from undertow.state.heap_snapshot import PendingKeyGroups
from undertow.state.snapshot_strategy import PrivateWriter, Reader, SharedWriter
from undertow.storage import FileHandle
from undertow.storage.errors import CorruptCheckpointError


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment file in ``shared/``: the blobs of the key groups one checkpoint rewrote,
    concatenated. ``created_by`` is that checkpoint (named when the file turns out corrupt)."""

    handle: FileHandle
    created_by: int


#: A key group's blob in a handle: (index into its segments, offset, length).
Slice = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class HeapIncrementalHandle:
    """The keyed state of one heap operator subtask at one incremental checkpoint.

    ``groups`` maps each non-empty key group to ``(segment index, offset, length)`` of its
    blob (the canonical blob of :func:`~undertow.state.heap.encode_key_group_blob`) in
    ``segments``; a key group absent from it is empty. ``since_full`` counts the incremental
    checkpoints since the last full one (0: this one is full).
    """

    checkpoint_id: int
    operator_name: str
    key_groups: tuple[int, int]
    max_parallelism: int
    segments: tuple[Segment, ...]
    groups: dict[int, Slice]
    since_full: int

    @property
    def shared(self) -> tuple[Segment, ...]:
        """The shared files this checkpoint references (the registry counts them)."""
        return self.segments

    @property
    def shared_handles(self) -> tuple[FileHandle, ...]:
        """The handles of :attr:`shared` (every segment lives in ``shared/``), the interface
        the task's snapshot writer reads of every native keyed handle, RocksDB's too."""
        return tuple(s.handle for s in self.segments)

    @property
    def full_size(self) -> int:
        """Bytes of every segment referenced, dead slices included."""
        return sum(s.handle.size for s in self.segments)

    @property
    def live_size(self) -> int:
        """Bytes of the key group blobs this state consists of."""
        return sum(length for _, _, length in self.groups.values())

    @property
    def incremental_size(self) -> int:
        """Bytes this checkpoint wrote (its own segment)."""
        return sum(s.handle.size for s in self.segments if s.created_by == self.checkpoint_id)

    def download(
        self, read: Reader, restoring_checkpoint: int, local_dir: str
    ) -> DownloadedHeapState:
        """Every segment, read and verified (:func:`download`; ``local_dir`` is not used)."""
        return download(self, read, restoring_checkpoint)

    def without_shared_file(self, path: str) -> HeapIncrementalHandle | None:
        """This state as if the segment at ``path`` were an empty valid segment: every key
        group sliced from it restores empty; None if no key group is sliced from it."""
        hit = {i for i, segment in enumerate(self.segments) if segment.handle.path == path}
        kept = {g: where for g, where in self.groups.items() if where[0] not in hit}
        if not path or len(kept) == len(self.groups):
            return None
        return dataclasses.replace(self, groups=kept)


@dataclass(frozen=True, slots=True)
class HeapNativeSnapshot:
    """A heap incremental checkpoint before upload: the blobs of the rewritten key groups
    (pickled on the task thread, :mod:`.heap_snapshot`) and the slices reused from the base.
    Never pickled into a state file: :meth:`upload` turns it into a handle."""

    checkpoint_id: int
    operator_name: str
    backend_id: str
    key_groups: tuple[int, int]
    max_parallelism: int
    blobs: PendingKeyGroups
    #: The base's handle and the key groups reused from it (its own slice tuples: no copy).
    base: HeapIncrementalHandle | None
    reuse: dict[int, Slice]
    since_full: int
    #: Called on the I/O thread with the result (the backend keeps it until completion).
    on_uploaded: Callable[[HeapIncrementalHandle], None]

    @property
    def pending(self) -> PendingKeyGroups:
        """The blobs still to pickle on the task thread (in slices, before the upload)."""
        return self.blobs

    def upload(
        self, write_shared: SharedWriter, write_private: PrivateWriter | None = None
    ) -> HeapIncrementalHandle:
        """Write the rewritten key groups as one segment into ``shared/`` (blocking I/O) and
        return the handle (``write_private`` is not used). The blobs must be complete
        (:attr:`pending` on the task thread): a pending one would be pickled here, racing with
        the task."""
        if self.blobs.remaining:
            raise StateError(
                f"operator {self.operator_name!r}: checkpoint {self.checkpoint_id}: "
                f"{self.blobs.remaining} key groups not serialized before the upload"
            )
        cid = self.checkpoint_id
        segments: list[Segment] = []
        groups: dict[int, Slice] = {}
        if self.base is not None and self.reuse:
            index: dict[int, int] = {}  # base's segment index -> this handle's
            for kg, (b, offset, length) in self.reuse.items():
                i = index.get(b)
                if i is None:
                    i = index[b] = len(segments)
                    segments.append(self.base.segments[b])
                groups[kg] = (i, offset, length) if i != b else self.reuse[kg]
        blobs = self.blobs.result()
        if blobs:
            parts: list[bytes] = []
            position = 0
            mine = len(segments)
            for kg in sorted(blobs):
                blob = blobs[kg]
                groups[kg] = (mine, position, len(blob))
                parts.append(blob)
                position += len(blob)
            safe = "".join(c if c.isalnum() else "_" for c in self.operator_name)[:40]
            name = f"{safe}-heap-{self.backend_id}-{cid}.kgs"
            segments.append(Segment(write_shared(name, b"".join(parts)), cid))
        result = HeapIncrementalHandle(
            cid, self.operator_name, self.key_groups, self.max_parallelism, tuple(segments),
            groups, self.since_full,
        )  # fmt: skip
        self.on_uploaded(result)
        return result

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError(
            f"operator {self.operator_name!r}: the heap incremental checkpoint "
            f"{self.checkpoint_id} was not uploaded before the state file was written"
        )


@dataclass(frozen=True, slots=True)
class DownloadedHeapState:
    """A :class:`HeapIncrementalHandle` whose segments were read and verified: the blob of
    each of its key groups (the restoring backend keeps those it owns)."""

    handle: HeapIncrementalHandle
    blobs: dict[int, bytes]


def download(handle: HeapIncrementalHandle, read: Reader,
             restoring_checkpoint: int) -> DownloadedHeapState:  # fmt: skip
    """Read each segment of ``handle`` once, verified (size and SHA-256) before use, and slice
    its key groups' blobs. A corrupt or missing segment raises :class:`CorruptCheckpointError`
    naming the file, the checkpoint that wrote it and the one being restored."""
    data: list[bytes] = []
    for segment in handle.segments:
        try:
            data.append(read(segment.handle, restoring_checkpoint))
        except CorruptCheckpointError as err:
            raise CorruptCheckpointError(
                f"operator {handle.operator_name!r}: shared heap state file "
                f"{segment.handle.path} (written by checkpoint {segment.created_by}, shared "
                f"with checkpoint {restoring_checkpoint} being restored) is corrupt: {err}",
                checkpoint=restoring_checkpoint,
                path=err.path,
                expected=err.expected,
                actual=err.actual,
            ) from err
    blobs = {kg: data[i][offset : offset + length]
             for kg, (i, offset, length) in handle.groups.items()}  # fmt: skip
    return DownloadedHeapState(handle, blobs)


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When an incremental checkpoint is full again (see the module docstring)."""

    #: Every ``interval``-th checkpoint after a full one is full (1: all are full).
    interval: int = 10
    #: Full when the base's segments exceed this many times its live bytes.
    max_space_amplification: float = 2.0

    def is_full_due(self, base: HeapIncrementalHandle) -> bool:
        if base.since_full + 1 >= self.interval:
            return True
        return base.full_size > self.max_space_amplification * max(1, base.live_size)


@dataclass
class DirtyKeyGroups:
    """Which key groups changed since which snapshot (see the module docstring).

    ``stamps[offset]`` is the value of ``epoch`` when the key group at ``offset`` was last
    accessed; ``epoch`` counts the snapshots taken. A key group changed after a snapshot
    taken at epoch ``e`` iff its stamp is > ``e``. Task thread only, except
    :meth:`uploaded` (the I/O thread: one dict store).
    """

    groups: int
    policy: CompactionPolicy
    stamps: list[int] = field(init=False)
    epoch: int = 1
    backend_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    #: The last completed checkpoint's handle and the epoch its snapshot was taken at.
    base: tuple[HeapIncrementalHandle, int] | None = None
    #: Uploaded, not yet completed: checkpoint id -> (handle, snapshot epoch).
    _uploads: dict[int, tuple[HeapIncrementalHandle, int]] = field(default_factory=dict)
    #: Checkpoints taken and not known completed (or subsumed) yet: id -> (snapshot epoch,
    #: the slices it reuses).
    _taken: dict[int, tuple[int, HeapIncrementalHandle | None, dict[int, Slice]]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        self.stamps = [0] * (self.groups + 1)  # + the "no key" offset, never read

    def mark_all(self) -> None:
        """Every key group changed (restore, a TTL conversion)."""
        self.stamps[:] = [self.epoch] * len(self.stamps)

    def take(self, checkpoint_id: int, full: bool, non_empty: Callable[[], list[int]],
             is_non_empty: Callable[[int], bool], current: int,
             start: int) -> tuple[list[int], HeapIncrementalHandle | None,
                                  dict[int, Slice], int]:  # fmt: skip
        """A snapshot at ``checkpoint_id``: the offsets to pickle (ascending), the base and the
        key groups reused from it, and the incremental count. ``non_empty()`` lists the offsets
        holding state (for a full one); an incremental one asks ``is_non_empty`` only of the
        changed ones. ``current`` is the key context's offset: its caller may still write it
        without switching keys, so it is stamped for the next."""
        epoch = self.epoch
        self.epoch += 1
        dirty, reuse, since_full = self._diff(full, non_empty, is_non_empty, start)
        base = self.base[0] if reuse and self.base is not None else None
        self._taken[checkpoint_id] = (epoch, base, reuse)
        if current < self.groups:  # after the diff: this checkpoint takes it as it is now
            self.stamps[current] = self.epoch
        return dirty, base, reuse, since_full

    def _diff(self, full: bool, non_empty: Callable[[], list[int]],
              is_non_empty: Callable[[int], bool],
              start: int) -> tuple[list[int], dict[int, Slice], int]:  # fmt: skip
        base = self.base
        if full or base is None or self.policy.is_full_due(base[0]):
            return non_empty(), {}, 0
        handle, base_epoch = base
        # Checkpoints taken after the base may complete (unknown here yet) and subsume it; a
        # base slice one of them does not reuse could be deleted then: rewrite it instead.
        later = [(other, reuse) for cid, (_, other, reuse) in self._taken.items()
                 if cid > handle.checkpoint_id]  # fmt: skip
        groups = self.groups
        changed = {o for o, stamp in enumerate(self.stamps) if stamp > base_epoch and o < groups}
        dirty = [o for o in changed if is_non_empty(o)]
        # A key group not changed since the base is as the base has it: in it, or empty (or
        # holding only entries expired already then, which the base left out).
        reuse = {kg: at for kg, at in handle.groups.items() if kg - start not in changed}
        if later:
            for kg in [kg for kg, at in reuse.items() if not _reused_by_all(handle, kg, later)]:
                del reuse[kg]
                dirty.append(kg - start)
        dirty.sort()
        return dirty, reuse, handle.since_full + 1

    def uploaded(self, handle: HeapIncrementalHandle) -> None:
        """The I/O thread uploaded checkpoint ``handle.checkpoint_id``."""
        taken = self._taken.get(handle.checkpoint_id)
        if taken is not None:
            self._uploads[handle.checkpoint_id] = (handle, taken[0])

    def completed(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: it becomes the base (if newer); earlier
        uploads and epochs are forgotten (subsumed)."""
        upload = self._uploads.get(checkpoint_id)
        if upload is not None and (self.base is None or self.base[0].checkpoint_id < checkpoint_id):
            self.base = upload
        for cid in [c for c in list(self._uploads) if c <= checkpoint_id]:  # list(): atomic
            self._uploads.pop(cid, None)
        for cid in [c for c in self._taken if c <= checkpoint_id]:
            del self._taken[cid]

    def restored(self) -> None:
        """State was restored: no base (the next checkpoint is full), every group changed."""
        self.base = None
        self._uploads.clear()
        self._taken.clear()
        self.mark_all()


def _reused_by_all(
    base: HeapIncrementalHandle,
    kg: int,
    later: list[tuple[HeapIncrementalHandle | None, dict[int, Slice]]],
) -> bool:
    """Whether every later checkpoint reuses the same slice of the same segment for ``kg``."""
    i, offset, length = base.groups[kg]
    segment = base.segments[i]
    for other_base, reuse in later:
        at = reuse.get(kg)
        if other_base is None or at is None:
            return False
        if (other_base.segments[at[0]], at[1], at[2]) != (segment, offset, length):
            return False
    return True
