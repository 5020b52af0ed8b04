"""Stream graph -> job graph: operators chained into vertices, with pickled operator templates.

Chaining rule (Flink's): an edge is chained when the consumer has exactly this one input, the
partitioner is forward, both sides have the same parallelism and slot sharing group, the
consumer allows chaining to its predecessor (``ALWAYS``) and the producer allows chaining to
its successors (not ``NEVER``), and chaining is enabled.

Every user object (operator, source, key selector, partitioner) is pickled here with
cloudpickle, once, so a function that cannot be shipped fails at graph-building time with the
operator's name, not in a worker. Each subtask unpickles its own copy.
"""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from typing import Any

from undertow.core.errors import SerializationError
from undertow.core.pickling import dumps_functions
from undertow.graph.partitioners import ForwardPartitioner, StreamPartitioner
from undertow.graph.stream_graph import StreamEdge, StreamGraph, StreamNode
from undertow.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    SourceTransformation,
    TwoInputTransformation,
)


@dataclass(frozen=True)
class JobEdge:
    id: int
    source_vertex: int
    source_node: int
    target_vertex: int
    target_node: int
    partitioner: bytes
    partitioner_kind: str
    supports_unaligned: bool
    tag_id: str | None
    target_input: int

    def new_partitioner(self) -> StreamPartitioner:
        p = pickle.loads(self.partitioner)
        assert isinstance(p, StreamPartitioner)
        return p


@dataclass(frozen=True)
class OperatorSpec:
    """One operator of a chain. ``payload`` unpickles to the operator (or source) template."""

    node_id: int
    name: str
    uid: str
    kind: str  # "source" | "one-input" | "two-input"
    payload: bytes
    #: Chained successors: (node id, side output tag or None).
    chained_outputs: tuple[tuple[int, str | None], ...]
    #: Job edges leaving the chain from this operator.
    network_outputs: tuple[int, ...]

    def instantiate(self) -> dict[str, Any]:
        """A fresh copy of what the operator needs: operator/source, key selectors, strategy."""
        obj = pickle.loads(self.payload)
        assert isinstance(obj, dict)
        return obj


@dataclass(frozen=True)
class JobVertex:
    id: int
    name: str
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    buffer_timeout: int
    operators: tuple[OperatorSpec, ...]
    inputs: tuple[JobEdge, ...]
    outputs: tuple[JobEdge, ...]
    #: The chain's operator descriptions (``set_description``, else names), as ``name`` joins.
    description: str = ""

    @property
    def is_source(self) -> bool:
        return self.operators[0].kind == "source"


@dataclass(frozen=True)
class JobGraph:
    job_name: str
    vertices: tuple[JobVertex, ...]
    edges: tuple[JobEdge, ...]

    def vertex(self, vertex_id: int) -> JobVertex:
        for v in self.vertices:
            if v.id == vertex_id:
                return v
        raise KeyError(vertex_id)

    @property
    def total_subtasks(self) -> int:
        return sum(v.parallelism for v in self.vertices)


def _is_chainable(graph: StreamGraph, edge: StreamEdge) -> bool:
    up, down = graph.nodes[edge.source], graph.nodes[edge.target]
    return (
        graph.chaining_enabled
        and len(down.in_edges) == 1
        and isinstance(edge.partitioner, ForwardPartitioner)
        and up.parallelism == down.parallelism
        and up.slot_sharing_group == down.slot_sharing_group
        and down.chaining is ChainingStrategy.ALWAYS
        and up.chaining is not ChainingStrategy.NEVER
    )


def _dumps(obj: Any, what: str) -> bytes:
    try:
        return dumps_functions(obj)
    except Exception as err:
        raise SerializationError(
            f"{what} cannot be serialized to ship it to the workers: {err}. Functions must be "
            "picklable (cloudpickle): avoid capturing locks, sockets, open files or generators; "
            "create such resources in the function's open() instead"
        ) from err


