"""Stream graph -> job graph: chaining rules, job edges, vertex names and pickled payloads."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import pytest

from undertow.core.errors import GraphBuildError, SerializationError
from undertow.datastream import (
    CoMapFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from undertow.graph.job_graph import JobGraph, JobVertex, build_job_graph
from undertow.graph.partitioners import RebalancePartitioner
from undertow.graph.stream_graph import build_stream_graph
from undertow.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SourceTransformation,
    Transformation,
)

LATE = OutputTag("late")


class SplitLate(ProcessFunction):
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]:
        yield value


class Both(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value


def _job(env: StreamExecutionEnvironment) -> JobGraph:
    return build_job_graph(env.get_stream_graph())


def _names(graph: JobGraph) -> list[str]:
    return [v.name for v in graph.vertices]


def _vertex(graph: JobGraph, name: str) -> JobVertex:
    (vertex,) = [v for v in graph.vertices if v.name == name]
    return vertex


def _build(sinks: list[Transformation], parallelism: int = 1) -> JobGraph:
    return build_job_graph(
        build_stream_graph(
            "job",
            sinks,
            default_parallelism=parallelism,
            default_max_parallelism=128,
            default_buffer_timeout=100,
        )
    )


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment().set_parallelism(parallelism)


# -- chaining -------------------------------------------------------------------------------------


def test_forward_edges_with_equal_parallelism_chain_into_one_vertex() -> None:
    env = _env()
    env.from_collection([1]).name("A").map(str).name("B").map(len).name("C").print().name("D")
    graph = _job(env)
    assert _names(graph) == ["A -> B -> C -> D"]
    (vertex,) = graph.vertices
    assert vertex.is_source
    assert [op.name for op in vertex.operators] == ["A", "B", "C", "D"]
    assert [op.kind for op in vertex.operators] == ["source", "one-input", "one-input", "one-input"]
    assert graph.edges == () and vertex.inputs == () and vertex.outputs == ()
    chained = [op.chained_outputs for op in vertex.operators]
    node_ids = [op.node_id for op in vertex.operators]
    assert chained == [((node_ids[1], None),), ((node_ids[2], None),), ((node_ids[3], None),), ()]


def test_rebalance_breaks_the_chain() -> None:
    env = _env()
    env.from_collection([1]).name("A").rebalance().map(str).name("B").print().name("C")
    graph = _job(env)
    assert _names(graph) == ["A", "B -> C"]
    (edge,) = graph.edges
    assert (edge.partitioner_kind, edge.source_vertex, edge.target_vertex) == ("REBALANCE", 0, 1)
    assert isinstance(edge.new_partitioner(), RebalancePartitioner)
    assert edge.supports_unaligned
    assert graph.vertices[0].operators[0].network_outputs == (edge.id,)
    assert graph.vertices[0].outputs == (edge,) and graph.vertices[1].inputs == (edge,)


def test_different_parallelism_breaks_the_chain() -> None:
    env = _env(2)
    env.from_collection([1]).name("A").map(str).name("B").print().name("C")
    graph = _job(env)
    assert _names(graph) == ["A", "B -> C"]
    assert [v.parallelism for v in graph.vertices] == [1, 2]
    assert graph.total_subtasks == 3


def test_start_new_chain_breaks_before_but_not_after() -> None:
    env = _env()
    b = env.from_collection([1]).name("A").map(str).name("B").start_new_chain()
    b.map(len).name("C").print().name("D")
    graph = _job(env)
    assert _names(graph) == ["A", "B -> C -> D"]
    (edge,) = graph.edges
    assert edge.partitioner_kind == "FORWARD"
    assert not edge.supports_unaligned


def test_disable_chaining_isolates_the_operator() -> None:
    env = _env()
    b = env.from_collection([1]).name("A").map(str).name("B").disable_chaining()
    b.map(len).name("C").print().name("D")
    assert _names(_job(env)) == ["A", "B", "C -> D"]


def test_slot_sharing_group_breaks_the_chain() -> None:
    env = _env()
    b = env.from_collection([1]).name("A").map(str).name("B").slot_sharing_group("other")
    b.map(len).name("C").slot_sharing_group("other").print().name("D")
    graph = _job(env)
    assert _names(graph) == ["A", "B -> C", "D"]
    assert [v.slot_sharing_group for v in graph.vertices] == ["default", "other", "default"]


def test_disabled_chaining_breaks_every_chain() -> None:
    env = _env().disable_operator_chaining()
    env.from_collection([1]).name("A").map(str).name("B").print().name("C")
    graph = _job(env)
    assert _names(graph) == ["A", "B", "C"]
    assert [e.partitioner_kind for e in graph.edges] == ["FORWARD", "FORWARD"]


def test_operator_with_two_inputs_is_never_chained() -> None:
    env = _env()
    a = env.from_collection([1]).name("A")
    b = env.from_collection([2]).name("B")
    a.union(b).map(str).name("M").print().name("S")
    graph = _job(env)
    assert sorted(_names(graph)) == ["A", "B", "M -> S"]
    m = _vertex(graph, "M -> S")
    assert sorted(graph.vertex(e.source_vertex).name for e in m.inputs) == ["A", "B"]
    assert all(e.target_input == 1 for e in m.inputs)


def test_two_input_edges_are_numbered_one_and_two() -> None:
    env = _env()
    left = env.from_collection([1]).name("L").map(str).name("LM")
    right = env.from_collection([2]).name("R")
    left.connect(right).map(Both()).name("Co").print().name("S")
    graph = _job(env)
    assert sorted(_names(graph)) == ["Co -> S", "L -> LM", "R"]
    co = _vertex(graph, "Co -> S")
    assert co.operators[0].kind == "two-input"
    assert sorted((graph.vertex(e.source_vertex).name, e.target_input) for e in co.inputs) == [
        ("L -> LM", 1), ("R", 2)
    ]  # fmt: skip
    by_input = {e.target_input: e for e in co.inputs}
    assert by_input[1].source_node == _vertex(graph, "L -> LM").operators[1].node_id


def test_one_producer_chains_to_several_consumers() -> None:
    env = _env()
    ds = env.from_collection([1]).name("A")
    ds.map(str).name("B").print().name("SB")
    ds.map(len).name("C").print().name("SC")
    graph = _job(env)
    assert _names(graph) == ["A -> B -> SB -> C -> SC"]
    head = graph.vertices[0].operators[0]
    assert len(head.chained_outputs) == 2


def test_chained_side_output_keeps_its_tag() -> None:
    env = _env()
    main = env.from_collection([1]).name("A").process(SplitLate()).name("P")
    main.print().name("Main")
    main.get_side_output(LATE).map(abs).name("Late").print().name("LateSink")
    graph = _job(env)
    (vertex,) = graph.vertices
    p = next(op for op in vertex.operators if op.name == "P")
    ids = {op.name: op.node_id for op in vertex.operators}
    assert sorted(p.chained_outputs, key=str) == sorted(
        [(ids["Main"], None), (ids["Late"], "late")], key=str
    )


def test_side_output_over_the_network_keeps_its_tag() -> None:
    env = _env()
    main = env.from_collection([1]).name("A").process(SplitLate()).name("P")
    main.print().name("Main")
    main.get_side_output(LATE).map(abs).name("Late").set_parallelism(2).print().name("LateSink")
    graph = _job(env)
    late = _vertex(graph, "Late")
    (edge,) = late.inputs
    assert (edge.tag_id, edge.partitioner_kind) == ("late", "REBALANCE")
    source = graph.vertex(edge.source_vertex)
    p = next(op for op in source.operators if op.name == "P")
    assert p.network_outputs == (edge.id,)
    assert [tag for _, tag in p.chained_outputs] == [None]


def test_union_of_a_stream_with_itself_uses_both_job_edges() -> None:
    env = _env()
    ds = env.from_collection([1]).name("A")
    ds.union(ds).map(str).name("M").print().name("S")
    graph = _job(env)
    assert _names(graph) == ["A", "M -> S"]
    assert len(graph.edges) == 2
    (source,) = graph.vertices[0].operators
    assert sorted(source.network_outputs) == [e.id for e in graph.edges]


def test_every_job_edge_is_written_by_exactly_one_operator() -> None:
    env = _env(2)
    a = env.from_collection([1]).name("A")
    keyed = a.map(str).name("B").key_by(len)
    keyed.reduce(lambda x, y: x).name("R").print().name("S1")
    a.rebalance().map(len).name("C").print().name("S2")
    graph = _job(env)
    written = sorted(i for v in graph.vertices for op in v.operators for i in op.network_outputs)
    assert written == [e.id for e in graph.edges]
    for v in graph.vertices:
        assert {e.id for e in v.outputs} == {i for op in v.operators for i in op.network_outputs}
        assert all(e.target_vertex == v.id for e in v.inputs)
    assert {e.partitioner_kind for e in graph.edges} == {"REBALANCE", "HASH"}


def test_vertex_lookup_and_buffer_timeout() -> None:
    env = _env()
    env.from_collection([1]).name("A").map(str).name("B").set_buffer_timeout(5).print().name("C")
    graph = _job(env)
    (vertex,) = graph.vertices
    assert graph.vertex(vertex.id) is vertex
    assert vertex.buffer_timeout == 5, "a chain flushes as often as its most eager operator"
    with pytest.raises(KeyError):
        graph.vertex(99)


# -- payloads -------------------------------------------------------------------------------------


def test_payloads_instantiate_fresh_copies() -> None:
    env = _env()
    env.from_collection([1, 2]).name("A").key_by(lambda x: x % 2).map(str).name("M").print()
    graph = _job(env)
    m = next(op for v in graph.vertices for op in v.operators if op.name == "M")
    first, second = m.instantiate(), m.instantiate()
    assert first["operator"] is not second["operator"]
    assert first["key_selector"](3) == 1
    source = graph.vertices[0].operators[0]
    assert set(source.instantiate()) == {"source", "watermark_strategy"}
    edge = graph.edges[0]
    assert edge.new_partitioner() is not edge.new_partitioner()


def test_unpicklable_function_names_the_operator() -> None:
    lock = threading.Lock()
    env = _env()
    env.from_collection([1]).map(lambda x: (lock, x)).name("Locky").print()
    with pytest.raises(SerializationError, match="operator 'Locky'") as info:
        _job(env)
    assert isinstance(info.value, GraphBuildError)
    assert info.value.__cause__ is not None


def test_unpicklable_partitioner_names_both_operators() -> None:
    lock = threading.Lock()
    env = _env(2)
    keyed = env.from_collection([1]).name("Up").key_by(lambda x: (lock, x)[1])
    keyed.map(str).name("Down").print()
    with pytest.raises(SerializationError, match="'Up' and 'Down'"):
        _job(env)


def test_direct_transformations_chain_like_the_api() -> None:
    src = SourceTransformation(name="S", parallelism=2)
    a = OneInputTransformation(name="A", input=src)
    part = PartitionTransformation(name="R", input=a, partitioner=RebalancePartitioner())
    b = OneInputTransformation(name="B", input=part)
    graph = _build([b], parallelism=2)
    assert _names(graph) == ["S -> A", "B"]
    assert [op.kind for op in graph.vertices[0].operators] == ["source", "one-input"]


def test_a_vertex_describes_its_chain_with_the_operators_descriptions() -> None:
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    ds = env.from_collection([1]).map(lambda x: x).set_description("adds nothing")
    ds.map(lambda x: x).name("second").print()
    [vertex] = env._job_graph("described").vertices
    assert vertex.description == (
        "Source: Collection Source -> adds nothing -> second -> Sink: Print to Std. Out"
    )
