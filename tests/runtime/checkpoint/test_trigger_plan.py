"""The FLIP-147 checkpoint plan over random DAGs and finished sets, and the restore rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import RestoreError
from undertow.runtime.checkpoint.trigger_plan import (
    RestoredVertex,
    SubtaskTopology,
    finished_on_restore,
    late_triggers,
    plan_checkpoint,
)


@st.composite
def topologies(draw: st.DrawFn) -> SubtaskTopology:
    """A random DAG (edges only from lower to higher ids), random parallelism, and per edge
    either all-to-all or pointwise (i -> i % consumer parallelism) connections."""
    n = draw(st.integers(1, 6))
    parallelism = {v: draw(st.integers(1, 4)) for v in range(n)}
    inputs: dict[int, set[int]] = {v: set() for v in range(n)}
    preds: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for target in range(1, n):
        for source in draw(st.sets(st.integers(0, target - 1), max_size=3)):
            inputs[target].add(source)
            all_to_all = draw(st.booleans())
            for p in range(parallelism[source]):
                consumers = range(parallelism[target]) if all_to_all else [p % parallelism[target]]
                for c in consumers:
                    preds.setdefault((target, c), set()).add((source, p))
    return SubtaskTopology(
        parallelism=parallelism,
        vertex_inputs={v: frozenset(i) for v, i in inputs.items()},
        predecessors={k: frozenset(p) for k, p in preds.items()},
    )


@st.composite
def topology_and_finished(draw: st.DrawFn) -> tuple[SubtaskTopology, frozenset[tuple[int, int]]]:
    topology = draw(topologies())
    finished = draw(st.sets(st.sampled_from(sorted(topology.subtasks))))
    return topology, frozenset(finished)


@settings(max_examples=300, derandomize=True)
@given(topology_and_finished())
def test_plan_invariants(case: tuple[SubtaskTopology, frozenset[tuple[int, int]]]) -> None:
    topology, finished = case
    plan = plan_checkpoint(topology, finished)
    running = topology.subtasks - finished
    assert plan.wait_for == running and plan.finished == finished
    assert plan.trigger <= plan.wait_for
    for key in running:
        has_running_predecessor = bool(topology.predecessors.get(key, frozenset()) & running)
        assert (key in plan.trigger) != has_running_predecessor, key
    for vertex in plan.fully_finished:
        assert all((vertex, s) in finished for s in range(topology.parallelism[vertex]))
        assert topology.vertex_inputs[vertex] <= plan.fully_finished
    # maximal: a vertex left out has a running subtask or a predecessor left out
    for vertex, n in topology.parallelism.items():
        if vertex not in plan.fully_finished:
            all_done = all((vertex, s) in finished for s in range(n))
            assert not all_done or not topology.vertex_inputs[vertex] <= plan.fully_finished


@settings(max_examples=100, derandomize=True)
@given(topologies())
def test_nothing_finished_triggers_exactly_the_sources(topology: SubtaskTopology) -> None:
    plan = plan_checkpoint(topology, frozenset())
    sources = {k for k in topology.subtasks if not topology.predecessors.get(k)}
    assert plan.trigger == sources and plan.wait_for == topology.subtasks
    assert plan.fully_finished == frozenset()


def test_consumer_of_finished_producers_is_triggered_directly() -> None:
    topology = SubtaskTopology(
        parallelism={0: 2, 1: 1, 2: 1},
        vertex_inputs={0: frozenset(), 1: frozenset({0}), 2: frozenset({1})},
        predecessors={(1, 0): frozenset({(0, 0), (0, 1)}), (2, 0): frozenset({(1, 0)})},
    )
    plan = plan_checkpoint(topology, {(0, 0)})
    assert plan.trigger == {(0, 1)} and plan.fully_finished == frozenset()
    plan = plan_checkpoint(topology, {(0, 0), (0, 1)})
    assert plan.trigger == {(1, 0)} and plan.wait_for == {(1, 0), (2, 0)}
    assert plan.fully_finished == {0}
    # a consumer reported finished before its producer is not fully finished yet
    plan = plan_checkpoint(topology, {(0, 0), (1, 0)})
    assert plan.fully_finished == frozenset()


def test_successors_of_a_triggered_subtask_that_finished_first_are_triggered_late() -> None:
    """Checkpoint 7 triggered (1, 0); it finished before taking the barrier, so no barrier
    reaches (2, 0) from it: the coordinator triggers (2, 0) directly, once."""
    topology = SubtaskTopology(
        parallelism={0: 1, 1: 1, 2: 1},
        vertex_inputs={0: frozenset(), 1: frozenset({0}), 2: frozenset({1})},
        predecessors={(1, 0): frozenset({(0, 0)}), (2, 0): frozenset({(1, 0)})},
    )
    finished = {(0, 0), (1, 0)}
    waiting = {(2, 0)}
    assert late_triggers(topology, finished, waiting, triggered={(1, 0)}) == {(2, 0)}
    assert late_triggers(topology, finished, waiting, triggered={(1, 0), (2, 0)}) == frozenset()
    # (2, 0) acknowledged already (the barrier got there first): nothing to trigger
    assert late_triggers(topology, finished, set(), triggered={(1, 0)}) == frozenset()
    # its producer still runs: it will forward the barrier
    assert late_triggers(topology, {(0, 0)}, {(1, 0), (2, 0)}, {(0, 0)}) == {(1, 0)}


def _vertex(vid: int, uids: tuple[str, ...], inputs: set[int]) -> RestoredVertex:
    return RestoredVertex(vid, f"v{vid}", uids, frozenset(inputs))


def test_restore_deploys_fully_finished_vertices_as_finished() -> None:
    vertices = [_vertex(0, ("src",), set()), _vertex(1, ("map", "sink"), {0}),
                _vertex(2, ("other",), set())]  # fmt: skip
    assert finished_on_restore(vertices, frozenset({"src", "map", "sink"}), 7) == {0, 1}
    assert finished_on_restore(vertices, frozenset(), 7) == frozenset()


def test_restore_refuses_a_new_predecessor_of_a_finished_operator() -> None:
    vertices = [_vertex(0, ("new-source",), set()), _vertex(1, ("sink",), {0})]
    with pytest.raises(RestoreError, match=r"checkpoint 7.*'sink'.*predecessor.*'v0'"):
        finished_on_restore(vertices, frozenset({"sink"}), 7)


def test_restore_refuses_a_finished_operator_chained_with_unfinished_ones() -> None:
    vertices = [_vertex(0, ("src", "new-map"), set())]
    with pytest.raises(RestoreError, match=r"checkpoint 3.*'src'.*'new-map'"):
        finished_on_restore(vertices, frozenset({"src"}), 3)
