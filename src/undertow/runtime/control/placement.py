"""Where subtasks run and which channels connect them: a pure function of the job graph.

Slot sharing: slot ``i`` holds subtask ``i`` of every vertex (one subtask of each vertex per
slot), so a job needs ``max(parallelism)`` slots; slots are spread over workers round robin.
Channels: one per (job edge, producer subtask, connected consumer subtask), numbered in a fixed
order, so every worker computes the same plan from the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.graph.job_graph import JobGraph
from undertow.graph.partitioners import connected_consumers


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    channel_id: int
    edge_id: int
    producer_subtask: int
    consumer_subtask: int
    #: Index of the subpartition in the producer's result partition for this edge.
    subpartition: int
    #: Index of the channel in the consumer's input gate for this edge.
    gate_channel: int


@dataclass(frozen=True)
class ExecutionPlan:
    num_workers: int
    num_slots: int
    channels: tuple[ChannelSpec, ...]

    def worker_of(self, subtask: int) -> int:
        return subtask % self.num_workers

    def subtasks_of(self, graph: JobGraph, worker: int) -> list[tuple[int, int]]:
        """(vertex id, subtask) pairs that run on ``worker``."""
        return [
            (v.id, s)
            for v in graph.vertices
            for s in range(v.parallelism)
            if self.worker_of(s) == worker
        ]


def plan_execution(graph: JobGraph, num_workers: int) -> ExecutionPlan:
    slots = max(v.parallelism for v in graph.vertices)
    workers = max(1, min(num_workers, slots))
    channels: list[ChannelSpec] = []
    for edge in graph.edges:
        up = graph.vertex(edge.source_vertex)
        down = graph.vertex(edge.target_vertex)
        partitioner = edge.new_partitioner()
        gate_counts = [0] * down.parallelism
        for producer in range(up.parallelism):
            targets = connected_consumers(partitioner, producer, up.parallelism, down.parallelism)
            for sub_index, consumer in enumerate(targets):
                channels.append(
                    ChannelSpec(len(channels), edge.id, producer, consumer, sub_index,
                                gate_counts[consumer])
                )  # fmt: skip
                gate_counts[consumer] += 1
    return ExecutionPlan(workers, slots, tuple(channels))
