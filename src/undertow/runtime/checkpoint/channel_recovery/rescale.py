"""Channel state at another parallelism: which new subtask re-emits which old channel's records.

To keep per-key order across the restore as well (a key's later records may come from another
producer subtask than its in-flight ones, e.g. after key groups moved), every new producer
subtask of a rescaled edge sends :class:`EndOfChannelStateEvent`
on each of its subpartitions right after the re-emitted records, and that event blocks the
subpartition (like an aligned barrier); the consumer resumes its gate's channels once every
channel delivered one. All re-emitted data therefore precedes all live data at every consumer,
as Flink's ``EndOfChannelStateEvent`` / ``UpstreamRecoveryTracker`` guarantee.

Pure code: no I/O, immutable values, any thread. Cost: O(old producers x old consumers) per
rescaled edge.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from undertow.runtime.checkpoint.channel_state_handles import MergedChannelStateHandle
from undertow.runtime.checkpoint.channel_state_writer import decode_chunk, is_recovered_chunk
from undertow.runtime.network.buffer import BatchDeserializer

#: Partitioner kinds whose records carry no key context: their channel state cannot be
#: re-partitioned at another parallelism.
UNRESCALABLE_KINDS = frozenset({"FORWARD", "RESCALE", "BROADCAST"})


@dataclass(frozen=True, slots=True)
class EdgeShape:
    """One job edge P -> C of the job being restored, with both sides' old and new parallelism.

    ``output_index`` is the edge's position in P's outputs (its result partition index, the
    first element of an output channel id), ``gate_index`` its position in C's inputs (the
    first element of an input channel id); both are the same in the old job (same chains).
    """

    edge_id: int
    kind: str
    producer_vertex: int
    consumer_vertex: int
    output_index: int
    gate_index: int
    old_producers: int
    new_producers: int
    old_consumers: int
    new_consumers: int

    @property
    def is_rescaled(self) -> bool:
        """Either side's parallelism changed (so the edge's channels changed)."""
        return (self.old_producers, self.old_consumers) != (self.new_producers, self.new_consumers)


@dataclass(frozen=True, slots=True)
class OldChannel:
    """One channel of the old job: old producer subtask -> old consumer subtask on an edge."""

    edge_id: int
    output_index: int
    gate_index: int
    old_producer: int
    old_consumer: int

    @property
    def input_channel(self) -> tuple[int, int]:
        """Its id at the old consumer: ``(gate, old producer)`` (all-to-all edges)."""
        return (self.gate_index, self.old_producer)

    @property
    def output_channel(self) -> tuple[int, int]:
        """Its id at the old producer: ``(output, old consumer)`` (all-to-all edges)."""
        return (self.output_index, self.old_consumer)


class UnrescalableChannelState(ValueError):
    """An edge without key context carries channel state and its parallelism changed."""


def new_producer_of(old_producer: int, new_parallelism: int) -> int:
    """The new subtask that re-emits old producer subtask ``old_producer``'s in-flight data."""
    if new_parallelism < 1 or old_producer < 0:
        raise ValueError(f"bad subtask {old_producer} or parallelism {new_parallelism}")
    return old_producer % new_parallelism


def plan_rescaled_edge(edge: EdgeShape, has_state: bool) -> dict[int, list[OldChannel]]:
    """New producer subtask -> the old channels of ``edge`` it re-emits, in re-emission order
    (ascending old producer, then ascending old consumer).

    Every old channel ``(p, c)`` with ``p < old_producers``, ``c < old_consumers`` appears
    exactly once, at ``new_producer_of(p, new_producers)``; subtasks without any get no entry.
    Raises :class:`UnrescalableChannelState` when ``has_state`` and the edge is pointwise or
    broadcast. An edge that is not rescaled has no plan (its state restores in place).
    """
    if not edge.is_rescaled:
        return {}
    if edge.kind in UNRESCALABLE_KINDS:
        if has_state:
            raise UnrescalableChannelState(
                f"edge {edge.edge_id} ({edge.kind}) carries in-flight data and its parallelism "
                f"changed from {edge.old_producers} -> {edge.old_consumers} to "
                f"{edge.new_producers} -> {edge.new_consumers}; {edge.kind} records cannot be "
                "re-partitioned (broadcast would duplicate them, forward and rescale would "
                "change their meaning)"
            )
        return {}
    plan: dict[int, list[OldChannel]] = {}
    for p in range(edge.old_producers):
        target = plan.setdefault(new_producer_of(p, edge.new_producers), [])
        for c in range(edge.old_consumers):
            target.append(OldChannel(edge.edge_id, edge.output_index, edge.gate_index, p, c))
    return plan


def channel_stream(input_chunks: Sequence[bytes], output_chunks: Sequence[bytes]) -> list[bytes]:
    """One old channel's chunks in stream order: the consumer's input state, then the
    producer's output state."""
    return [*input_chunks, *output_chunks]


def channel_records(
    chunks: Iterable[bytes], where: str
) -> Iterator[tuple[list[Any], list[Any] | None]]:
    """The whole batches of one old channel's chunk stream (see :func:`channel_stream`), in
    order; a batch spanning chunks is reassembled. Raises :class:`ValueError` naming ``where``
    when the stream ends inside a batch (state that lost its tail), or holds recovered input
    (a checkpoint taken during the recovery of an earlier rescale: re-emitted here, those
    records would lose their place ahead of the live records of other old channels)."""
    deserializer = BatchDeserializer()
    for chunk in chunks:
        if is_recovered_chunk(chunk):
            raise ValueError(
                f"{where}: the checkpoint was taken while the in-flight data of an earlier "
                "rescaled restore was still being processed, and holds some of it; it can be "
                "restored only at the parallelism it was taken at (restore it there and "
                "rescale from a later checkpoint, or from a savepoint)"
            )
        batch = deserializer.add(decode_chunk(chunk))
        if batch is not None:
            yield batch
    if deserializer.has_leftover:
        raise ValueError(
            f"{where}: channel state ends inside a record ({len(deserializer.leftover())} bytes "
            "of an incomplete batch)"
        )


@dataclass(frozen=True, slots=True)
class ReemitChannel:
    """One old channel a new producer subtask re-emits, with where its bytes are: the old
    consumer's input handle (``None`` if it held nothing of the edge) and the old producer's
    output handle (likewise). The reader takes ``channel.input_channel`` from the first and
    ``channel.output_channel`` from the second, in that order (:func:`channel_stream`)."""

    channel: OldChannel
    input: MergedChannelStateHandle | None
    output: MergedChannelStateHandle | None


@dataclass(frozen=True, slots=True)
class EndOfChannelStateEvent:
    """The producer re-emitted all the in-flight data of a rescaled restore on this channel
    (this module); live data follows.

    Sent as a *blocking* event right after the re-emitted records, on every subpartition of an
    edge whose parallelism changed; the consumer resumes all channels of the gate once each
    delivered one, so all restored data precedes all live data (Flink's
    ``EndOfChannelStateEvent``).
    """
