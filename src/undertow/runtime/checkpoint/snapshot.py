"""What one subtask's checkpoint contains, before it is written to storage.

Per operator (keyed by uid): keyed state per key group, timers per key group, operator state,
and operator-specific state (a source reader's splits, a sink's pending committables). A
subtask's snapshot is serialized into one state file; the coordinator only sees its handle.
Keyed parts are per key group, so a restore at another parallelism picks the key groups it
owns from every old subtask whose range overlaps.

An unaligned checkpoint (or an aligned one that timed out) adds the subtask's
:class:`ChannelState`: its in-flight input and output buffers. Channel state cannot be
re-routed to another parallelism yet, so it records the shape it was taken at.

What a subtask acknowledges is a :class:`SubtaskStateHandle`: its state file and, when its
channel state went to a worker's shared channel-state files, the merged handles of that state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.state.snapshot_strategy import NativeStateHandle, Reader
from undertow.storage import FileHandle


@dataclass
class OperatorSnapshot:
    """``keyed`` holds canonical blobs per key group; ``keyed_native`` instead the backend's
    native snapshot (:mod:`undertow.state.snapshot_strategy`): a
    :class:`~undertow.state.snapshot_strategy.NativeSnapshot` until uploaded, then its
    :class:`~undertow.state.snapshot_strategy.NativeStateHandle` in the state file, and once
    a restoring worker downloaded it, the download (snapshots written before the field
    unpickle with ``None``)."""

    keyed: dict[int, bytes] = field(default_factory=dict)
    timers: dict[int, bytes] = field(default_factory=dict)
    operator: bytes | None = None
    custom: bytes | None = None
    keyed_native: Any = None

    @property
    def is_empty(self) -> bool:
        return not (self.keyed or self.timers or self.operator or self.custom or self.keyed_native)


#: An input channel: (input gate index, channel index in the gate).
InputChannelInfo = tuple[int, int]
#: An output channel: (output index, i.e. the task's partition, subpartition index).
SubpartitionInfo = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ChannelState:
    """One subtask's in-flight data of one checkpoint (reference §3.1), in memory.

    ``inputs`` and ``outputs`` map a channel to its chunks in stream order; a chunk is one
    network buffer in the encoding of :func:`~undertow.runtime.checkpoint.channel_state_writer.
    encode_chunk`. Input chunks are the records the task had not processed when the barrier
    passed them; output chunks the buffers the barrier overtook. ``subtask_index``,
    ``parallelism``, ``gate_channels`` (channels per input gate) and ``subpartitions`` (per
    output) describe the shape at the checkpoint; a restore must match it.
    """

    checkpoint_id: int
    subtask_index: int
    parallelism: int
    gate_channels: tuple[int, ...]
    subpartitions: tuple[int, ...]
    inputs: dict[InputChannelInfo, tuple[bytes, ...]] = field(default_factory=dict)
    outputs: dict[SubpartitionInfo, tuple[bytes, ...]] = field(default_factory=dict)

    @property
    def input_bytes(self) -> int:
        return sum(len(c) for chunks in self.inputs.values() for c in chunks)

    @property
    def output_bytes(self) -> int:
        return sum(len(c) for chunks in self.outputs.values() for c in chunks)

    @property
    def is_empty(self) -> bool:
        return not (self.inputs or self.outputs)


@dataclass
class SubtaskSnapshot:
    """All operators of one subtask's chain; ``watermark`` is the last one emitted;
    ``parallelism`` is the one the snapshot was taken at (None in snapshots written before it
    was recorded), which tells a restore whether state must be redistributed;
    ``channel_state`` the in-flight data of an unaligned checkpoint (``None`` if aligned or
    empty; snapshots written before the field existed unpickle with the class default)."""

    operators: dict[str, OperatorSnapshot] = field(default_factory=dict)
    watermark: int | None = None
    parallelism: int | None = None
    channel_state: ChannelState | None = None

    def download_native(self, read: Reader, checkpoint_id: int, local_dir: str) -> None:
        """Replace each operator's native state handle by its download (fetched and verified
        by the handle's backend format, :meth:`NativeStateHandle.download
        <undertow.state.snapshot_strategy.NativeStateHandle.download>`). Blocking I/O: the
        worker's I/O pool, before the chain restores; ``local_dir`` is the state backend's."""
        for part in self.operators.values():
            handle: NativeStateHandle | None = part.keyed_native
            if handle is not None:
                part.keyed_native = handle.download(read, checkpoint_id, local_dir)


@dataclass(frozen=True, slots=True)
class SubtaskStateHandle:
    """What one subtask acknowledges for one checkpoint: the handle of its state file
    (``None``: no operator state) and its channel state in shared channel-state files
    (``None``: none, or it is inside the state file as ``SubtaskSnapshot.channel_state``)."""

    state: FileHandle | None = None
    channel_state: ChannelStateHandles | None = None
    #: Files in ``<job>/shared/`` the state file references (incremental checkpoints).
    shared: tuple[FileHandle, ...] = ()

    @classmethod
    def of(cls, handle: object) -> SubtaskStateHandle:
        """Normalize an acknowledged handle: a :class:`SubtaskStateHandle`, a bare state
        :class:`~undertow.storage.FileHandle` or ``None``."""
        if isinstance(handle, SubtaskStateHandle):
            return handle
        if handle is None or isinstance(handle, FileHandle):
            return cls(handle, None)
        raise TypeError(f"not a subtask state handle: {handle!r}")

    @property
    def has_channel_state(self) -> bool:
        cs = self.channel_state
        return cs is not None and (cs.input is not None or cs.output is not None)

    @property
    def is_empty(self) -> bool:
        return self.state is None and not self.has_channel_state and not self.shared

    def files(self) -> list[FileHandle]:
        """The files this subtask's state references (a shared channel-state file too)."""
        found = [] if self.state is None else [self.state]
        return found + (self.channel_state.files() if self.channel_state is not None else [])
