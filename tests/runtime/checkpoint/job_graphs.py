"""The job graph the coordinator's tests checkpoint: two unbounded source subtasks -> keyed
map (2) -> print, 4 subtasks in 2 vertices (the sink chained). Built fresh per call (a job
graph is not shared between coordinators); nothing runs it."""

from __future__ import annotations

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.graph.job_graph import JobGraph, build_job_graph


def two_sources_keyed_map(name: str) -> JobGraph:
    """The graph, named ``name``."""
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.set_parallelism(2)
    env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "numbers"
    ).key_by(lambda n: n % 4).map(lambda n: n).name("double").print()
    return build_job_graph(env.get_stream_graph(name))
