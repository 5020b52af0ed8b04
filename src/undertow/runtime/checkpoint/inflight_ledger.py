"""Incremental channel state: where a subtask's queued in-flight buffers were persisted, and
whether its next unaligned checkpoint may refer to them there instead of writing them again
(``execution.checkpointing.unaligned.incremental-channel-state.enabled``; FLIP-76's roadmap).

Invariant (safety): checkpoint K refers to checkpoint P's file only if this subtask was told P
completed and took no checkpoint between P and K (a savepoint counts; a savepoint neither
refers nor is referred to), so nothing subsumes P before K registers P's file in the
shared-state registry. Otherwise the chunk is written again. The story and the argument:
docs/design.md, "Incremental channel state".

Pure bookkeeping, no I/O. Threading: the task's loop thread only. Memory: the buffers of the
latest completed checkpoint's channel state (and of those still being written) until the next
completion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.channel_state_writer import (
    ChannelStateResult,
    ChannelStateWriter,
    ReferencesChannelState,
)
from undertow.runtime.network.buffer import Buffer
from undertow.storage import FileHandle

#: Records of checkpoints not completed yet kept at most (oldest dropped: their buffers are
#: then written again), so checkpoints that never complete here hold no memory for long.
MAX_OPEN_RECORDS = 8


@dataclass(frozen=True, slots=True)
class ChunkLocation:
    """Where one chunk lies: ``length`` bytes at ``start`` of ``file``, inside the verified
    region ``[region_start, +region_length)`` whose sha256 is ``region_sha256``."""

    file: FileHandle
    region_start: int
    region_length: int
    region_sha256: str
    start: int
    length: int

    def follows(self, other: ChunkLocation) -> bool:
        """This chunk comes right after ``other`` in the same region (one run)."""
        return (
            self.file.path == other.file.path
            and self.region_start == other.region_start
            and self.start == other.start + other.length
        )


def reference(channel: ChannelId, run: list[ChunkLocation]) -> ChannelStateReference:
    """One reference to a run of consecutive chunks (``run`` non-empty, each following the
    previous one: :meth:`ChunkLocation.follows`)."""
    head = run[0]
    return ChannelStateReference(
        channel=channel, position=0, file=head.file, region_start=head.region_start,
        region_length=head.region_length, region_sha256=head.region_sha256,
        start=head.start, lengths=tuple(loc.length for loc in run),
    )  # fmt: skip


@dataclass(slots=True)
class _Record:
    """What one checkpoint persisted: per (side, channel) its written chunks in order (the
    buffer each one was, or ``None``), and the buffers it referred to with their location."""

    referencable: bool
    written: dict[tuple[ChannelStateDirection, ChannelId], list[Buffer | None]] = field(
        default_factory=dict
    )
    referred: list[tuple[ChannelStateDirection, Buffer, ChunkLocation]] = field(
        default_factory=list
    )
    #: (side, id(buffer)) -> (buffer, location), once the writer returned the handles.
    located: dict[tuple[ChannelStateDirection, int], tuple[Buffer, ChunkLocation]] | None = None


class InflightLedger:
    """The persisted locations of one subtask's in-flight buffers (module docstring).

    Lifecycle per checkpoint: :meth:`written` / :meth:`referred` while its capture runs,
    :meth:`taken` once its barrier was handled (every checkpoint the subtask takes, with or
    without channel state), :meth:`handles` when its channel state is written,
    :meth:`completed` or :meth:`aborted`.
    """

    __slots__ = ("_enabled", "_known", "_known_id", "_records", "_taken_since")

    def __init__(self, enabled: bool = True) -> None:
        self._enabled = enabled
        self._records: dict[int, _Record] = {}
        #: The locations K may refer to: those of the latest completed checkpoint.
        self._known: dict[tuple[ChannelStateDirection, int], tuple[Buffer, ChunkLocation]] = {}
        self._known_id = -1
        #: Checkpoints the subtask took after ``_known_id``.
        self._taken_since: set[int] = set()

    @classmethod
    def of(cls, enabled: bool, writer: ChannelStateWriter | None) -> InflightLedger:
        """A ledger that works only if ``enabled`` and ``writer`` can refer to older files
        (:class:`ReferencesChannelState`: the workers' shared-file writer)."""
        return cls(enabled and isinstance(writer, ReferencesChannelState))

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def open_checkpoints(self) -> tuple[int, ...]:
        """Checkpoints whose chunks it still keeps (not completed or dropped yet)."""
        return tuple(sorted(self._records))

    # -- the capture ---------------------------------------------------------------------------
    def locate(
        self, checkpoint_id: int, side: ChannelStateDirection, buffer: Buffer
    ) -> ChunkLocation | None:
        """Where ``buffer`` (still queued on ``side``) was persisted, if checkpoint
        ``checkpoint_id`` may refer to it there; ``None``: write it again."""
        if not self._known or any(t < checkpoint_id for t in self._taken_since):
            return None
        found = self._known.get((side, id(buffer)))
        if found is None or found[0] is not buffer:
            return None
        return found[1]

    def written(
        self,
        checkpoint_id: int,
        side: ChannelStateDirection,
        channel: ChannelId,
        buffer: Buffer | None,
    ) -> None:
        """A chunk was appended to ``channel``'s state: ``buffer`` encoded, or (``None``)
        bytes that are no queued buffer (a partial record, a batch re-serialized)."""
        if self._enabled:
            record = self._record(checkpoint_id)
            record.written.setdefault((side, channel), []).append(buffer)

    def referred(
        self,
        checkpoint_id: int,
        side: ChannelStateDirection,
        buffers: list[Buffer],
        run: list[ChunkLocation],
    ) -> None:
        """``buffers`` were referred to at ``run`` (their locations, in order)."""
        if self._enabled:
            record = self._record(checkpoint_id)
            record.referred.extend((side, b, loc) for b, loc in zip(buffers, run, strict=True))

    def taken(self, checkpoint_id: int, referencable: bool) -> None:
        """The subtask took checkpoint ``checkpoint_id`` (``referencable``: not a
        savepoint). Until it completes, no later checkpoint refers to what came before it."""
        if not self._enabled:
            return
        self._taken_since.add(checkpoint_id)
        record = self._record(checkpoint_id)
        record.referencable = record.referencable and referencable

    # -- the writer and the coordinator --------------------------------------------------------
    def handles(self, checkpoint_id: int, handles: ChannelStateHandles) -> None:
        """The channel state of ``checkpoint_id`` was written: locate its chunks (those kept
        inline in the metadata have no file and stay unlocated)."""
        record = self._records.get(checkpoint_id)
        if record is None:
            return
        located: dict[tuple[ChannelStateDirection, int], tuple[Buffer, ChunkLocation]] = {}
        for side, handle in (
            (ChannelStateDirection.INPUT, handles.input),
            (ChannelStateDirection.OUTPUT, handles.output),
        ):
            if handle is not None and handle.file is not None:
                _locate_written(side, handle, record, located)
        for side, buffer, loc in record.referred:
            located[(side, id(buffer))] = (buffer, loc)
        record.located = located

    def written_state(self, checkpoint_id: int, result: ChannelStateResult) -> None:
        """The writer's result for ``checkpoint_id`` (``when_finished``): handles are located
        (:meth:`handles`); in-memory state has no file to refer to."""
        if isinstance(result, ChannelStateHandles):
            self.handles(checkpoint_id, result)

    def completed(self, checkpoint_id: int) -> None:
        """``checkpoint_id`` completed: its locations are what the next checkpoint may refer
        to (if the subtask took no other checkpoint since); older records go."""
        if not self._enabled or checkpoint_id <= self._known_id:
            return
        record = self._records.get(checkpoint_id)
        self._known_id = checkpoint_id
        self._taken_since = {t for t in self._taken_since if t > checkpoint_id}
        ok = record is not None and record.referencable and record.located is not None
        self._known = record.located if ok and record is not None and record.located else {}
        self._records = {c: r for c, r in self._records.items() if c > checkpoint_id}

    def aborted(self, checkpoint_id: int) -> None:
        """``checkpoint_id`` will not complete: its record goes (it stays among the taken
        ones: whether an abort is final is the coordinator's to say, so be conservative)."""
        self._records.pop(checkpoint_id, None)

    def _record(self, checkpoint_id: int) -> _Record:
        record = self._records.get(checkpoint_id)
        if record is None:
            record = self._records[checkpoint_id] = _Record(referencable=True)
            for old in sorted(self._records)[: max(0, len(self._records) - MAX_OPEN_RECORDS)]:
                del self._records[old]
        return record


def _locate_written(
    side: ChannelStateDirection,
    handle: MergedChannelStateHandle,
    record: _Record,
    out: dict[tuple[ChannelStateDirection, int], tuple[Buffer, ChunkLocation]],
) -> None:
    """Pair the handle's chunks, channel by channel, with the buffers recorded as written
    (a channel whose counts differ is skipped: its chunks are written again next time)."""
    assert handle.file is not None
    by_channel: dict[ChannelId, list[tuple[int, int]]] = {}
    for entry in handle.entries():
        by_channel.setdefault(entry.channel, []).append((entry.offset, entry.length))
    for channel, chunks in by_channel.items():
        buffers = record.written.get((side, channel), [])
        if len(buffers) != len(chunks):
            continue
        for buffer, (start, length) in zip(buffers, chunks, strict=True):
            if buffer is not None:
                loc = ChunkLocation(handle.file, handle.range_start, handle.range_length,
                                    handle.range_sha256, start, length)  # fmt: skip
                out[(side, id(buffer))] = (buffer, loc)
