"""Collects one subtask's channel state (in-flight buffers) per checkpoint (reference §3.1-3.2).

A subtask must start and finish, or abort, every checkpoint it takes, also one that needs no
channel state (the shared writer waits for every member of a group).

Threading: the task's loop thread only; callbacks run synchronously inside ``finish_*``.
Lifecycle: at most a few checkpoints are open at a time; starting checkpoint ``n`` drops any
older unfinished one (a newer barrier subsumes it). Calls for a checkpoint that is not open
(never started, aborted or already finished) are ignored, so a late buffer of an aborted
checkpoint cannot leak into another one.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, runtime_checkable

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    ChannelStateReference,
)
from undertow.runtime.checkpoint.snapshot import ChannelState, InputChannelInfo, SubpartitionInfo
from undertow.runtime.network.buffer import Buffer

#: A subtask's finished channel state: in memory, or persisted (handles into shared files).
ChannelStateResult: TypeAlias = ChannelState | ChannelStateHandles

PARTIAL = 1
LAST = 0
#: A whole batch of recovered input (:func:`encode_recovered_chunk`).
RECOVERED = 2


def encode_chunk(buffer: Buffer) -> bytes:
    """One network buffer as a channel-state chunk (a flag byte, then its bytes)."""
    return (b"\x01" if buffer.partial else b"\x00") + buffer.data


def encode_recovered_chunk(batch: bytes) -> bytes:
    """One whole serialized batch of *recovered* input: in-flight data a rescaled restore
    re-emitted that the subtask had not processed when a checkpoint during recovery was
    taken. A restore in place hands every channel's recovered chunks to the task before any
    other input chunk (they precede all live data at the consumer, as the
    ``EndOfChannelStateEvent`` made them do when they were re-emitted)."""
    return b"\x02" + batch


def is_recovered_chunk(chunk: bytes) -> bool:
    """``chunk`` is one of :func:`encode_recovered_chunk`."""
    return chunk[:1] == b"\x02"


def decode_chunk(chunk: bytes) -> Buffer:
    """The network buffer a chunk of :func:`encode_chunk` or :func:`encode_recovered_chunk`
    holds (a recovered chunk is one whole buffer)."""
    if not chunk or chunk[0] not in (LAST, PARTIAL, RECOVERED):
        head = chunk[:1].hex() or "empty"
        raise ValueError(f"not a channel-state chunk (flag {head}, {len(chunk)} bytes)")
    return Buffer(chunk[1:], partial=chunk[0] == PARTIAL)


@runtime_checkable
class ReferencesChannelState(Protocol):
    """A writer that can make a checkpoint refer to a run of an older checkpoint's file
    instead of writing its chunks again (the workers' shared-file writer; the in-memory one
    cannot: the task then reads the run and writes its chunks)."""

    def add_input_reference(
        self, checkpoint_id: int, channel: InputChannelInfo, reference: ChannelStateReference
    ) -> None:
        """Splice ``reference`` into ``channel``'s input state after the chunks added so
        far."""
        ...

    def add_output_reference(
        self, checkpoint_id: int, channel: SubpartitionInfo, reference: ChannelStateReference
    ) -> None:
        """Splice ``reference`` into subpartition ``channel``'s output state after the chunks
        added so far."""
        ...


@runtime_checkable
class ReportsDurableFromIOThread(Protocol):
    """A writer that can tell the I/O thread's own callback when a checkpoint's channel
    state is durable, before the result reaches the loop (the workers' shared-file writer):
    the subtask's acknowledgement then need not wait for a loop turn."""

    def when_durable(
        self, checkpoint_id: int, callback: Callable[[ChannelStateHandles], None]
    ) -> None:
        """``callback(handles)`` on the I/O thread that wrote the file holding this subtask's
        state of ``checkpoint_id``, right after the write; at once, on the calling thread, if
        that already happened. Never for state that needed no file (inline), a failed write
        or an aborted checkpoint: ``when_finished`` reports every outcome, later, on the
        loop, so a caller takes whichever comes first."""
        ...


class ChannelStateWriter(Protocol):
    """What a subtask needs to persist its in-flight data (see the module docstring).

    Implementations: the workers' :class:`~.channel_state_files.SubtaskChannelStateWriter`
    (shared files, handles) and the testing kit's ``InMemoryChannelStateWriter``.
    """

    @property
    def in_state_file(self) -> bool:
        """True if the result is a :class:`ChannelState` for the subtask's state file (written
        once the channel state is complete); False if the writer persists it itself and
        returns handles (the state file is then written in parallel)."""
        ...

    def start(self, checkpoint_id: int) -> None: ...

    def is_started(self, checkpoint_id: int) -> bool: ...

    def add_input(self, checkpoint_id: int, channel: InputChannelInfo, data: bytes) -> None: ...

    def add_output(self, checkpoint_id: int, channel: SubpartitionInfo, data: bytes) -> None: ...

    def finish_input(self, checkpoint_id: int) -> None: ...

    def finish_output(self, checkpoint_id: int) -> None: ...

    def abort(self, checkpoint_id: int) -> None: ...

    def when_finished(
        self,
        checkpoint_id: int,
        callback: Callable[[ChannelStateResult], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None: ...