def _payload(node: StreamNode) -> tuple[str, bytes]:
    t = node.transformation
    what = f"operator '{node.name}'"
    if isinstance(t, SourceTransformation):
        return "source", _dumps(
            {"source": t.source, "watermark_strategy": t.watermark_strategy}, what
        )
    if isinstance(t, TwoInputTransformation):
        return "two-input", _dumps(
            {"operator": t.operator, "key_selector1": t.key_selector1,
             "key_selector2": t.key_selector2}, what,
        )  # fmt: skip
    assert isinstance(t, OneInputTransformation)
    return "one-input", _dumps({"operator": t.operator, "key_selector": t.key_selector}, what)


def build_job_graph(graph: StreamGraph) -> JobGraph:
    # 1. find chain heads and assign every node to a chain, in topological order
    order = list(graph.nodes)  # insertion order is topological (inputs first)
    chain_of: dict[int, int] = {}
    chains: dict[int, list[int]] = {}
    for node_id in order:
        node = graph.nodes[node_id]
        if len(node.in_edges) == 1 and _is_chainable(graph, node.in_edges[0]):
            head = chain_of[node.in_edges[0].source]
        else:
            head = node_id
            chains[head] = []
        chain_of[node_id] = head
        chains[head].append(node_id)
    vertex_of = {head: index for index, head in enumerate(chains)}

    # 2. job edges for every non-chained stream edge
    job_edges: list[JobEdge] = []
    # keyed by stream edge: two stream edges may join the same pair of operators with the same
    # tag and input (``ds.union(ds)``), and each needs its own job edge
    job_edge_of: dict[int, JobEdge] = {}
    for edge in graph.edges:
        if chain_of[edge.source] == chain_of[edge.target] and _is_chainable(graph, edge):
            continue
        up, down = graph.nodes[edge.source], graph.nodes[edge.target]
        job_edge = JobEdge(
            id=len(job_edges),
            source_vertex=vertex_of[chain_of[edge.source]],
            source_node=edge.source,
            target_vertex=vertex_of[chain_of[edge.target]],
            target_node=edge.target,
            partitioner=_dumps(edge.partitioner, f"partitioner between '{up.name}' and "
                               f"'{down.name}'"),
            partitioner_kind=edge.partitioner.kind,
            supports_unaligned=edge.partitioner.supports_unaligned,
            tag_id=edge.tag_id,
            target_input=edge.target_input,
        )  # fmt: skip
        job_edge_of[edge.id] = job_edge
        job_edges.append(job_edge)

    # Flink's StreamGraphGenerator: if any input of a vertex cannot carry unaligned channel
    # state (forward, rescale, broadcast), none of its inputs does, so it aligns all of them.
    aligned_only = {e.target_vertex for e in job_edges if not e.supports_unaligned}
    job_edges = [
        dataclasses.replace(e, supports_unaligned=False) if e.target_vertex in aligned_only else e
        for e in job_edges
    ]

    # 3. vertices
    vertices: list[JobVertex] = []
    for head, members in chains.items():
        specs = []
        for node_id in members:
            node = graph.nodes[node_id]
            kind, payload = _payload(node)
            chained: list[tuple[int, str | None]] = []
            network: list[int] = []
            for e in node.out_edges:
                if e.id in job_edge_of:
                    network.append(job_edge_of[e.id].id)
                else:
                    chained.append((e.target, e.tag_id))
            specs.append(
                OperatorSpec(node_id, node.name, node.uid, kind, payload, tuple(chained),
                             tuple(network))
            )  # fmt: skip
        head_node = graph.nodes[head]
        vid = vertex_of[head]
        vertices.append(
            JobVertex(
                id=vid,
                name=" -> ".join(graph.nodes[m].name for m in members),
                parallelism=head_node.parallelism,
                max_parallelism=head_node.max_parallelism,
                slot_sharing_group=head_node.slot_sharing_group,
                buffer_timeout=min(graph.nodes[m].buffer_timeout for m in members),
                operators=tuple(specs),
                inputs=tuple(e for e in job_edges if e.target_vertex == vid),
                outputs=tuple(e for e in job_edges if e.source_vertex == vid),
                description=" -> ".join(
                    graph.nodes[m].description or graph.nodes[m].name for m in members
                ),
            )
        )
    return JobGraph(graph.job_name, tuple(vertices), tuple(job_edges))
