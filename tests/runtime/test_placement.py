"""Execution planning: slots, workers and channel numbering from a job graph."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.graph.partitioners import (
    BroadcastPartitioner,
    ForwardPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    StreamPartitioner,
)
from undertow.graph.stream_graph import build_stream_graph
from undertow.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SourceTransformation,
    TwoInputTransformation,
)
from undertow.runtime.control.placement import ChannelSpec, plan_execution


def _graph(
    up: int,
    down: int,
    partitioner: StreamPartitioner | None = None,
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS,
) -> JobGraph:
    """Source(up) -[partitioner]-> Map(down) -> Sink(down)."""
    src = SourceTransformation(name="Src", parallelism=up)
    edge = (
        src
        if partitioner is None
        else PartitionTransformation(name="P", input=src, partitioner=partitioner)
    )
    mapper = OneInputTransformation(name="Map", input=edge, parallelism=down, chaining=chaining)
    sink = OneInputTransformation(name="Sink", input=mapper, parallelism=down)
    return build_job_graph(
        build_stream_graph(
            "job", [sink], default_parallelism=1, default_max_parallelism=128,
            default_buffer_timeout=100,
        )
    )  # fmt: skip


def _two_input_graph() -> JobGraph:
    a = SourceTransformation(name="A", parallelism=2)
    b = SourceTransformation(name="B", parallelism=3)
    ra = PartitionTransformation(name="R", input=a, partitioner=RebalancePartitioner())
    rb = PartitionTransformation(name="R", input=b, partitioner=BroadcastPartitioner())
    co = TwoInputTransformation(name="Co", input1=ra, input2=rb, parallelism=4)
    return build_job_graph(
        build_stream_graph(
            "job", [co], default_parallelism=1, default_max_parallelism=128,
            default_buffer_timeout=100,
        )
    )  # fmt: skip


def _check_plan_shape(graph: JobGraph, channels: tuple[ChannelSpec, ...]) -> None:
    assert [c.channel_id for c in channels] == list(range(len(channels)))
    by_gate: dict[tuple[int, int], list[int]] = defaultdict(list)
    by_partition: dict[tuple[int, int], list[int]] = defaultdict(list)
    for c in channels:
        by_gate[(c.edge_id, c.consumer_subtask)].append(c.gate_channel)
        by_partition[(c.edge_id, c.producer_subtask)].append(c.subpartition)
    for gate_channels in by_gate.values():
        assert sorted(gate_channels) == list(range(len(gate_channels)))
    for subpartitions in by_partition.values():
        assert subpartitions == list(range(len(subpartitions)))
    for edge in graph.edges:
        up, down = graph.vertex(edge.source_vertex), graph.vertex(edge.target_vertex)
        assert {s for (e, s) in by_partition if e == edge.id} == set(range(up.parallelism))
        assert {s for (e, s) in by_gate if e == edge.id} == set(range(down.parallelism))


def test_all_to_all_edge_has_producers_times_consumers_channels() -> None:
    graph = _graph(2, 3)
    plan = plan_execution(graph, 2)
    (edge,) = graph.edges
    assert edge.partitioner_kind == "REBALANCE"
    assert [(c.producer_subtask, c.consumer_subtask) for c in plan.channels] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)
    ]  # fmt: skip
    assert [c.subpartition for c in plan.channels] == [0, 1, 2, 0, 1, 2]
    assert [c.gate_channel for c in plan.channels] == [0, 0, 0, 1, 1, 1]
    _check_plan_shape(graph, plan.channels)


def test_forward_edge_connects_i_to_i() -> None:
    assert _graph(3, 3).vertices[0].name == "Src -> Map -> Sink", "chained: no channels"
    assert plan_execution(_graph(3, 3), 2).channels == ()
    graph = _graph(3, 3, ForwardPartitioner(), ChainingStrategy.NEVER)
    assert [v.name for v in graph.vertices] == ["Src", "Map", "Sink"]
    assert [e.partitioner_kind for e in graph.edges] == ["FORWARD", "FORWARD"]
    plan = plan_execution(graph, 2)
    assert [(c.edge_id, c.producer_subtask, c.consumer_subtask) for c in plan.channels] == [
        (0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 0, 0), (1, 1, 1), (1, 2, 2)
    ]  # fmt: skip
    assert all(c.subpartition == 0 and c.gate_channel == 0 for c in plan.channels)
    _check_plan_shape(graph, plan.channels)


def test_rescale_edge_channels() -> None:
    graph = _graph(2, 5, RescalePartitioner())
    plan = plan_execution(graph, 3)
    assert [(c.producer_subtask, c.consumer_subtask) for c in plan.channels] == [
        (0, 0), (0, 1), (0, 2), (1, 3), (1, 4)
    ]  # fmt: skip
    assert all(c.gate_channel == 0 for c in plan.channels)
    _check_plan_shape(graph, plan.channels)


def test_plan_is_deterministic() -> None:
    first = plan_execution(_two_input_graph(), 3)
    second = plan_execution(_two_input_graph(), 3)
    assert first == second
    assert first.channels == second.channels


def test_two_input_gates_are_numbered_per_edge() -> None:
    graph = _two_input_graph()
    plan = plan_execution(graph, 2)
    _check_plan_shape(graph, plan.channels)
    per_edge = Counter(c.edge_id for c in plan.channels)
    assert sorted(per_edge.values()) == [2 * 4, 3 * 4]
    assert plan.num_slots == 4


@pytest.mark.parametrize(("requested", "expected"), [(1, 1), (2, 2), (4, 4), (10, 4), (0, 1)])
def test_workers_are_capped_by_slots(requested: int, expected: int) -> None:
    plan = plan_execution(_graph(4, 2), requested)
    assert plan.num_workers == expected
    assert plan.num_slots == 4


def test_worker_of_spreads_subtasks_round_robin() -> None:
    graph = _graph(4, 2)
    plan = plan_execution(graph, 3)
    assert [plan.worker_of(s) for s in range(6)] == [0, 1, 2, 0, 1, 2]
    placed = [plan.subtasks_of(graph, w) for w in range(3)]
    assert sorted(p for per in placed for p in per) == sorted(
        (v.id, s) for v in graph.vertices for s in range(v.parallelism)
    )
    assert all(per for per in placed), "every worker gets work"
    # slot sharing: subtask i of every vertex is on the same worker
    for worker, per in enumerate(placed):
        assert all(plan.worker_of(s) == worker for _, s in per)


@settings(max_examples=40, deadline=None)
@given(
    up=st.integers(1, 9),
    down=st.integers(1, 9),
    kind=st.sampled_from(["rebalance", "rescale", "broadcast"]),
    workers=st.integers(1, 5),
)
def test_plan_shape_for_any_parallelism(up: int, down: int, kind: str, workers: int) -> None:
    partitioner = {
        "rebalance": RebalancePartitioner,
        "rescale": RescalePartitioner,
        "broadcast": BroadcastPartitioner,
    }[kind]()
    graph = _graph(up, down, partitioner)
    plan = plan_execution(graph, workers)
    _check_plan_shape(graph, plan.channels)
    assert plan == plan_execution(graph, workers)
    assert 1 <= plan.num_workers <= min(workers, max(up, down))
