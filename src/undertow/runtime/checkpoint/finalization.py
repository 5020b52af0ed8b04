"""Finalising a fully acknowledged checkpoint: its ``_metadata`` assembled, written, announced.

Flink's ``Checkpoints`` (metadata I/O) and ``PendingCheckpoint.finalizeCheckpoint``, out of the
coordinator shell: :func:`assemble_metadata` and :func:`completion_line` are pure;
:class:`CheckpointFinalizer` does the I/O, each blocking write on the running loop's executor
(the enumerators' states, started at the trigger, then ``_metadata`` committed into
``chk-<n>`` or exported to a savepoint's directory). What the store then retains is
:mod:`.retention`'s, and telling the tasks and listeners stays in the shell.

Threading: :meth:`CheckpointFinalizer.finalize` and :meth:`~CheckpointFinalizer.prefetch_key`
run on the JobMaster's loop; several finalisations may overlap (one per checkpoint id).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from undertow.core.units import human_bytes
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.ack_summary import (
    channel_state_of,
    checkpoint_properties,
    shared_of,
    state_file,
)
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions
from undertow.runtime.checkpoint.clock import CoordinatorClock
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    VertexMetadata,
    encode_metadata,
    total_state_size,
)
from undertow.runtime.checkpoint.pending_checkpoint import CheckpointMetrics, PendingCheckpoint
from undertow.runtime.checkpoint.restore_plan import present
from undertow.runtime.checkpoint.savepoint import SavepointRequest, savepoint_properties
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.runtime.checkpoint.trigger_plan import SubtaskKey, SubtaskTopology, plan_checkpoint
from undertow.runtime.network.buffer import serialize_object
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle
from undertow.storage.keys import CheckpointKey


@dataclass(frozen=True, slots=True)
class PendingProps:
    """What the coordinator keeps beside a pending checkpoint's acknowledgements. Replaced,
    never changed, when subtasks finish while it is pending (FLIP-147)."""

    barrier: CheckpointBarrier
    #: source vertex id -> its enumerator's state at the trigger
    enumerators: Mapping[int, object]
    #: the savepoint this checkpoint is, or None for a checkpoint
    savepoint: SavepointRequest | None
    #: subtasks that finished before or while it was pending (acknowledged without state)
    finished: frozenset[SubtaskKey]
    #: subtasks that got its barrier from the coordinator (sources, and late triggers)
    triggered: frozenset[SubtaskKey]


#: A pending checkpoint as the coordinator holds it.
CoordinatorPending: TypeAlias = PendingCheckpoint[SubtaskStateHandle, PendingProps]


@dataclass(frozen=True, slots=True)
class Finalized:
    """A checkpoint whose ``_metadata`` is written: where it is and how large."""

    metadata: CheckpointMetadata
    #: the checkpoint's ``chk-<n>`` or the savepoint's directory
    pointer: str
    #: bytes of ``_metadata``
    metadata_size: int


def assemble_metadata(
    job_id: str, graph: JobGraph, topology: SubtaskTopology, pending: CoordinatorPending,
    coordinators: Mapping[int, FileHandle | None], properties: dict[str, str], now_ms: int,
) -> CheckpointMetadata:  # fmt: skip
    """The ``_metadata`` of a fully acknowledged checkpoint (pure): each vertex's subtask
    state files and channel state, whether it had fully finished, the enumerators' state
    files (``coordinators``) and the shared files the states reference."""
    states = pending.acknowledged_states
    fully = plan_checkpoint(topology, pending.props.finished).fully_finished
    vertices = tuple(
        VertexMetadata(
            vertex_id=v.id,
            name=v.name,
            uids=tuple(op.uid for op in v.operators),
            parallelism=v.parallelism,
            max_parallelism=v.max_parallelism,
            finished=v.id in fully,
            subtasks=present({s: state_file(states.get((v.id, s))) for s in range(v.parallelism)}),
            channel_state=channel_state_of(
                {s: states.get((v.id, s)) for s in range(v.parallelism)}
            ),
        )
        for v in graph.vertices
    )
    return CheckpointMetadata(
        job_id=job_id, checkpoint_id=pending.checkpoint_id,
        trigger_timestamp=pending.trigger_timestamp, completion_timestamp=now_ms,
        is_savepoint=pending.props.savepoint is not None, vertices=vertices,
        coordinators=dict(coordinators), properties=properties,
        shared_files=shared_of(states.values()),
    )  # fmt: skip


def completion_line(
    meta: CheckpointMetadata, metrics: Mapping[SubtaskKey, CheckpointMetrics],
    options: CheckpointOptions,
) -> str:  # fmt: skip
    """The console line of a completed checkpoint: duration, size, the slowest alignment,
    buffer debloating's estimate if any, and how it was taken (pure)."""
    duration = meta.completion_timestamp - meta.trigger_timestamp
    alignment = max((m.get("alignment_duration_ms", 0.0) for m in metrics.values()), default=0)
    line = (
        f"checkpoint {meta.checkpoint_id} completed in {duration} ms, "
        f"{human_bytes(total_state_size(meta))}, alignment {alignment:.0f} ms"
    )
    debloated = [m["debloat_estimate_ms"] for m in metrics.values() if "debloat_estimate_ms" in m]
    if debloated:  # buffer debloating: the slowest subtask's in-flight buffers
        line += f", buffers ~{max(debloated):.0f} ms to consume"
    if options.needs_channel_state:  # unaligned, or aligned with a timeout
        persisted = sum(int(m.get("persisted_data", 0)) for m in metrics.values())
        referenced = sum(int(m.get("referenced_data", 0)) for m in metrics.values())
        unaligned = any(m.get("unaligned") for m in metrics.values())
        line += f" ({'unaligned' if unaligned else 'aligned'}, in-flight {human_bytes(persisted)}"
        # restored in-flight data not yet consumed, referred to in older files (FLIP-76)
        line += f", referenced {human_bytes(referenced)})" if referenced else ")"
    else:
        line += f" ({options.alignment.name.lower()})"
    return line


