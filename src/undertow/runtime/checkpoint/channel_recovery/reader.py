"""The worker's half of channel recovery: reads what its subtasks restore, checked before use.

Two kinds, decided by the coordinator's restore plan: channels of edges whose parallelism did
not change are restored *in place* (the subtask's own output state, attached to its snapshot as
a ``ChannelState`` for the task to put back, and its input state as lazy per-channel streams,
:mod:`.stream`); channels of rescaled edges are *re-emitted* by the new producer subtask that
took their old producer over (:mod:`.rescale`). Every region is verified by one streamed pass on
the I/O pool; then input, output and re-emitted channels are read a block at a time as the task
consumes them (:mod:`.stream`; whole at once when the restored snapshot is not the job's own).

Threading: the coroutines run on the worker's loop; only the reads run on the executor. A bad
shape raises ``RestoreError`` naming the operator, subtask, checkpoint and channel. The longer
story: docs/design.md, "Rescaling channel state through the producer".
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.channel_recovery.feed import (
    ReemittedChannel,
    SubtaskChannelRecovery,
)
from undertow.runtime.checkpoint.channel_recovery.plan import in_place_input_subtasks
from undertow.runtime.checkpoint.channel_recovery.rescale import ReemitChannel
from undertow.runtime.checkpoint.channel_recovery.stream import (
    ChannelStreams,
    HeldBytes,
    RestoredInputStream,
    restored_channels,
    restored_input,
)
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelId,
    ChannelStateHandles,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.snapshot import ChannelState, SubtaskSnapshot
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.record_writer import RecordWriter
from undertow.storage.checkpoint_storage import CheckpointStorage

log = logging.getLogger(__name__)

#: (vertex id, subtask index)
SubtaskKey: TypeAlias = tuple[int, int]
#: One old channel a producer re-emits: (output index, its streams in order, where for errors).
ReemitStream: TypeAlias = tuple[int, list[RestoredInputStream], str]
#: Stream per channel of one handle.
OutputStreams: TypeAlias = dict[ChannelId, RestoredInputStream]


class ChannelStateAssignment(Protocol):
    """The part of a deployment's restore assignment this reader needs (implemented by
    ``runtime.control.messages.RestoreAssignment``)."""

    @property
    def checkpoint_id(self) -> int: ...

    @property
    def checkpoint_dir(self) -> str: ...

    @property
    def job_id(self) -> str: ...

    @property
    def channel_state(self) -> Mapping[SubtaskKey, ChannelStateHandles]: ...

    @property
    def reemit(self) -> Mapping[SubtaskKey, tuple[ReemitChannel, ...]]: ...

    @property
    def rescaled_gates(self) -> Mapping[int, frozenset[int]]: ...

    @property
    def rescaled_outputs(self) -> Mapping[int, frozenset[int]]: ...

    @property
    def finished_vertices(self) -> frozenset[int]: ...

    @property
    def refers_to_channel_state(self) -> bool:
        """The restored checkpoint is one of the running job's own: checkpoints taken during
        recovery may refer to its channel-state files instead of writing them again."""
        ...


@dataclass(frozen=True, slots=True)
class RestoredChannels:
    """One subtask's in-place channel state: its input and its output as lazy streams
    (verified)."""

    checkpoint_id: int
    inputs: ChannelStreams
    outputs: OutputStreams


class ChannelStateReader:
    """Reads the channel state of ``subtasks`` (this worker's) that ``assignment`` restores.

    Lifecycle: one per deployment; each read method is awaited once, before the tasks run.
    A handle shared by several channels or subtasks is read once (cached for this reader).
    """

    def __init__(
        self,
        assignment: ChannelStateAssignment,
        subtasks: set[SubtaskKey],
        executor: Executor | None,
        storage: CheckpointStorage | None = None,
    ) -> None:
        self.assignment = assignment
        self.subtasks = subtasks
        self.executor = executor
        self.storage = storage or CheckpointStorage(assignment.checkpoint_dir, assignment.job_id)
        #: Bytes the restored input streams hold in memory (all of this worker's).
        self.held = HeldBytes()
        self._cache: dict[int, OutputStreams] = {}
        self._handles: dict[int, MergedChannelStateHandle] = {}  # keeps the cached ids valid

    async def read_in_place(self) -> dict[SubtaskKey, RestoredChannels]:
        """Per subtask: its own channel state, except the channels of rescaled edges (their
        producers re-emit those)."""
        assignment = self.assignment
        result: dict[SubtaskKey, RestoredChannels] = {}
        for key, handles in assignment.channel_state.items():
            if key not in self.subtasks:
                continue
            if not isinstance(handles, ChannelStateHandles):
                raise RestoreError(
                    f"checkpoint {assignment.checkpoint_id}: channel state of vertex {key[0]} "
                    f"subtask {key[1]} is a {type(handles).__name__}, not ChannelStateHandles"
                )
            inputs = await self._streams(handles.input)
            outputs = await self._channel_streams(handles.output)
            gates = assignment.rescaled_gates.get(key[0], frozenset())
            rescaled = assignment.rescaled_outputs.get(key[0], frozenset())
            inputs = {c: chunks for c, chunks in inputs.items() if c[0] not in gates}
            outputs = {c: chunks for c, chunks in outputs.items() if c[0] not in rescaled}
            if inputs or outputs:
                result[key] = RestoredChannels(assignment.checkpoint_id, inputs, outputs)
        return result

    async def read_reemitted(self) -> dict[SubtaskKey, list[ReemitStream]]:
        """Per producer subtask: the old channels it re-emits after a rescale, each as its
        input state followed by its output state (one stream)."""
        assignment = self.assignment
        result: dict[SubtaskKey, list[ReemitStream]] = {}
        for key, channels in assignment.reemit.items():
            if key not in self.subtasks:
                continue
            streams: list[ReemitStream] = []
            for item in channels:
                old = item.channel
                ins = (await self._channel_streams(item.input)).get(old.input_channel)
                outs = (await self._channel_streams(item.output)).get(old.output_channel)
                where = (
                    f"checkpoint {assignment.checkpoint_id}, edge {old.edge_id}, old channel "
                    f"{old.old_producer} -> {old.old_consumer}"
                )
                # the consumer's input state, then the producer's output state
                ordered = [st for st in (ins, outs) if st is not None]
                streams.append((old.output_index, ordered, where))
            result[key] = streams
        return result

    async def _streams(self, handle: MergedChannelStateHandle | None) -> ChannelStreams:
        if handle is None:
            return {}
        read = functools.partial(
            restored_input, handle, self.storage.read_range,
            referencable=self.assignment.refers_to_channel_state, held=self.held,
        )  # fmt: skip
        return await asyncio.get_running_loop().run_in_executor(self.executor, read)

    async def _channel_streams(self, handle: MergedChannelStateHandle | None) -> OutputStreams:
        """Per channel of ``handle``, its stream (referred runs included), verified once per
        handle: each channel's stream is consumed by one subtask (its own output, or the old
        channel one new producer re-emits)."""
        if handle is None:
            return {}
        if id(handle) not in self._cache:
            self._handles[id(handle)] = handle
            read = functools.partial(
                restored_channels, handle, self.storage.read_range,
                referencable=self.assignment.refers_to_channel_state, held=self.held,
            )  # fmt: skip
            self._cache[id(handle)] = await asyncio.get_running_loop().run_in_executor(
                self.executor, read
            )
        return {channel: stream.fresh() for channel, stream in self._cache[id(handle)].items()}


def with_channel_state(
    vertex: JobVertex,
    subtask: int,
    snapshots: Sequence[SubtaskSnapshot] | None,
    gates: Sequence[InputGate],
    writers: Sequence[RecordWriter],
    restored: RestoredChannels,
) -> list[SubtaskSnapshot]:
    """The subtask's snapshots with its in-place channel state attached (the coordinator
    checked the chains and left out the channels of rescaled edges, so the subtask has its
    old parallelism and these channels exist; they are checked here)."""
    gate_channels = tuple(len(g.channels) for g in gates)
    subpartitions = tuple(len(w.partition.subpartitions) for w in writers)
    for what, chunks, sizes in (("input", restored.inputs, gate_channels),
                                ("output", restored.outputs, subpartitions)):  # fmt: skip
        for first, second in chunks:
            if first >= len(sizes) or second >= sizes[first]:
                raise RestoreError(
                    f"{vertex.name} ({subtask + 1}/{vertex.parallelism}): checkpoint "
                    f"{restored.checkpoint_id} holds {what} channel state of channel "
                    f"{(first, second)}, which does not exist ({sizes} channels); the job's "
                    "shape changed since the checkpoint"
                )
    snapshots = list(snapshots) if snapshots else [SubtaskSnapshot(parallelism=vertex.parallelism)]
    if len(snapshots) != 1 or snapshots[0].channel_state is not None:
        raise RestoreError(
            f"{vertex.name} ({subtask + 1}/{vertex.parallelism}): checkpoint "
            f"{restored.checkpoint_id} holds channel state in shared files, but the subtask "
            f"restores {len(snapshots)} state files (rescaled or re-chained)"
        )
    snapshots[0].channel_state = ChannelState(  # its channels: streams (``for_subtask``)
        restored.checkpoint_id, subtask, vertex.parallelism, gate_channels, subpartitions,
        {}, {},
    )  # fmt: skip
    return snapshots


@dataclass(frozen=True, slots=True)
class WorkerChannelRecovery:
    """The channel state one worker's subtasks restore, read and checked (the worker's side of
    the package's interface). Built once per deployment by :meth:`read`, before any task."""

    #: Per subtask: its own channel state, restored in place.
    in_place: Mapping[SubtaskKey, RestoredChannels]
    #: Per producer subtask: the old channels it re-emits after a rescale.
    reemitted: Mapping[SubtaskKey, list[ReemitStream]]
    #: vertex id -> gate indices of rescaled edges with channel state.
    rescaled_gates: Mapping[int, frozenset[int]]
    #: vertex id -> output indices of rescaled edges with channel state.
    rescaled_outputs: Mapping[int, frozenset[int]]
    #: Subtasks that report once they consumed their restored input (during-recovery off):
    #: in place, or re-emitted to them after a rescale.
    reporting_inputs: frozenset[SubtaskKey] = frozenset()
    #: Bytes the restored input streams of this worker hold in memory (a gauge).
    held: HeldBytes = field(default_factory=HeldBytes)

    @classmethod
    async def read(
        cls,
        assignment: ChannelStateAssignment | None,
        subtasks: set[SubtaskKey],
        executor: Executor | None,
        *,
        during_recovery: bool = True,
    ) -> WorkerChannelRecovery:
        """Read what ``subtasks`` (this worker's) restore of ``assignment`` (None: a fresh
        start), on ``executor``; each shared handle once, verified before use.
        ``during_recovery``: ``execution.checkpointing.unaligned.during-recovery.enabled``
        (false: subtasks restoring input in place, or receiving re-emitted input, report when
        they consumed it; true: the latter report once it was delivered)."""
        if assignment is None:
            return cls({}, {}, {}, {})
        in_place: dict[SubtaskKey, RestoredChannels] = {}
        reemitted: dict[SubtaskKey, list[ReemitStream]] = {}
        held = HeldBytes()
        if assignment.channel_state or assignment.reemit:
            reader = ChannelStateReader(assignment, subtasks, executor)
            held = reader.held
            in_place = await reader.read_in_place()
            reemitted = await reader.read_reemitted()
        _log_rewrites(assignment, in_place, reemitted)
        reporting: frozenset[SubtaskKey] = frozenset()
        if not during_recovery:
            reporting = in_place_input_subtasks(
                assignment.channel_state, assignment.finished_vertices
            ) | {key for key in subtasks if key[0] in assignment.rescaled_gates}
        return cls(
            in_place, reemitted, assignment.rescaled_gates, assignment.rescaled_outputs,
            reporting & subtasks, held,
        )  # fmt: skip

    def snapshots_of(
        self,
        vertex: JobVertex,
        subtask: int,
        snapshots: Sequence[SubtaskSnapshot] | None,
        gates: Sequence[InputGate],
        writers: Sequence[RecordWriter],
    ) -> Sequence[SubtaskSnapshot] | None:
        """The subtask's snapshots, with its in-place channel state attached if it has any
        (checked against its gates and writers: :func:`with_channel_state`)."""
        restored = self.in_place.get((vertex.id, subtask))
        if restored is None:
            return snapshots
        return with_channel_state(vertex, subtask, snapshots, gates, writers, restored)

    def for_subtask(self, vertex_id: int, subtask: int) -> SubtaskChannelRecovery:
        """What the subtask re-emits, and which of its outputs and gates recover, after a
        rescale, and its restored input and output streams."""
        restored = self.in_place.get((vertex_id, subtask))
        return SubtaskChannelRecovery(
            reemit=tuple(
                ReemittedChannel(output, tuple(streams), where)
                for output, streams, where in self.reemitted.get((vertex_id, subtask), [])
            ),
            recovery_outputs=self.rescaled_outputs.get(vertex_id, frozenset()),
            recovering_gates=frozenset(self.rescaled_gates.get(vertex_id, frozenset())),
            reports_restored_input=(vertex_id, subtask) in self.reporting_inputs,
            restored_input=restored.inputs if restored is not None else {},
            restored_output=restored.outputs if restored is not None else {},
        )


def _log_rewrites(
    assignment: ChannelStateAssignment,
    in_place: Mapping[SubtaskKey, RestoredChannels],
    reemitted: Mapping[SubtaskKey, list[ReemitStream]],
) -> None:
    """Say where checkpoints during this recovery write restored data again instead of
    referring to it (no silent fallback): a snapshot that is not the job's own (restored from
    a path, CLAIM or NO_CLAIM), and re-emitted records of a rescaled restore."""
    cid = assignment.checkpoint_id
    restores = any(r.inputs or r.outputs for r in in_place.values())
    if restores and not assignment.refers_to_channel_state:
        log.info("checkpoint %d is not this job's own checkpoint: its restored input and "
                 "output are read whole, and checkpoints during its recovery write what is not "
                 "yet consumed or sent again instead of referring to its files", cid)  # fmt: skip
    if reemitted:
        log.info("checkpoint %d is restored at another parallelism: checkpoints during its "
                 "recovery write the re-emitted records not yet processed again (recovered "
                 "input), as they are no longer whole chunks of its files", cid)  # fmt: skip
