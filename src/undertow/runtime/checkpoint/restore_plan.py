"""Where a (re)deployment restores from: which old state files, channel state and enumerator
state each new subtask takes over (Flink's ``StateAssignmentOperation``), as a
:class:`RestorePlan`.

State is matched per operator uid, so a changed chaining or parallelism still finds every
operator's state; state of an operator the job no longer has fails the restore unless
``execution.state-recovery.ignore-unclaimed-state``. Fully finished operators (FLIP-147) are
deployed as finished and get nothing. Channel state restores in place where an edge's
parallelism is unchanged; on a rescaled edge the new producer subtasks re-emit the old
channels (:mod:`.channel_state_rescale`); channel state whose chains changed is refused.

Pure planning over the job graph and the checkpoint's metadata; the only I/O is reading the
source enumerators' state files (blocking: call it on an executor). Used by the checkpoint
coordinator for failover and for ``execution.state-recovery.path``.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from undertow.core.config import Configuration, Options
from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.channel_state_rescale import (
    EdgeShape,
    ReemitChannel,
    UnrescalableChannelState,
    plan_rescaled_edge,
)
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, VertexMetadata
from undertow.runtime.checkpoint.restore_fault import RestoreFault
from undertow.runtime.checkpoint.trigger_plan import RestoredVertex, finished_on_restore
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle


@dataclass(frozen=True)
class RestorePlan:
    """Where a (re)deployment restores from."""

    metadata: CheckpointMetadata
    checkpoint_dir: str
    job_id: str
    #: (vertex id, subtask) -> state files of the old subtasks it takes over
    subtask_files: dict[tuple[int, int], list[FileHandle]]
    #: source vertex id -> enumerator state
    enumerator_states: dict[int, Any]
    #: (vertex id, subtask) -> its channel state in shared files, restored in place (same
    #: parallelism; minus the channels of ``rescaled_gates`` / ``rescaled_outputs``)
    channel_state: dict[tuple[int, int], ChannelStateHandles] = field(default_factory=dict)
    #: (producer vertex id, new subtask) -> old channels it re-emits through its record
    #: writers before its operators run, in order (:mod:`.channel_state_rescale`)
    reemit: dict[tuple[int, int], tuple[ReemitChannel, ...]] = field(default_factory=dict)
    #: vertex id -> gate indices of rescaled edges with channel state (not restored in place)
    rescaled_gates: dict[int, frozenset[int]] = field(default_factory=dict)
    #: vertex id -> output indices of rescaled edges with channel state: not restored in
    #: place; every subtask ends their re-emitted data with a blocking EndOfChannelStateEvent
    rescaled_outputs: dict[int, frozenset[int]] = field(default_factory=dict)
    #: vertices (of the job being deployed) restored as finished (FLIP-147)
    finished_vertices: frozenset[int] = frozenset()
    #: the snapshot's directory (``.../chk-<n>`` or ``.../savepoint-<jobid6>-<n>``)
    pointer: str = ""
    #: the size of its ``_metadata`` in bytes
    metadata_size: int = 0
    #: test-only: what the workers drop from the state files they read (a restore control)
    fault: RestoreFault | None = None


def plan_restore(
    graph: JobGraph,
    meta: CheckpointMetadata,
    storage: CheckpointStorage,
    config: Configuration,
) -> RestorePlan:
    """Which old state files each new subtask reads, matched per operator uid (Flink's
    OperatorID mapping), so a changed chaining or parallelism still finds every operator's
    state. An old operator with state that the job no longer has fails the restore unless
    ``execution.state-recovery.ignore-unclaimed-state`` (this can only see operators whose
    whole old vertex is gone; the workers check the rest when they read the files)."""
    new_uids = {op.uid for vertex in graph.vertices for op in vertex.operators}
    unclaimed = [v for v in meta.vertices if present(v.subtasks) and not (set(v.uids) & new_uids)]
    if unclaimed and not config.get(Options.IGNORE_UNCLAIMED_STATE):
        raise RestoreError(unclaimed_message(
            meta.checkpoint_id, [u for v in unclaimed for u in v.uids]
        ))  # fmt: skip
    finished_uids = frozenset(u for v in meta.vertices if v.finished for u in v.uids)
    finished = finished_on_restore(
        [
            RestoredVertex(v.id, v.name, tuple(op.uid for op in v.operators),
                           frozenset(e.source_vertex for e in v.inputs))
            for v in graph.vertices
        ],
        finished_uids, meta.checkpoint_id,
    )  # fmt: skip
    files: dict[tuple[int, int], list[FileHandle]] = {}
    channel_state: dict[tuple[int, int], ChannelStateHandles] = {}
    enumerators: dict[int, Any] = {}
    old_of: dict[int, VertexMetadata] = {}  # new vertex -> old vertex with the same chain
    for vertex in graph.vertices:
        chain = tuple(op.uid for op in vertex.operators)
        exact = [old for old in meta.vertices if set(old.uids) & set(chain)]
        if len(exact) == 1 and exact[0].uids == chain:
            old_of[vertex.id] = exact[0]
    reemit, rescaled_gates, rescaled_outputs = _plan_rescaled_channels(graph, meta, old_of)
    for vertex in graph.vertices:
        if vertex.id in finished:
            continue  # deployed as finished: no state, no enumerator
        uids = {op.uid for op in vertex.operators}
        matched = [old for old in meta.vertices if set(old.uids) & uids]
        if not matched:
            continue
        for old in matched:
            if old.channel_state:
                _check_channel_state_shape(graph, meta, vertex.id, old, old_of)
                if old.parallelism != vertex.parallelism:
                    continue  # all its edges are rescaled: re-emitted by the producers
                for s, subtask_channels in old.channel_state.items():
                    channel_state[(vertex.id, s)] = subtask_channels
        for s in range(vertex.parallelism):
            handles: list[FileHandle] = []
            for old in matched:
                if old.parallelism == vertex.parallelism:
                    handle = old.subtasks.get(s)
                    handles += [handle] if handle is not None else []
                else:
                    stateful = present(old.subtasks)
                    handles += [stateful[i] for i in sorted(stateful)]
            files[(vertex.id, s)] = handles
        for old in matched:
            handle = meta.coordinators.get(old.vertex_id)
            if handle is not None and vertex.operators[0].uid == old.uids[0]:
                data = storage.read_file(handle, meta.checkpoint_id)
                enumerators[vertex.id] = pickle.loads(data)
    return RestorePlan(meta, storage.root_uri, storage.job_id, files, enumerators,
                       channel_state, reemit, rescaled_gates, rescaled_outputs,
                       finished)  # fmt: skip


def _check_channel_state_shape(
    graph: JobGraph,
    meta: CheckpointMetadata,
    vertex_id: int,
    old: VertexMetadata,
    old_of: Mapping[int, VertexMetadata],
) -> None:
    """Channel state is restored only where the chains are the ones it was taken with: the
    vertex's and every vertex it exchanges data with (channel ids name gates and outputs
    by position). Parallelism may change (:func:`_plan_rescaled_channels`)."""
    vertex = graph.vertex(vertex_id)
    changes: list[str] = []
    if old_of.get(vertex_id) is not old:
        changes.append(f"the chain changed from {list(old.uids)}")
    neighbours = [e.source_vertex for e in vertex.inputs]
    neighbours += [e.target_vertex for e in vertex.outputs]
    for neighbour_id in neighbours:
        if neighbour_id not in old_of:
            neighbour = graph.vertex(neighbour_id)
            changes.append(f"the chain of its neighbour '{neighbour.name}' changed")
    if changes:
        raise RestoreError(
            f"checkpoint {meta.checkpoint_id} holds in-flight data (unaligned channel "
            f"state) of operator '{old.name}' that cannot be restored: "
            f"{'; '.join(changes)} (restore with the old chaining, or take an aligned "
            f"checkpoint or savepoint first)"
        )


def _plan_rescaled_channels(
    graph: JobGraph, meta: CheckpointMetadata, old_of: Mapping[int, VertexMetadata]
) -> tuple[
    dict[tuple[int, int], tuple[ReemitChannel, ...]],
    dict[int, frozenset[int]],
    dict[int, frozenset[int]],
]:
    """For every edge whose parallelism changed on either side and that carries channel
    state: which new producer subtask re-emits which old channel (and from which handles),
    and the gates and outputs that therefore do not restore in place. Edges between
    vertices without an exact old chain are left to :func:`_check_channel_state_shape`."""
    reemit: dict[tuple[int, int], list[ReemitChannel]] = {}
    gates: dict[int, set[int]] = {}
    outputs: dict[int, set[int]] = {}
    for edge in graph.edges:
        producer = graph.vertex(edge.source_vertex)
        consumer = graph.vertex(edge.target_vertex)
        old_producer, old_consumer = old_of.get(producer.id), old_of.get(consumer.id)
        if old_producer is None or old_consumer is None:
            continue
        shape = EdgeShape(
            edge.id, edge.partitioner_kind, producer.id, consumer.id,
            [e.id for e in producer.outputs].index(edge.id),
            [e.id for e in consumer.inputs].index(edge.id),
            old_producer.parallelism, producer.parallelism,
            old_consumer.parallelism, consumer.parallelism,
        )  # fmt: skip
        if not shape.is_rescaled:
            continue
        ins = _handles_with(old_consumer, "input", shape.gate_index)
        outs = _handles_with(old_producer, "output", shape.output_index)
        has_state = bool(ins or outs)
        try:
            plan = plan_rescaled_edge(shape, has_state)
        except UnrescalableChannelState as err:
            raise RestoreError(
                f"checkpoint {meta.checkpoint_id} holds in-flight data (unaligned channel "
                f"state) on the edge '{producer.name}' -> '{consumer.name}' of operator "
                f"'{consumer.name}' that cannot be rescaled: {err}. Restore at the old "
                f"parallelism, or take an aligned checkpoint or savepoint first"
            ) from err
        if not has_state:
            continue
        gates.setdefault(consumer.id, set()).add(shape.gate_index)
        outputs.setdefault(producer.id, set()).add(shape.output_index)
        for new_subtask, channels in plan.items():
            for channel in channels:
                handle_in = ins.get(channel.old_consumer)
                handle_out = outs.get(channel.old_producer)
                if handle_in is not None and channel.input_channel not in handle_in[1]:
                    handle_in = None
                if handle_out is not None and channel.output_channel not in handle_out[1]:
                    handle_out = None
                if handle_in is None and handle_out is None:
                    continue
                reemit.setdefault((producer.id, new_subtask), []).append(ReemitChannel(
                    channel,
                    None if handle_in is None else handle_in[0],
                    None if handle_out is None else handle_out[0],
                ))  # fmt: skip
    return (
        {key: tuple(channels) for key, channels in reemit.items()},
        {v: frozenset(g) for v, g in gates.items()},
        {v: frozenset(o) for v, o in outputs.items()},
    )


def _handles_with(
    old: VertexMetadata, side: str, index: int
) -> dict[int, tuple[MergedChannelStateHandle, frozenset[tuple[int, int]]]]:
    """Old subtask -> its ``side`` handle and channels, for subtasks with state of gate or
    output ``index``."""
    found = {}
    for s, handles in old.channel_state.items():
        handle = handles.input if side == "input" else handles.output
        if handle is None:
            continue
        channels = frozenset(c for c in handle.channels() if c[0] == index)
        if channels:
            found[s] = (handle, channels)
    return found


def unclaimed_message(checkpoint_id: int, uids: list[str]) -> str:
    return (
        f"checkpoint {checkpoint_id} has state of operators this job does not have: "
        f"{', '.join(repr(u) for u in sorted(uids))}. Give operators the same .uid(...) as in "
        "the job that took the checkpoint, or set "
        "execution.state-recovery.ignore-unclaimed-state: true to drop that state"
    )


def present(handles: Mapping[int, FileHandle | None]) -> dict[int, FileHandle]:
    """Subtasks with state (a subtask without state acknowledges with no file)."""
    return {s: h for s, h in handles.items() if h is not None}
