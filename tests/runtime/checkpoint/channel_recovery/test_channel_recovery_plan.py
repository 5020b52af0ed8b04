"""The driver's half of channel recovery: in place at the old parallelism, refused when the
chains changed."""

from __future__ import annotations

import pytest

from undertow.core.errors import RestoreError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.channel_recovery.plan import plan_channel_recovery
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.checkpoint.metadata_model import CheckpointMetadata, VertexMetadata


def job() -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1]).rebalance().map(lambda x: x + 1).name("plus").rebalance().print()
    return env._job_graph("plan")


def old_metadata(graph: JobGraph, plus_uids: tuple[str, ...] | None = None) -> CheckpointMetadata:
    """The graph's vertices as a checkpoint saw them; ``plus`` with channel state of subtask 1
    (and another chain, if ``plus_uids``)."""
    vertices = []
    for v in graph.vertices:
        uids = tuple(op.uid for op in v.operators)
        state = {}
        if v.name == "plus":
            state = {1: ChannelStateHandles()}
            uids = plus_uids or uids
        vertices.append(VertexMetadata(v.id, v.name, uids, v.parallelism, 128,
                                       channel_state=state))  # fmt: skip
    return CheckpointMetadata("0" * 32, 9, 0, 0, False, tuple(vertices))


def test_an_unchanged_job_restores_channel_state_in_place() -> None:
    graph = job()
    meta = old_metadata(graph)
    old_of = {v.id: old for v, old in zip(graph.vertices, meta.vertices, strict=True)}
    plan = plan_channel_recovery(graph, meta, old_of, frozenset())
    [plus] = [v for v in graph.vertices if v.name == "plus"]
    assert plan.channel_state == {(plus.id, 1): ChannelStateHandles()}
    assert (plan.reemit, plan.rescaled_gates, plan.rescaled_outputs) == ({}, {}, {})
    assert plan_channel_recovery(graph, meta, old_of, frozenset({plus.id})).channel_state == {}


def test_channel_state_of_a_changed_chain_is_refused_naming_checkpoint_and_operator() -> None:
    graph = job()
    [plus] = [v for v in graph.vertices if v.name == "plus"]
    meta = old_metadata(graph, plus_uids=(plus.operators[0].uid, "gone"))
    old_of = {v.id: old for v, old in zip(graph.vertices, meta.vertices, strict=True)
              if v.id != plus.id}  # fmt: skip
    with pytest.raises(RestoreError, match=r"checkpoint 9 holds in-flight data .* 'plus'"):
        plan_channel_recovery(graph, meta, old_of, frozenset())
