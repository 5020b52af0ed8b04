"""The driver's half of channel recovery: which channel state each new subtask restores.

Given the job being deployed and the checkpoint's metadata, :func:`plan_channel_recovery`
decides, as pure code, per subtask: the channel state it restores *in place* (an edge whose
parallelism did not change), and per new producer subtask the old channels it *re-emits*
(an edge whose parallelism changed on either side, :mod:`.rescale`), with the gates and
outputs that therefore do not restore in place. Channel state whose chains changed is refused
with a ``RestoreError`` naming the checkpoint and operator.

Called by :func:`undertow.runtime.checkpoint.restore_plan.plan_restore`; its result travels in
the ``RestorePlan`` to the workers (:mod:`.reader`). Pure: no I/O, any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.channel_recovery.rescale import (
    EdgeShape,
    ReemitChannel,
    UnrescalableChannelState,
    plan_rescaled_edge,
)
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateHandles,
    MergedChannelStateHandle,
)
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, VertexMetadata

#: (vertex id, subtask index)
SubtaskKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ChannelRecoveryPlan:
    """Which channel state each new subtask restores (fields as in ``RestorePlan``)."""

    #: (vertex id, subtask) -> its channel state, restored in place (minus the channels of
    #: ``rescaled_gates`` / ``rescaled_outputs``)
    channel_state: dict[SubtaskKey, ChannelStateHandles]
    #: (producer vertex id, new subtask) -> old channels it re-emits, in order
    reemit: dict[SubtaskKey, tuple[ReemitChannel, ...]]
    #: vertex id -> gate indices of rescaled edges with channel state
    rescaled_gates: dict[int, frozenset[int]]
    #: vertex id -> output indices of rescaled edges with channel state
    rescaled_outputs: dict[int, frozenset[int]]


def plan_channel_recovery(
    graph: JobGraph,
    meta: CheckpointMetadata,
    old_of: Mapping[int, VertexMetadata],
    finished: frozenset[int],
) -> ChannelRecoveryPlan:
    """The channel recovery of ``graph`` from ``meta``. ``old_of``: new vertex id -> the old
    vertex with exactly its chain; ``finished``: vertices deployed as finished (they restore
    nothing)."""
    reemit, rescaled_gates, rescaled_outputs = _plan_rescaled_channels(graph, meta, old_of)
    channel_state: dict[SubtaskKey, ChannelStateHandles] = {}
    for vertex in graph.vertices:
        if vertex.id in finished:
            continue
        uids = {op.uid for op in vertex.operators}
        for old in meta.vertices:
            if not (set(old.uids) & uids) or not old.channel_state:
                continue
            check_channel_state_shape(graph, meta, vertex.id, old, old_of)
            if old.parallelism != vertex.parallelism:
                continue  # all its edges are rescaled: re-emitted by the producers
            for s, subtask_channels in old.channel_state.items():
                channel_state[(vertex.id, s)] = subtask_channels
    return ChannelRecoveryPlan(channel_state, reemit, rescaled_gates, rescaled_outputs)


def in_place_input_subtasks(
    channel_state: Mapping[SubtaskKey, ChannelStateHandles], finished: frozenset[int]
) -> frozenset[SubtaskKey]:
    """The subtasks (of vertices not deployed as finished) that restore input channel state
    in place. With ``execution.checkpointing.unaligned.during-recovery.enabled`` false, the
    JobMaster triggers no checkpoint before each of them consumed it, and each reports that
    it did (``ChannelStateRecovered``): one rule for both sides, so they agree."""
    return frozenset(
        key
        for key, handles in channel_state.items()
        if key[0] not in finished and handles.input is not None
    )


def check_channel_state_shape(
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
    vertices without an exact old chain are left to :func:`check_channel_state_shape`."""
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
