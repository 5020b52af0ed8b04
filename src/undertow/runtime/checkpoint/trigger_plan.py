"""Which subtasks a checkpoint triggers and waits for once some have finished (FLIP-147).

With nothing finished this is Flink's plan: trigger the sources, wait for everyone.

Invariants (checked by Hypothesis in ``tests/runtime/checkpoint/test_trigger_plan.py``):
``trigger ⊆ wait_for``; ``wait_for`` and ``finished`` partition all subtasks; every running
subtask is in ``trigger`` or has a running predecessor; every vertex of ``fully_finished`` has
only finished subtasks and only fully finished predecessor vertices.

Cost: O(subtasks + channels). Threading: none (pure).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.graph.partitioners import connected_consumers

#: (job vertex id, subtask index)
SubtaskKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class SubtaskTopology:
    """The subtasks of a job and which subtasks feed which (one entry per connected pair)."""

    #: vertex id -> parallelism, in topological order (producers before consumers)
    parallelism: Mapping[int, int]
    #: vertex id -> ids of the vertices with an edge into it
    vertex_inputs: Mapping[int, frozenset[int]]
    #: subtask -> the subtasks with a channel into it
    predecessors: Mapping[SubtaskKey, frozenset[SubtaskKey]]

    @property
    def subtasks(self) -> frozenset[SubtaskKey]:
        return frozenset((v, s) for v, n in self.parallelism.items() for s in range(n))

    @staticmethod
    def of(graph: JobGraph) -> SubtaskTopology:
        """From a job graph: channels connect subtasks as the workers build them
        (``runtime.control.placement.plan_execution``, the same partitioner rule)."""
        preds: dict[SubtaskKey, set[SubtaskKey]] = {}
        for edge in graph.edges:
            up = graph.vertex(edge.source_vertex)
            down = graph.vertex(edge.target_vertex)
            partitioner = edge.new_partitioner()
            for producer in range(up.parallelism):
                for consumer in connected_consumers(
                    partitioner, producer, up.parallelism, down.parallelism
                ):
                    key = (edge.target_vertex, consumer)
                    preds.setdefault(key, set()).add((edge.source_vertex, producer))
        return SubtaskTopology(
            parallelism={v.id: v.parallelism for v in graph.vertices},
            vertex_inputs={
                v.id: frozenset(e.source_vertex for e in v.inputs) for v in graph.vertices
            },
            predecessors={k: frozenset(p) for k, p in preds.items()},
        )


@dataclass(frozen=True, slots=True)
class CheckpointPlan:
    """Who a checkpoint triggers, who it waits for, and what it records as finished."""

    trigger: frozenset[SubtaskKey]
    wait_for: frozenset[SubtaskKey]
    finished: frozenset[SubtaskKey]
    fully_finished: frozenset[int]


def plan_checkpoint(topology: SubtaskTopology, finished: Iterable[SubtaskKey]) -> CheckpointPlan:
    """The plan of a checkpoint triggered now (see the module docstring)."""
    done = frozenset(finished) & topology.subtasks
    running = topology.subtasks - done
    empty: frozenset[SubtaskKey] = frozenset()
    trigger = frozenset(
        key for key in running if not (topology.predecessors.get(key, empty) & running)
    )
    candidates = {
        vertex for vertex, n in topology.parallelism.items()
        if all((vertex, s) in done for s in range(n))
    }  # fmt: skip
    fully: set[int] = set()
    grew = True
    while grew:  # a fixpoint, whatever order the vertices come in
        grew = False
        for vertex in candidates - fully:
            if topology.vertex_inputs.get(vertex, frozenset()) <= fully:
                fully.add(vertex)
                grew = True
    return CheckpointPlan(trigger, running, done, frozenset(fully))


def late_triggers(
    topology: SubtaskTopology,
    finished: Iterable[SubtaskKey],
    not_acknowledged: Iterable[SubtaskKey],
    triggered: Iterable[SubtaskKey],
) -> frozenset[SubtaskKey]:
    """Subtasks a *pending* checkpoint must trigger now that more subtasks finished.

    A subtask the checkpoint triggered may finish before it takes the barrier (its final
    checkpoint completed meanwhile): then no barrier reaches its successors from it, and a
    successor whose predecessors have now all finished would wait forever. Those successors,
    running, not yet acknowledged and not triggered before, are triggered directly with the
    same barrier. A successor that gets the barrier from another input as well takes the
    checkpoint once (a task ignores a checkpoint id it has already taken)."""
    plan = plan_checkpoint(topology, finished)
    return (plan.trigger & frozenset(not_acknowledged)) - frozenset(triggered)


@dataclass(frozen=True, slots=True)
class RestoredVertex:
    """What :func:`finished_on_restore` needs of a vertex of the job being deployed."""

    vertex_id: int
    name: str
    uids: tuple[str, ...]
    inputs: frozenset[int]


def finished_on_restore(
    vertices: Iterable[RestoredVertex], finished_uids: frozenset[str], checkpoint_id: int
) -> frozenset[int]:
    """Vertices deployed as finished; raises :class:`RestoreError` naming the operator and
    the checkpoint when the job graph cannot keep a finished operator finished."""
    listed = list(vertices)
    result: set[int] = set()
    for vertex in listed:
        done = [u for u in vertex.uids if u in finished_uids]
        if not done:
            continue
        if len(done) != len(vertex.uids):
            rest = [u for u in vertex.uids if u not in finished_uids]
            raise RestoreError(
                f"checkpoint {checkpoint_id}: operator {done[0]!r} (in '{vertex.name}') was "
                f"fully finished, but it is now chained with operators that were not: "
                f"{', '.join(repr(u) for u in rest)}. Keep finished operators in their own "
                "chain, or restore without this checkpoint"
            )
        result.add(vertex.vertex_id)
    by_id = {v.vertex_id: v for v in listed}
    for vertex in listed:
        if vertex.vertex_id not in result:
            continue
        for source in sorted(vertex.inputs - result):
            raise RestoreError(
                f"checkpoint {checkpoint_id}: operator {vertex.uids[0]!r} (in '{vertex.name}') "
                f"was fully finished, but the job gives it a predecessor that is not: "
                f"'{by_id[source].name}'. A finished operator cannot take new input; "
                "restore without this checkpoint or remove the new predecessor"
            )
    return frozenset(result)
