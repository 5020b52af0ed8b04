"""A stream's and a sink's ``slot_sharing_group`` take a group or its name alike
(``group_name``), as PyFlink's do; the stream graph records the name."""

from __future__ import annotations

from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.slot_sharing_group import SlotSharingGroup, group_name


def test_a_group_and_its_name_are_recorded_alike(env: StreamExecutionEnvironment) -> None:
    group = SlotSharingGroup.builder("heavy").build()
    assert group_name(group) == group_name("heavy") == "heavy"
    stream = env.from_collection([1, 2]).name("source").slot_sharing_group(group)
    stream.map(str).name("map").slot_sharing_group("light").print().name("sink").slot_sharing_group(
        SlotSharingGroup.builder("sinks").build()
    )
    groups = {n.name: n.slot_sharing_group for n in env.get_stream_graph().nodes.values()}
    assert (groups["source"], groups["map"], groups["sink"]) == ("heavy", "light", "sinks")
