"""The task's half of channel recovery: restored channel state put back before any operator runs.

In place (same parallelism): restored output buffers go back into their subpartitions (a
window at a time, read as they are sent), and
restored input becomes lazy per-channel streams of the input processor (:mod:`.stream`), decoded
and processed before any live input (:func:`restore_in_place`). After a rescale: the records of
the old channels a producer took over are re-emitted through its record writers, each rescaled
output ending with a blocking ``EndOfChannelStateEvent`` (:func:`reemit`); what a subtask does
after a rescale is its :class:`SubtaskChannelRecovery`, built by the worker (:mod:`.reader`).

Threading: the task's loop thread, once, from ``StreamTask.run`` before ``open``.
Invariant: state of another shape is never restored in place (it fails, naming checkpoint
and operator); re-emitted records are not bounded by the output budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from undertow.core.errors import RestoreError, StateError
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.channel_recovery.rescale import (
    EndOfChannelStateEvent,
    channel_records,
)
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_handles import ChannelId
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, is_recovered_chunk
from undertow.runtime.checkpoint.snapshot import ChannelState
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter

#: Takes one channel's restored input stream: (gate, channel, stream, recovered).
RestoredInput = Callable[[InputGate, InputChannel, RestoredInputStream, bool], None]


@dataclass(frozen=True, slots=True)
class ReemittedChannel:
    """An old channel a subtask re-emits through one of its outputs after a rescale."""

    #: Index of the output (in ``vertex.outputs`` order) the records go to.
    output: int
    #: The old channel's chunks in stream order: its consumer's input, then its producer's
    #: output (read a block at a time as they are re-emitted).
    streams: tuple[RestoredInputStream, ...]
    #: Checkpoint, edge and old channel, for errors.
    description: str


@dataclass(frozen=True, slots=True)
class SubtaskChannelRecovery:
    """What one subtask does for a restore with channel state beyond putting it back (all
    empty: nothing)."""

    #: Old channels this subtask re-emits, in order, before any operator.
    reemit: tuple[ReemittedChannel, ...] = ()
    #: Outputs (indices) that end their re-emitted data with an ``EndOfChannelStateEvent``.
    recovery_outputs: frozenset[int] = frozenset()
    #: Gates (indices) that receive re-emitted data: the JobMaster triggers no checkpoint
    #: before every one of them ended it (:class:`.upstream.UpstreamRecoveryTracker`).
    recovering_gates: frozenset[int] = frozenset()
    #: ``during-recovery.enabled`` false and the subtask restores input in place: it reports
    #: once it consumed that input, and the JobMaster triggers no checkpoint before
    #: (:func:`.plan.in_place_input_subtasks`).
    reports_restored_input: bool = False
    #: Input channel -> its restored input read from files, lazily: (recovered input, the
    #: rest) (:func:`.stream.restored_input`).
    restored_input: Mapping[ChannelId, tuple[RestoredInputStream, RestoredInputStream]] = field(
        default_factory=dict
    )
    #: Subpartition -> its restored output buffers read from files, lazily
    #: (:func:`.stream.restored_channels`).
    restored_output: Mapping[ChannelId, RestoredInputStream] = field(default_factory=dict)


class RecoveringSubtask(Protocol):
    """The subtask as its channel recovery sees it (``TaskDeployment`` implements it)."""

    @property
    def name(self) -> str: ...

    @property
    def vertex(self) -> JobVertex: ...

    @property
    def subtask_index(self) -> int: ...

    @property
    def gates(self) -> tuple[InputGate, ...]: ...

    @property
    def channel_recovery(self) -> SubtaskChannelRecovery: ...


class CarriesChannelState(Protocol):
    """A restored snapshot as channel recovery sees it: the in-flight data it carries, or
    ``None`` (``SubtaskSnapshot`` implements it; snapshots pickled before the field existed
    read the class default, ``None``)."""

    @property
    def channel_state(self) -> ChannelState | None: ...


def restore_in_place(
    subtask: RecoveringSubtask,
    snapshots: Sequence[CarriesChannelState],
    partitions: Sequence[ResultPartition],
    add_input: RestoredInput,
) -> None:
    """Queue restored output buffers (lazily: :meth:`.ResultSubpartition.restore_output`);
    hand each input channel's restored streams to
    ``add_input``: first the recovered input of every channel (re-emitted data of a rescaled
    restore that a checkpoint during recovery found unprocessed: it precedes all live data of
    the gate), then each channel's other input, in channel order.

    Input restored from files comes lazily (``subtask.channel_recovery.restored_input``);
    input of an in-memory snapshot is made a stream of its chunks. At most one of
    ``snapshots`` carries channel state (more fail the shape check: state restored in place
    is never redistributed)."""
    streams = dict(subtask.channel_recovery.restored_input)
    outputs = dict(subtask.channel_recovery.restored_output)
    states = [s.channel_state for s in snapshots if s.channel_state is not None]
    if not states and not streams and not outputs:
        return
    if states:
        state = states[0]
        _check_shape(subtask, state, len(snapshots), partitions)
        for c, chunks in state.outputs.items():
            outputs[c] = RestoredInputStream(chunks)
        for c, chunks in state.inputs.items():
            n = _recovered_prefix(subtask, state, c, chunks)
            streams[c] = RestoredInputStream(chunks).split(n)
    for (output, subpartition), out in sorted(outputs.items()):
        partition = partitions[output]
        partition.subpartitions[subpartition].restore_output(
            out, decode_chunk, partition.max_buffers_per_channel
        )
    inputs = sorted(streams.items())
    for first_pass in (True, False):
        for (gate_index, channel_index), (recovered, rest) in inputs:
            gate = subtask.gates[gate_index]
            channel = gate.channels[channel_index]
            stream = recovered if first_pass else rest
            if not stream.exhausted:
                add_input(gate, channel, stream, first_pass)


def reemit(
    subtask: RecoveringSubtask, writers: Sequence[RecordWriter], output_operators: Sequence[str]
) -> None:
    """Rescaled restore: emit the records of the old channels this subtask took over
    through their edges' record writers (each old channel deserialized over its chunks in
    stream order), then end each rescaled output with a blocking ``EndOfChannelStateEvent``."""
    recovery = subtask.channel_recovery
    for channel in recovery.reemit:
        output, where = channel.output, channel.description
        writer = writers[output]
        try:
            chunks = (c for s in channel.streams for c in iter(s.next_chunk, None))
            for values, stamps in channel_records(chunks, where):
                writer.emit(values, stamps)
        except ValueError as err:
            raise RestoreError(
                f"{subtask.name}: cannot re-emit the in-flight data of operator "
                f"'{output_operators[output]}': {err}"
            ) from err
    for output in sorted(recovery.recovery_outputs):
        writers[output].broadcast_event(EndOfChannelStateEvent(), blocks=True)


def _recovered_prefix(
    subtask: RecoveringSubtask, state: ChannelState, channel: tuple[int, int],
    chunks: Sequence[bytes],
) -> int:  # fmt: skip
    """How many chunks at the head of ``chunks`` are recovered ones; a recovered chunk after
    another one is state no checkpoint writes (it fails, naming checkpoint and channel)."""
    n = 0
    while n < len(chunks) and is_recovered_chunk(chunks[n]):
        n += 1
    if any(is_recovered_chunk(c) for c in chunks[n:]):
        raise StateError(
            f"{subtask.name}: checkpoint {state.checkpoint_id} holds recovered input of input "
            f"channel {channel} after other input of that channel; recovered input always "
            "comes first (the checkpoint is damaged)"
        )
    return n


def _check_shape(
    subtask: RecoveringSubtask,
    state: ChannelState,
    num_snapshots: int,
    partitions: Sequence[ResultPartition],
) -> None:
    vertex = subtask.vertex
    gates = tuple(len(g.channels) for g in subtask.gates)
    subpartitions = tuple(len(p.subpartitions) for p in partitions)
    taken = (state.subtask_index, state.parallelism, state.gate_channels, state.subpartitions)
    now = (subtask.subtask_index, vertex.parallelism, gates, subpartitions)
    if num_snapshots == 1 and taken == now:
        return
    raise StateError(
        f"{subtask.name}: checkpoint {state.checkpoint_id} holds in-flight data (unaligned "
        f"channel state) of operator '{vertex.name}' taken at parallelism "
        f"{state.parallelism} with {state.gate_channels} input channels per gate and "
        f"{state.subpartitions} subpartitions per output; it cannot be restored in "
        f"place at parallelism {vertex.parallelism} with {gates} and "
        f"{subpartitions} (the restore plan should have re-emitted it through the "
        f"producers)"
    )
