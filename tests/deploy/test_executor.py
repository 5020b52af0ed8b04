"""Running a job graph on its target (:mod:`undertow.deploy.executor`): the threads target runs
it in this process; what a target cannot honour is refused before anything starts."""

from __future__ import annotations

import pytest

from undertow.common import Configuration
from undertow.core.errors import DeploymentError
from undertow.datastream import StreamExecutionEnvironment
from undertow.deploy.executor import start_job
from undertow.graph.job_graph import JobGraph, build_job_graph


def graph() -> JobGraph:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.set_parallelism(1)
    env.from_collection([1, 2, 3]).map(lambda x: x).print()
    return build_job_graph(env.get_stream_graph("executor test"))


def test_a_threads_job_runs_to_its_end() -> None:
    config = Configuration({"execution.target": "local-threads", "rest.port": "-1"})
    master = start_job(graph(), config)
    assert master.wait(60).get_job_id() == master.job_id


def test_what_threads_cannot_honour_is_refused_before_anything_starts() -> None:
    config = Configuration({"execution.target": "local-threads", "python.archives": "/x.zip"})
    with pytest.raises(DeploymentError, match=r"python\.archives needs workers"):
        start_job(graph(), config)