class CheckpointFinalizer:
    """Writes fully acknowledged checkpoints (see the module docstring). Holds no state of its
    own beyond the job's constants; the metadata key is loaded at most once."""

    def __init__(
        self, job_id: str, graph: JobGraph, settings: CheckpointSettings,
        storage: CheckpointStorage, key: CheckpointKey, clock: CoordinatorClock,
    ) -> None:  # fmt: skip
        self.job_id = job_id
        self.graph = graph
        #: ``state.backend.type``, recorded in a savepoint's properties.
        self.state_backend = settings.state_backend
        self.storage = storage
        #: authenticates ``_metadata``; loaded (maybe created) on the executor when first needed
        self.key = key
        self.metadata_max_size = settings.metadata_max_size
        self.clock = clock
        self._topology = SubtaskTopology.of(graph)
        #: The enumerators' state writes of pending checkpoints, started at their trigger.
        self._enumerator_writes: dict[int, dict[int, asyncio.Future[FileHandle]]] = {}

    def start_enumerator_writes(self, cid: int, states: Mapping[int, Any]) -> None:
        """Start writing checkpoint ``cid``'s enumerator ``states`` (taken at its trigger) on
        the executor now, while its tasks take their part: :meth:`finalize` then only awaits
        them, and the completion does not wait for a write after the last acknowledgement
        (Flink keeps coordinator state inline in ``_metadata`` for the same reason). A
        failure is met by :meth:`finalize`; a checkpoint aborted meanwhile is
        :meth:`forget` -ed (a write landing in its discarded directory is swept as an orphan,
        as a task's late file is)."""
        loop = asyncio.get_running_loop()
        writes = {}
        for vid, state in states.items():
            data = serialize_object(state)
            write = loop.run_in_executor(
                None, self.storage.write_file, cid, f"enumerator-v{vid}.state", data
            )
            write.add_done_callback(_retrieve)  # an aborted checkpoint's failure is no news
            writes[vid] = write
        self._enumerator_writes[cid] = writes

    def forget(self, cid: int) -> None:
        """Checkpoint ``cid`` was aborted: its enumerator writes are not awaited."""
        self._enumerator_writes.pop(cid, None)

    @property
    def writing_enumerators_of(self) -> frozenset[int]:
        """The checkpoints whose enumerator writes are held for :meth:`finalize`: pending ones
        only (an aborted checkpoint's are forgotten, so none is held for the job's life)."""
        return frozenset(self._enumerator_writes)

    def prefetch_key(self) -> None:
        """Start loading (or creating) the metadata key on the executor if it is not loaded:
        the first trigger is when the job first needs it. A failure is not reported here;
        :meth:`finalize` meets it again when the checkpoint completes."""
        if self.key.is_loaded:
            return
        loading = asyncio.get_running_loop().run_in_executor(None, self.key.load)
        loading.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _metadata_key(self) -> bytes:
        """The metadata key: from memory when loaded, else loaded on the executor."""
        if self.key.is_loaded:
            return self.key.load()
        return await asyncio.get_running_loop().run_in_executor(None, self.key.load)

    def properties(self, pending: CoordinatorPending) -> dict[str, str]:
        """What ``_metadata`` records of how the checkpoint went; a savepoint adds its format
        and the job's state backend (checked when a job restores it)."""
        properties = checkpoint_properties(pending.acknowledged_metrics.values())
        if pending.props.savepoint is not None:
            properties.update(savepoint_properties(pending.props.savepoint, self.state_backend))
        return properties

    async def finalize(self, pending: CoordinatorPending) -> Finalized:
        """Write the enumerators' states and ``_metadata`` of ``pending`` (fully
        acknowledged): committed into its ``chk-<n>``, or exported to the savepoint's
        directory. Raises what the storage or the encoding raised (the shell aborts it)."""
        cid = pending.checkpoint_id
        loop = asyncio.get_running_loop()
        if cid not in self._enumerator_writes:
            self.start_enumerator_writes(cid, pending.props.enumerators)
        writes = self._enumerator_writes.pop(cid)
        coordinators: dict[int, FileHandle | None] = {}
        for vid, write in writes.items():
            coordinators[vid] = await write
        meta = assemble_metadata(self.job_id, self.graph, self._topology, pending, coordinators,
                                 self.properties(pending), self.clock.now_ms())  # fmt: skip
        payload = encode_metadata(meta, await self._metadata_key(), self.metadata_max_size)
        savepoint = pending.props.savepoint
        if savepoint is not None:
            pointer = await loop.run_in_executor(
                None, self.storage.export_savepoint, cid, savepoint.target_directory, payload
            )
        else:
            pointer = await loop.run_in_executor(None, self.storage.commit_metadata, cid, payload)
        return Finalized(meta, pointer, len(payload))


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
