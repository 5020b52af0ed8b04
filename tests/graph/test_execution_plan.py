"""``env.get_execution_plan()`` is Flink's JSON, laid out as PyFlink 2.3 prints it."""

from __future__ import annotations

import json

from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.execution_plan import execution_plan, plan_json

#: PyFlink 2.3 prints this for the same job, except that its node 2 is "Map, Map" with id 5
#: (PyFlink's print() adds a map of its own and fuses the two), so the sink points at 5.
EXPECTED = """{
  "nodes" : [ {
    "id" : 1,
    "type" : "Source: Collection Source",
    "pact" : "Data Source",
    "contents" : "Source: Collection Source",
    "parallelism" : 1
  }, {
    "id" : 2,
    "type" : "Map",
    "pact" : "Operator",
    "contents" : "Map",
    "parallelism" : 1,
    "predecessors" : [ {
      "id" : 1,
      "ship_strategy" : "FORWARD",
      "side" : "second"
    } ]
  }, {
    "id" : 3,
    "type" : "Sink: Print to Std. Out",
    "pact" : "Data Sink",
    "contents" : "Sink: Print to Std. Out",
    "parallelism" : 1,
    "predecessors" : [ {
      "id" : 2,
      "ship_strategy" : "FORWARD",
      "side" : "second"
    } ]
  } ]
}"""


def _env(parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment()
    env.set_parallelism(parallelism)
    return env


def test_plan_text_is_flinks() -> None:
    env = _env(1)
    env.from_collection([1, 2]).map(lambda x: x + 1).print()
    plan = env.get_execution_plan()
    ids = [n["id"] for n in json.loads(plan)["nodes"]]
    renumbered = plan
    for new, old in enumerate(ids, start=1):  # transformation ids are global counters
        renumbered = renumbered.replace(f'"id" : {old},', f'"id" : {new},')
    assert renumbered == EXPECTED


def test_ship_strategies_and_node_order() -> None:
    env = _env(2)
    source = env.from_collection([(1, "a"), (2, "b")]).name("numbers")
    keyed = source.key_by(lambda v: v[0]).map(lambda v: v).name("keyed")
    spread = keyed.rebalance().map(lambda v: v).name("spread")
    spread.broadcast().map(lambda v: v).name("everywhere").set_parallelism(3).print()
    nodes = json.loads(env.get_execution_plan())["nodes"]
    names = [n["contents"] for n in nodes]
    assert names == ["numbers", "keyed", "spread", "everywhere", "Sink: Print to Std. Out"]
    strategies = [[p["ship_strategy"] for p in n.get("predecessors", [])] for n in nodes]
    assert strategies == [[], ["HASH"], ["REBALANCE"], ["BROADCAST"], ["REBALANCE"]]
    assert [n["pact"] for n in nodes] == [
        "Data Source", "Operator", "Operator", "Operator", "Data Sink"
    ]  # fmt: skip
    assert [n["parallelism"] for n in nodes] == [1, 2, 2, 3, 2]
    assert "predecessors" not in nodes[0]
    assert all(p["side"] == "second" for n in nodes for p in n.get("predecessors", []))


def test_two_inputs_list_both_predecessors() -> None:
    env = _env(1)
    left = env.from_collection([1]).name("left")
    right = env.from_collection([2]).name("right")
    left.union(right).map(lambda v: v).name("both").print()
    nodes = {n["contents"]: n for n in json.loads(env.get_execution_plan())["nodes"]}
    sources = {nodes["left"]["id"], nodes["right"]["id"]}
    assert {p["id"] for p in nodes["both"]["predecessors"]} == sources


def test_set_description_is_the_plans_contents() -> None:
    # PyFlink 2.3's plan for the same calls: contents 'my description', type the name.
    env = _env(2)
    ds = env.from_collection([1, 2, 3])
    ds.map(lambda x: x).name("described").set_description("my description").print()
    nodes = {n["type"]: n for n in json.loads(env.get_execution_plan())["nodes"]}
    assert nodes["described"]["contents"] == "my description"
    assert nodes["Source: Collection Source"]["contents"] == "Source: Collection Source"


def test_the_text_is_the_dict_laid_out_as_jackson_does() -> None:
    env = StreamExecutionEnvironment()
    env.from_collection([1, 2]).map(lambda x: x).print()
    graph = env.get_stream_graph()
    text = plan_json(graph)
    assert json.loads(text) == execution_plan(graph) and text == env.get_execution_plan()
    assert '"nodes" : [ {' in text  # Jackson's spacing, not json.dumps'
