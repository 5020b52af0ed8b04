"""The execution plan as Flink writes it (``env.get_execution_plan()``, Flink's JSONGenerator).

``{"nodes": [{"id", "type", "pact", "contents", "parallelism", "predecessors": [{"id",
"ship_strategy", "side"}]}]}``: one node per stream-graph operator, ``pact`` ``Data Source``,
``Operator`` or ``Data Sink``, ``ship_strategy`` the partitioner's Flink name (``FORWARD``,
``HASH``, ``REBALANCE``, ``RESCALE``, ``SHUFFLE``, ``BROADCAST``, ``GLOBAL``, ``CUSTOM``) and
``side`` always ``"second"``, as Flink writes it. Nodes come sources first, each after all of
its inputs (ties by id). The text is laid out as Jackson's pretty printer does, so a plan reads
like Flink's; Flink's visualizer (https://flink.apache.org/visualizer/) draws it.

Differences from PyFlink's plan: PyFlink fuses consecutive Python functions into one node and
adds a key-extracting map before ``key_by``; undertow keeps one node per operator and keys on
the edge. Pure function of the stream graph; no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from undertow.graph.stream_graph import StreamGraph, StreamNode

__all__ = ["execution_plan", "plan_json"]


def _pact(node: StreamNode) -> str:
    if node.is_source:
        return "Data Source"
    return "Data Sink" if not node.out_edges else "Operator"


def _order(graph: StreamGraph) -> list[StreamNode]:
    pending = {n.id: len(n.in_edges) for n in graph.nodes.values()}
    ready = sorted(i for i, count in pending.items() if count == 0)
    ordered: list[StreamNode] = []
    while ready:
        node = graph.nodes[ready.pop(0)]
        ordered.append(node)
        for edge in node.out_edges:
            pending[edge.target] -= 1
            if pending[edge.target] == 0:
                ready.append(edge.target)
                ready.sort()
    return ordered


def execution_plan(graph: StreamGraph) -> dict[str, Any]:
    """Flink's plan of ``graph`` as a dict (see the module docstring)."""
    nodes = []
    for node in _order(graph):
        entry: dict[str, Any] = {
            "id": node.id, "type": node.name, "pact": _pact(node),
            "contents": node.description or node.name,
            "parallelism": node.parallelism,
        }  # fmt: skip
        if node.in_edges:
            entry["predecessors"] = [
                {"id": e.source, "ship_strategy": e.partitioner.kind, "side": "second"}
                for e in sorted(node.in_edges, key=lambda e: (e.target_input, e.id))
            ]
        nodes.append(entry)
    return {"nodes": nodes}


def plan_json(graph: StreamGraph) -> str:
    """:func:`execution_plan` as text laid out like Flink's (Jackson's pretty printer)."""
    return _jackson(execution_plan(graph), 0)


def _jackson(value: Any, indent: int) -> str:
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = " " * (indent + 2)
        fields = ",\n".join(
            f"{inner}{json.dumps(k)} : {_jackson(v, indent + 2)}" for k, v in value.items()
        )
        return "{\n" + fields + "\n" + " " * indent + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_jackson(v, indent) for v in value) + " ]"
    return json.dumps(value)
