"""The frozen job view the REST API serves: subtask states as Flink's web UI derives them,
vertex times, and the facts (runtime mode, checkpointing options) from the JobMaster's
settings."""

from __future__ import annotations

import asyncio

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.types import AttemptNumber
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.messages import RegisterWorker
from undertow.runtime.control.placement import plan_execution
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.checkpoint_stats import CheckpointStatsSnapshot
from undertow.runtime.master.exception_history import ExceptionHistory
from undertow.runtime.master.job_status import JobEvent, JobLifecycle, JobStatus
from undertow.runtime.master.job_view import (
    JobFacts,
    build_job_view,
    subtask_state,
    worker_views,
)
from undertow.runtime.master.metrics import ExecutionState, TaskMetricsStore, WorkerView
from undertow.runtime.master.settings import MasterSettings

S = JobStatus
E = ExecutionState


def graph() -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    stream = env.from_source(NumberSequenceSource(1, 5), WatermarkStrategy.no_watermarks(), "seq")
    stream.rebalance().sink_to(DiscardingSink())
    return env._job_graph("view")


def attempt(g: JobGraph) -> Attempt:
    return Attempt(AttemptNumber(1), g, 2, 1000)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (S.INITIALIZING, E.CREATED), (S.CREATED, E.CREATED), (S.FAILING, E.CANCELING),
        (S.CANCELLING, E.CANCELING), (S.FINISHED, E.FINISHED), (S.RESTARTING, E.SCHEDULED),
        (S.FAILED, E.CANCELED), (S.CANCELED, E.CANCELED),
    ],
)  # fmt: skip
def test_a_subtask_without_facts_of_its_own_takes_its_state_from_the_job(
    status: JobStatus, expected: ExecutionState
) -> None:
    g = graph()
    plan = plan_execution(g, 2)
    assert subtask_state(status, attempt(g), plan, (0, 0)) is expected


def test_a_subtasks_own_facts_come_first_then_its_workers_deployment() -> None:
    g = graph()
    plan = plan_execution(g, 2)
    a = attempt(g)
    a.failed.add((0, 0))
    a.finished.add((0, 1))
    a.deployed.add(0)  # subtask 0's worker; subtask 1 runs on worker 1
    assert subtask_state(S.RUNNING, a, plan, (0, 0)) is E.FAILED
    assert subtask_state(S.RUNNING, a, plan, (0, 1)) is E.FINISHED
    assert subtask_state(S.RUNNING, a, plan, (1, 0)) is E.RUNNING
    assert subtask_state(S.RUNNING, a, plan, (1, 1)) is E.DEPLOYING
    assert subtask_state(S.RUNNING, None, plan, (1, 0)) is E.DEPLOYING
    a.end()
    assert subtask_state(S.RESTARTING, a, plan, (1, 0)) is E.CANCELED  # its attempt is over


def test_the_view_takes_the_runtime_mode_and_checkpointing_from_the_settings() -> None:
    g = graph()
    settings = MasterSettings.of(Configuration({
        "execution.runtime-mode": "BATCH", "execution.checkpointing.interval": "3 s",
        "undertow.checkpointing.hmac-key": "secret",
    }))  # fmt: skip
    lifecycle = JobLifecycle(100)
    lifecycle.fire(JobEvent.DEPLOYED, 200)
    a = attempt(g)
    a.deployed_at = 150
    a.finished_at.update({(g.vertices[0].id, 0): 300, (g.vertices[0].id, 1): 400})
    facts = JobFacts("f" * 32, g, plan_execution(g, 2), settings, 100,
                     {v.id: f"rest-{v.id}" for v in g.vertices})  # fmt: skip

    async def build() -> object:
        return build_job_view(facts, lifecycle, a, TaskMetricsStore(), CheckpointStatsSnapshot(),
                              ExceptionHistory())  # fmt: skip

    view = asyncio.run(build())
    assert view.job_type == "BATCH" and view.state == "RUNNING"  # type: ignore[attr-defined]
    assert view.checkpointing == settings.checkpoint  # type: ignore[attr-defined]
    assert view.checkpointing.interval_ms == 3000  # type: ignore[attr-defined]
    source, sink = view.vertices  # type: ignore[attr-defined]
    assert (source.start_time, source.end_time) == (150, 400)  # when its last subtask finished
    assert sink.end_time == -1  # still running
    assert [i.source_id for i in sink.inputs] == [f"rest-{g.vertices[0].id}"]


def test_the_live_workers_are_the_registered_ones_still_connected_while_the_attempt_runs() -> None:
    g = graph()  # parallelism 2 on 2 workers: one slot each
    plan = plan_execution(g, 2)
    a = attempt(g)
    assert worker_views(a, plan, g) == ()  # none registered yet
    for index in (0, 1):
        a.registered[index] = RegisterWorker(AttemptNumber(1), index, "127.0.0.1", 7000 + index,
                                             4000 + index)  # fmt: skip
        a.heartbeats.seen(index, 10_000 + index)
    a.finished.update({(v.id, 1) for v in g.vertices})  # worker 1's slot is done
    assert worker_views(a, plan, g) == (
        WorkerView(0, "worker 0 (127.0.0.1:7000)", "127.0.0.1", 7000, 4000, 10_000, 1, 0),
        WorkerView(1, "worker 1 (127.0.0.1:7001)", "127.0.0.1", 7001, 4001, 10_001, 1, 1),
    )
    a.disconnected.add(0)  # killed, or exited
    assert [w.pid for w in worker_views(a, plan, g)] == [4001]
    a.end()  # an ended attempt's workers are shutting down
    assert worker_views(a, plan, g) == () and worker_views(None, plan, g) == ()
