"""Transformations -> stream graph: nodes, edges, default partitioners and misuse errors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from undertow.common import Configuration
from undertow.core.errors import GraphBuildError
from undertow.datastream import (
    CoMapFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from undertow.graph.partitioners import (
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
)
from undertow.graph.stream_graph import (
    StreamGraph,
    StreamNode,
    build_stream_graph,
    describe,
    generated_uid_name,
)
from undertow.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
)
from undertow.runtime.task.operators import CollectSinkOperator

LATE = OutputTag("late")


class SplitLate(ProcessFunction):
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]:
        if value < 0:
            ctx.output(LATE, value)
        else:
            yield value


class Both(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value


def _env() -> StreamExecutionEnvironment:
    """An environment at default parallelism 1 (unset, a job on one machine gets its cores),
    so that these shapes do not depend on the machine."""
    return StreamExecutionEnvironment(Configuration({"parallelism.default": "1"}))


def _build(sinks: list[Transformation], parallelism: int = 1, **kw: Any) -> StreamGraph:
    return build_stream_graph(
        "job",
        sinks,
        default_parallelism=parallelism,
        default_max_parallelism=kw.pop("max_parallelism", 128),
        default_buffer_timeout=kw.pop("buffer_timeout", 100),
        **kw,
    )


def _node(graph: StreamGraph, name: str) -> StreamNode:
    (node,) = [n for n in graph.nodes.values() if n.name == name]
    return node


def _edges(graph: StreamGraph) -> list[tuple[str, str, str, str | None, int]]:
    """(source, target, partitioner, side output, target input) per edge, in edge order."""
    return [
        (graph.nodes[e.source].name, graph.nodes[e.target].name, e.partitioner.kind, e.tag_id,
         e.target_input)
        for e in graph.edges
    ]  # fmt: skip


def _source(name: str = "Src", parallelism: int | None = None) -> SourceTransformation:
    return SourceTransformation(name=name, parallelism=parallelism)


def _op(name: str, upstream: Transformation, parallelism: int | None = None) -> Any:
    return OneInputTransformation(name=name, input=upstream, parallelism=parallelism)


# -- through the DataStream API -------------------------------------------------------------------


def test_pipeline_nodes_and_forward_edges() -> None:
    env = _env()
    env.from_collection([1, 2, 3]).map(lambda x: x + 1).name("Plus").filter(bool).print()
    graph = env.get_stream_graph("my job")
    assert graph.job_name == "my job"
    assert [n.name for n in graph.nodes.values()] == [
        "Source: Collection Source", "Plus", "Filter", "Sink: Print to Std. Out"
    ]  # fmt: skip
    assert [n.parallelism for n in graph.nodes.values()] == [1, 1, 1, 1]
    assert [e[2] for e in _edges(graph)] == ["FORWARD"] * 3
    assert [n.name for n in graph.sources()] == ["Source: Collection Source"]
    assert graph.chaining_enabled
    for edge in graph.edges:
        assert edge in graph.nodes[edge.source].out_edges
        assert edge in graph.nodes[edge.target].in_edges


def test_default_partitioner_is_rebalance_when_parallelism_changes() -> None:
    env = _env().set_parallelism(3)
    env.from_collection([1]).map(str).set_parallelism(3).map(len).set_parallelism(2).print()
    graph = env.get_stream_graph()
    assert [(e[0], e[1], e[2]) for e in _edges(graph)] == [
        ("Source: Collection Source", "Map", "REBALANCE"),
        ("Map", "Map", "REBALANCE"),
        ("Map", "Sink: Print to Std. Out", "REBALANCE"),  # 2 -> the default 3
    ]
    assert isinstance(graph.edges[0].partitioner, RebalancePartitioner)


def test_default_parallelism_and_max_parallelism_come_from_the_environment() -> None:
    env = _env().set_parallelism(4).set_max_parallelism(64)
    env.from_collection([1]).map(str).print()
    graph = env.get_stream_graph()
    source, mapper = _node(graph, "Source: Collection Source"), _node(graph, "Map")
    assert (source.parallelism, source.max_parallelism) == (1, 1)
    assert (mapper.parallelism, mapper.max_parallelism) == (4, 64)


def test_explicit_forward_with_different_parallelism_names_both_operators() -> None:
    env = _env()
    up = env.from_collection([1]).map(str).name("Up")
    up.forward().map(len).name("Down").set_parallelism(2).print()
    with pytest.raises(GraphBuildError) as info:
        env.get_stream_graph()
    message = str(info.value)
    assert "'Up' (parallelism 1)" in message
    assert "'Down' (parallelism 2)" in message
    assert "forward" in message


def test_parallelism_above_max_parallelism_raises_naming_the_operator() -> None:
    env = _env().set_max_parallelism(2)
    env.from_collection([1]).map(str).name("Wide").set_parallelism(4).print()
    with pytest.raises(GraphBuildError, match=r"'Wide': parallelism 4 .* max parallelism 2"):
        env.get_stream_graph()


def test_parallelism_above_max_parallelism_on_a_transformation() -> None:
    big = _op("Big", _source(), parallelism=10)
    big.max_parallelism = 8
    with pytest.raises(GraphBuildError, match=r"'Big'.*10.*8"):
        _build([big])


def test_default_parallelism_above_an_operators_max_parallelism_is_refused() -> None:
    small = _op("Small", _source(parallelism=1))
    small.max_parallelism = 2
    with pytest.raises(GraphBuildError, match=r"'Small'.*parallelism 8.*max parallelism 2"):
        _build([small], parallelism=8)


def test_duplicate_uid_names_both_operators() -> None:
    env = _env()
    ds = env.from_collection([1])
    ds.map(str).name("First").uid("same").print()
    ds.map(len).name("Second").uid("same").print()
    with pytest.raises(GraphBuildError, match=r"'same'.*'First'.*'Second'"):
        env.get_stream_graph()


def test_explicit_uids_are_kept_and_generated_ones_depend_only_on_the_topology() -> None:
    def build(extra_branch: bool) -> StreamGraph:
        env = _env()
        mapped = env.from_collection([1]).uid("src").map(str)
        mapped.filter(bool).print()
        mapped.filter(bool).print()  # the same operator twice: the uids must still differ
        if extra_branch:
            mapped.map(len).name("Extra").print()
        return env.get_stream_graph()

    first, second, extended = build(False), build(False), build(True)
    assert _node(first, "Source: Collection Source").uid == "src"
    # Built twice in one process (node ids differ), the generated uids are the same.
    assert sorted(n.uid for n in first.nodes.values()) == sorted(
        n.uid for n in second.nodes.values()
    )
    assert len({n.uid for n in first.nodes.values()}) == len(first.nodes)
    # A new branch does not change the uids of the operators that were there before.
    assert {n.uid for n in first.nodes.values()} <= {n.uid for n in extended.nodes.values()}
    assert _node(first, "Map").uid.startswith("Map-")


def test_a_generated_uid_gives_its_operators_name_and_a_users_uid_none() -> None:
    env = _env()
    env.from_collection([1]).uid("src").map(str).name("to-text").print()
    graph = env.get_stream_graph()
    assert generated_uid_name(_node(graph, "to-text").uid) == "to-text"
    assert generated_uid_name(_node(graph, "Source: Collection Source").uid) is None
    for users in ("totals", "totals-v2", "a-0123456789abcdeg", "-0123456789abcdef"):
        assert generated_uid_name(users) is None


def test_no_sink_raises() -> None:
    env = _env()
    env.from_collection([1]).map(str)
    with pytest.raises(GraphBuildError, match="no operators"):
        env.get_stream_graph()


def test_only_transformations_reachable_from_sinks_become_nodes() -> None:
    env = _env()
    ds = env.from_collection([1])
    ds.map(str).name("Dangling")
    ds.print()
    graph = env.get_stream_graph()
    assert sorted(n.name for n in graph.nodes.values()) == [
        "Sink: Print to Std. Out", "Source: Collection Source"
    ]  # fmt: skip


def test_key_by_makes_a_hash_edge_with_the_target_max_parallelism() -> None:
    env = _env().set_parallelism(2)
    keyed = env.from_collection([(1, "a")]).key_by(lambda r: r[0])
    keyed.reduce(lambda a, b: a).name("Reduce").set_max_parallelism(16).print()
    graph = env.get_stream_graph()
    (edge,) = _node(graph, "Reduce").in_edges
    assert isinstance(edge.partitioner, KeyGroupStreamPartitioner)
    assert edge.partitioner.max_parallelism == 16
    template = keyed._transformation
    assert isinstance(template, PartitionTransformation)
    assert isinstance(template.partitioner, KeyGroupStreamPartitioner)
    assert template.partitioner.max_parallelism == 128, "the template is not changed"
    assert template.partitioner is not edge.partitioner


def test_the_last_partitioning_applied_decides_the_edge() -> None:
    env = _env().set_parallelism(2)
    ds = env.from_collection([(1, "a")])
    ds.rebalance().key_by(lambda r: r[0]).reduce(lambda a, b: a).name("Keyed").print()
    ds.shuffle().rebalance().map(str).name("Spread").print()  # a KeyedStream refuses rebalance()
    ds.shuffle().broadcast().map(str).name("Everywhere").print()
    graph = env.get_stream_graph()
    kinds = {name: [e.partitioner.kind for e in _node(graph, name).in_edges] for name in
             ("Keyed", "Spread", "Everywhere")}  # fmt: skip
    assert kinds == {"Keyed": ["HASH"], "Spread": ["REBALANCE"], "Everywhere": ["BROADCAST"]}


def test_explicit_partitioners_are_copied_per_edge() -> None:
    env = _env().set_parallelism(2)
    spread = env.from_collection([1]).rebalance()
    spread.map(str).print()
    spread.map(len).print()
    graph = env.get_stream_graph()
    rebalances = [e.partitioner for e in graph.edges if e.partitioner.kind == "REBALANCE"]
    assert len(rebalances) == 2
    assert rebalances[0] is not rebalances[1]


def test_union_makes_one_edge_per_input_into_the_same_node() -> None:
    env = _env()
    a = env.from_collection([1]).name("A")
    b = env.from_collection([2]).name("B")
    c = env.from_collection([3]).name("C")
    a.union(b.map(str).name("BM"), c.rebalance()).map(str).name("M").print()
    graph = env.get_stream_graph()
    into_m = sorted((s, p, tag, i) for s, t, p, tag, i in _edges(graph) if t == "M")
    assert into_m == [
        ("A", "FORWARD", None, 1),
        ("BM", "FORWARD", None, 1),
        ("C", "REBALANCE", None, 1),
    ]
    assert not any(isinstance(n.transformation, UnionTransformation) for n in graph.nodes.values())


def test_side_output_edges_carry_the_tag() -> None:
    env = _env()
    main = env.from_collection([1, -1]).process(SplitLate()).name("Split")
    main.print().name("MainSink")
    main.get_side_output(LATE).map(abs).name("LateMap").print()
    graph = env.get_stream_graph()
    out_of_split = sorted((t, p, tag) for s, t, p, tag, _ in _edges(graph) if s == "Split")
    assert out_of_split == [("LateMap", "FORWARD", "late"), ("MainSink", "FORWARD", None)]
    assert not any(
        isinstance(n.transformation, SideOutputTransformation) for n in graph.nodes.values()
    )


def test_partitioning_a_side_output_keeps_the_tag() -> None:
    env = _env().set_parallelism(2)
    main = env.from_collection([1]).process(SplitLate()).name("Split").set_parallelism(2)
    main.get_side_output(LATE).rebalance().map(abs).name("LateMap").print()
    graph = env.get_stream_graph()
    (edge,) = _node(graph, "LateMap").in_edges
    assert (edge.partitioner.kind, edge.tag_id) == ("REBALANCE", "late")


def test_two_input_edges_have_target_input_one_and_two() -> None:
    env = _env()
    left = env.from_collection([1]).name("Left")
    right = env.from_collection(["x"]).name("Right")
    left.connect(right).map(Both()).name("Co").print()
    graph = env.get_stream_graph()
    co = _node(graph, "Co")
    assert co.is_two_input
    assert sorted((graph.nodes[e.source].name, e.target_input) for e in co.in_edges) == [
        ("Left", 1), ("Right", 2)
    ]  # fmt: skip


def test_two_input_transformation_with_union_on_one_side() -> None:
    a, b, c = _source("A"), _source("B"), _source("C")
    union = UnionTransformation(name="U", union_inputs=[a, b])
    co = TwoInputTransformation(name="Co", input1=union, input2=c)
    graph = _build([co])
    assert sorted((s, i) for s, t, _, _, i in _edges(graph) if t == "Co") == [
        ("A", 1), ("B", 1), ("C", 2)
    ]  # fmt: skip


def test_buffer_timeout_default_and_override() -> None:
    env = _env().set_buffer_timeout(7)
    env.from_collection([1]).map(str).set_buffer_timeout(0).print()
    graph = env.get_stream_graph()
    assert _node(graph, "Map").buffer_timeout == 0
    assert _node(graph, "Source: Collection Source").buffer_timeout == 7


def test_chaining_switch_and_strategies_are_recorded() -> None:
    env = _env().disable_operator_chaining()
    env.from_collection([1]).map(str).start_new_chain().map(len).disable_chaining().print()
    graph = env.get_stream_graph()
    assert not graph.chaining_enabled
    assert [n.chaining.value for n in graph.nodes.values()] == ["always", "head", "never", "always"]


def test_a_diamond_is_built_inputs_first() -> None:
    src = _source("S")
    left, right = _op("L", src), _op("R", src)
    join = TwoInputTransformation(name="J", input1=left, input2=right)
    graph = _build([join])
    order = [n.name for n in graph.nodes.values()]
    assert order.index("S") < order.index("L") < order.index("J")
    assert order.index("R") < order.index("J")
    assert len(_node(graph, "S").out_edges) == 2


def test_forward_partitioner_given_explicitly_on_equal_parallelism_is_kept() -> None:
    src = _source("S", parallelism=3)
    part = PartitionTransformation(name="Forward", input=src, partitioner=ForwardPartitioner())
    graph = _build([_op("M", part, parallelism=3)])
    assert _edges(graph) == [("S", "M", "FORWARD", None, 1)]


def test_describe_is_json() -> None:
    env = _env()
    env.from_collection([1]).map(str).print()
    plan = describe(env.get_stream_graph())
    assert plan["job"] == "undertow job"
    assert [n["name"] for n in plan["nodes"]] == [
        "Source: Collection Source", "Map", "Sink: Print to Std. Out"
    ]  # fmt: skip
    assert [e["partitioner"] for e in plan["edges"]] == ["FORWARD", "FORWARD"]
    assert plan["edges"][0]["side_output"] is None


@pytest.mark.parametrize("parallelism", [None, 2])
def test_a_collect_sink_with_more_than_one_subtask_is_refused_naming_it(
    parallelism: int | None,
) -> None:
    """The driver grants a collect sink's credit to its subtask 0: another subtask would get
    none and block its task for good. Parallelism 1 (what execute_and_collect sets) builds;
    any other, set or by default, is refused naming the operator and why."""

    def sink(p: int | None) -> OneInputTransformation:
        return OneInputTransformation(name="Sink: Collect", input=_source(parallelism=2),
                                      operator=CollectSinkOperator("c"), parallelism=p)  # fmt: skip

    assert _node(_build([sink(1)], parallelism=2), "Sink: Collect").parallelism == 1
    with pytest.raises(GraphBuildError) as refused:
        _build([sink(parallelism)], parallelism=2)
    assert str(refused.value).startswith("operator 'Sink: Collect' (uid ")
    assert (
        "has parallelism 2, but it runs as one subtask: the driver grants a collect sink's "
        "credit to its subtask 0 only; leave its parallelism at 1"
    ) in str(refused.value)
