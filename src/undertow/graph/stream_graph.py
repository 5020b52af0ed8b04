"""Transformations -> stream graph: one node per physical operator, edges with partitioners.

Virtual transformations (partition, union, side output) are folded into edges here. The stream
graph is where misuse that spans operators is found and reported with operator names:
forward edges between different parallelisms, parallelism above max parallelism, custom
partitioners under ``key_by`` and the like.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from undertow.connectors.transactional_ids import ClaimedBy, ClaimsTransactionalIds, conflicts
from undertow.core.errors import GraphBuildError
from undertow.graph.partitioners import (
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    StreamPartitioner,
)
from undertow.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
)


@dataclass(eq=False)
class StreamEdge:
    id: int
    source: int
    target: int
    partitioner: StreamPartitioner
    #: Side output this edge reads from the source operator (None = main output).
    tag_id: str | None
    #: 1 or 2 for the inputs of a two-input operator, 1 otherwise.
    target_input: int


@dataclass(eq=False)
class StreamNode:
    id: int
    name: str
    uid: str
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    chaining: ChainingStrategy
    buffer_timeout: int
    transformation: Transformation
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)
    #: ``set_description``'s text, else the name.
    description: str = ""

    @property
    def is_source(self) -> bool:
        return isinstance(self.transformation, SourceTransformation)

    @property
    def is_two_input(self) -> bool:
        return isinstance(self.transformation, TwoInputTransformation)


@dataclass
class StreamGraph:
    job_name: str
    nodes: dict[int, StreamNode]
    edges: list[StreamEdge]
    chaining_enabled: bool

    def sources(self) -> list[StreamNode]:
        return [n for n in self.nodes.values() if n.is_source]


def _reachable(sinks: list[Transformation]) -> list[Transformation]:
    """All transformations the sinks depend on, inputs before their consumers."""
    order: list[Transformation] = []
    seen: set[int] = set()

    def visit(t: Transformation) -> None:
        if t.id in seen:
            return
        seen.add(t.id)
        for i in t.inputs:
            visit(i)
        order.append(t)

    for t in sinks:
        visit(t)
    return order


def build_stream_graph(
    job_name: str,
    transformations: list[Transformation],
    *,
    default_parallelism: int,
    default_max_parallelism: int,
    default_buffer_timeout: int,
    chaining_enabled: bool = True,
) -> StreamGraph:
    if not transformations:
        raise GraphBuildError(
            "no operators defined in the streaming topology; add a sink (print, sink_to, "
            "add_sink, execute_and_collect) before calling execute"
        )
    nodes: dict[int, StreamNode] = {}
    edges: list[StreamEdge] = []
    for t in _reachable(transformations):
        if isinstance(t, (PartitionTransformation, UnionTransformation, SideOutputTransformation)):
            continue
        max_par = t.max_parallelism or default_max_parallelism
        par = t.parallelism or default_parallelism
        if par > max_par:
            raise GraphBuildError(
                f"operator '{t.name}': parallelism {par} is larger than its max parallelism "
                f"{max_par} (pipeline.max-parallelism); raise the max parallelism or lower the "
                "parallelism"
            )
        nodes[t.id] = StreamNode(
            id=t.id,
            name=t.name,
            uid=t.uid or "",  # generated below, once the edges are known
            parallelism=par,
            max_parallelism=max_par,
            slot_sharing_group=t.slot_sharing_group,
            chaining=t.chaining,
            buffer_timeout=default_buffer_timeout if t.buffer_timeout is None else t.buffer_timeout,
            transformation=t,
            description=t.description or t.name,
        )
    _check_uids(nodes)
    for node in nodes.values():
        t = node.transformation
        inputs: list[tuple[Transformation | None, int]]
        if isinstance(t, OneInputTransformation) and t.input is not None:
            inputs = [(t.input, 1)]
        elif isinstance(t, TwoInputTransformation):
            inputs = [(t.input1, 1), (t.input2, 2)]
        else:
            inputs = []
        for upstream, number in inputs:
            assert upstream is not None
            for source_id, partitioner, tag in _resolve(upstream, None, None):
                edge = _make_edge(len(edges), nodes[source_id], node, partitioner, tag, number)
                edges.append(edge)
                nodes[source_id].out_edges.append(edge)
                node.in_edges.append(edge)
    _generate_uids(nodes)
    _check_transactional_ids(nodes)
    _check_one_subtask(nodes)
    return StreamGraph(job_name, nodes, edges, chaining_enabled)


@runtime_checkable
class RunsAsOneSubtask(Protocol):
    """An operator that works only with parallelism 1 (the collect sink: the driver grants
    its credit to subtask 0). :meth:`one_subtask_reason` says why, for the refusal."""

    def one_subtask_reason(self) -> str: ...


def _check_one_subtask(nodes: dict[int, StreamNode]) -> None:
    """Refuse an operator that runs as one subtask (:class:`RunsAsOneSubtask`) with another
    parallelism, naming it, its parallelism and why."""
    for node in sorted(nodes.values(), key=lambda n: n.id):
        t = node.transformation
        if not isinstance(t, OneInputTransformation) or node.parallelism == 1:
            continue
        op = t.operator
        if isinstance(op, RunsAsOneSubtask):
            raise GraphBuildError(
                f"operator '{node.name}' (uid {node.uid!r}) has parallelism {node.parallelism}, "
                f"but it runs as one subtask: {op.one_subtask_reason()}; leave its parallelism "
                "at 1"
            )


def _check_transactional_ids(nodes: dict[int, StreamNode]) -> None:
    """Refuse two sinks that claim the same transactional ids (they would fence each other
    at every commit: :mod:`undertow.connectors.transactional_ids`)."""
    claims = []
    for node in sorted(nodes.values(), key=lambda n: n.id):
        t = node.transformation
        if isinstance(t, OneInputTransformation) and isinstance(t.operator, ClaimsTransactionalIds):
            claim = t.operator.transactional_id_claim()
            if claim is not None:
                claims.append(ClaimedBy(node.name, node.uid, claim))
    found = conflicts(claims)
    if found:
        raise GraphBuildError("; ".join(found))


def _generate_uids(nodes: dict[int, StreamNode]) -> None:
    """Give every operator without a user uid one derived from the topology (Flink's
    StreamGraphHasher idea): a hash of its name, its inputs' uids (with input number and side
    output) and how many operators before it had the same of both. So the same program builds
    the same uids in every process and every build, and state restores into a new job; adding
    a branch after an operator leaves that operator's uid alone. Visits nodes in topological
    order, ties broken by creation order."""
    pending = {n.id: len(n.in_edges) for n in nodes.values()}
    ready = sorted(i for i, count in pending.items() if count == 0)
    seen: dict[tuple[Any, ...], int] = {}
    while ready:
        node = nodes[ready.pop(0)]
        if not node.uid:
            inputs = sorted((nodes[e.source].uid, e.target_input, e.tag_id or "")
                            for e in node.in_edges)  # fmt: skip
            signature = (node.name, tuple(inputs))
            ordinal = seen.get(signature, 0)
            seen[signature] = ordinal + 1
            digest = hashlib.sha256(repr((signature, ordinal)).encode()).hexdigest()[:16]
            node.uid = f"{node.name}-{digest}"
        for edge in node.out_edges:
            pending[edge.target] -= 1
            if pending[edge.target] == 0:
                ready.append(edge.target)
                ready.sort()
    assert all(n.uid for n in nodes.values()), "the stream graph has a cycle"


def generated_uid_name(uid: str) -> str | None:
    """The operator name in a uid that :func:`_generate_uids` made (``NAME-<16 hex digits>``),
    or None for a uid of another shape (one given with ``uid()``). A user's uid of exactly that
    shape is taken for a generated one: only messages use this."""
    name, dash, digest = uid.rpartition("-")
    if name and dash and len(digest) == 16 and set(digest) <= set("0123456789abcdef"):
        return name
    return None


def _check_uids(nodes: dict[int, StreamNode]) -> None:
    seen: dict[str, str] = {}
    for node in nodes.values():
        if node.transformation.uid is None:
            continue
        if node.uid in seen:
            raise GraphBuildError(
                f"uid {node.uid!r} is used by both '{seen[node.uid]}' and '{node.name}'; "
                "uids must be unique within a job"
            )
        seen[node.uid] = node.name


def _resolve(
    t: Transformation, partitioner: StreamPartitioner | None, tag: str | None
) -> list[tuple[int, StreamPartitioner | None, str | None]]:
    """Follow virtual transformations down to physical ones.

    Of stacked partitionings (``rebalance().key_by(...)``) the last one applied, the first met
    walking down from the consumer, decides the edge, as in Flink.
    """
    if isinstance(t, PartitionTransformation):
        assert t.input is not None
        return _resolve(t.input, partitioner if partitioner is not None else t.partitioner, tag)
    if isinstance(t, UnionTransformation):
        return [r for i in t.union_inputs for r in _resolve(i, partitioner, tag)]
    if isinstance(t, SideOutputTransformation):
        assert t.input is not None
        return _resolve(t.input, partitioner, t.tag_id)
    return [(t.id, partitioner, tag)]


def _make_edge(
    edge_id: int,
    source: StreamNode,
    target: StreamNode,
    partitioner: StreamPartitioner | None,
    tag: str | None,
    number: int,
) -> StreamEdge:
    if partitioner is None:
        if source.parallelism == target.parallelism:
            partitioner = ForwardPartitioner()
        else:
            partitioner = RebalancePartitioner()
    else:
        partitioner = partitioner.copy()
    if isinstance(partitioner, ForwardPartitioner) and source.parallelism != target.parallelism:
        raise GraphBuildError(
            f"forward partitioning does not allow a change of parallelism between "
            f"'{source.name}' (parallelism {source.parallelism}) and '{target.name}' "
            f"(parallelism {target.parallelism}); use rebalance() or set equal parallelism"
        )
    if isinstance(partitioner, KeyGroupStreamPartitioner):
        partitioner.max_parallelism = target.max_parallelism
    return StreamEdge(edge_id, source.id, target.id, partitioner, tag, number)


def describe(graph: StreamGraph) -> dict[str, Any]:
    """A JSON-friendly plan (for ``undertow info`` and tests)."""
    return {
        "job": graph.job_name,
        "nodes": [
            {"id": n.id, "name": n.name, "parallelism": n.parallelism, "uid": n.uid}
            for n in graph.nodes.values()
        ],
        "edges": [
            {"source": e.source, "target": e.target, "partitioner": e.partitioner.kind,
             "side_output": e.tag_id}
            for e in graph.edges
        ],
    }  # fmt: skip
