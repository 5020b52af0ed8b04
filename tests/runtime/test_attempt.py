"""One attempt's message dispatch against a fake JobMaster: what each control message changes
in the attempt and what it hands on (failures with their origin, finished tasks, queues)."""

from __future__ import annotations

import asyncio
import hashlib
import pickle
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from undertow.common import Configuration
from undertow.core.errors import JobExecutionError, RestoreError, UndertowError
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    build_handle,
)
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.control.messages import (
    AcknowledgeCheckpoint,
    ChannelStateRecovered,
    CollectRecords,
    RegisterWorker,
    TaskFailed,
    TaskFinished,
    TasksDeployed,
    WorkerFailed,
)
from undertow.runtime.master.attempt import Attempt, await_channel_state_recovery, dispatch
from undertow.runtime.master.collect_results import CollectResults
from undertow.runtime.master.exception_history import TaskOrigin
from undertow.runtime.master.metrics import TaskMetricsStore


@dataclass
class FakeHost:
    coordinator: Any = None
    task_metrics: TaskMetricsStore = field(default_factory=TaskMetricsStore)
    results: CollectResults = field(default_factory=lambda: CollectResults(exactly_once=False))
    failures: list[tuple[UndertowError, TaskOrigin | None]] = field(default_factory=list)

    def fail(
        self, attempt: Attempt, error: UndertowError, origin: TaskOrigin | None = None
    ) -> None:
        self.failures.append((error, origin))
        attempt.end(error)


def graph() -> JobGraph:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.set_parallelism(2)
    env.from_collection([1, 2, 3]).map(str).name("stringify").print()
    return build_job_graph(env.get_stream_graph("attempt test"))


def registered(attempt: Attempt, host: FakeHost) -> None:
    for worker in range(attempt.num_workers):
        message = RegisterWorker(attempt.number, worker, "10.0.0.9", 7000 + worker, 100 + worker)
        dispatch(host, attempt, worker, object(), message)  # type: ignore[arg-type]


def test_registration_and_deployment_complete_once_every_worker_reported() -> None:
    attempt, host = Attempt(3, graph(), 2, 10_000), FakeHost()
    registered(attempt, host)
    assert attempt.all_registered.is_set() and set(attempt.workers) == {0, 1}
    dispatch(host, attempt, 0, object(), TasksDeployed(3, 0))  # type: ignore[arg-type]
    assert not attempt.all_deployed.is_set()
    dispatch(host, attempt, 1, object(), TasksDeployed(3, 1))  # type: ignore[arg-type]
    assert attempt.all_deployed.is_set()


def test_a_task_failure_fails_the_attempt_naming_task_worker_and_traceback() -> None:
    job = graph()
    attempt, host = Attempt(0, job, 2, 10_000), FakeHost()
    registered(attempt, host)
    vertex = job.vertices[-1]  # map -> print, parallelism 2
    failure = TaskFailed(0, vertex.id, 1, "stringify", "ValueError", "ValueError: bad",
                         "Traceback ...")  # fmt: skip
    dispatch(host, attempt, 1, object(), failure)  # type: ignore[arg-type]
    [(error, origin)] = host.failures
    assert isinstance(error, JobExecutionError) and error.operator == "stringify"
    assert error.subtask == 1 and error.remote_traceback == "Traceback ..."
    assert error.exception_name == "ValueError"
    assert f"(subtask 2/2 of '{vertex.name}') raised ValueError: bad" in str(error)
    assert origin == TaskOrigin(f"{vertex.name} (2/2)", "worker 1 (10.0.0.9:7001)")
    assert (vertex.id, 1) in attempt.failed and attempt.error is error


def test_a_worker_that_refuses_the_checkpoint_fails_the_job_with_a_restore_error() -> None:
    """A refusal on a worker (state of an operator the job lost from a chain) is the same
    kind of failure as one on the driver: a RestoreError naming the snapshot, fatal (no
    restart can fix it), not a generic JobExecutionError."""
    attempt, host = Attempt(0, graph(), 2, 10_000), FakeHost()
    registered(attempt, host)
    attempt.restore_path = "/snapshots/savepoint-abc123-4"
    why = "checkpoint 4 has state of operators this job does not have: 'gone'"
    refused = WorkerFailed(0, 1, "RestoreError", why, "Traceback ...", fatal=True,
                           restore_refused=True)  # fmt: skip
    dispatch(host, attempt, 1, object(), refused)  # type: ignore[arg-type]
    [(error, _)] = host.failures
    assert isinstance(error, RestoreError) and attempt.fatal
    assert str(error) == f"cannot restore from /snapshots/savepoint-abc123-4: {why}"
    assert error.remote_traceback == "Traceback ..."


def test_the_attempt_ends_when_every_subtask_finished_summing_accumulators() -> None:
    job = graph()
    attempt, host = Attempt(0, job, 2, 10_000), FakeHost()
    keys = [(v.id, s) for v in job.vertices for s in range(v.parallelism)]
    for n, (vertex_id, subtask) in enumerate(keys):
        assert not attempt.done.is_set()
        finished = TaskFinished(0, vertex_id, subtask, {"records": n})
        dispatch(host, attempt, 0, object(), finished)  # type: ignore[arg-type]
    assert attempt.done.is_set() and attempt.error is None
    assert attempt.accumulators == {"records": sum(range(len(keys)))}


def test_every_finished_task_is_reported_to_the_coordinator() -> None:
    """The coordinator alone decides what a finished task means for checkpoints (FLIP-147,
    or none after the first without ``checkpoints-after-tasks-finish``)."""
    job = graph()
    finished: list[tuple[int, int]] = []
    coordinator = SimpleNamespace(on_task_finished=lambda v, s: finished.append((v, s)))
    attempt, host = Attempt(0, job, 2, 10_000), FakeHost(coordinator=coordinator)
    keys = [(v.id, s) for v in job.vertices for s in range(v.parallelism)]
    for vertex_id, subtask in keys:
        dispatch(host, attempt, 0, object(), TaskFinished(0, vertex_id, subtask, {}))  # type: ignore[arg-type]
    assert finished == keys


def test_collected_records_go_to_their_sinks_queue() -> None:
    attempt, host = Attempt(0, graph(), 1, 10_000), FakeHost()
    dispatch(host, attempt, 0, object(), CollectRecords(0, "sink-a", pickle.dumps([1, 2]), 0))  # type: ignore[arg-type]
    assert host.results.take("sink-a", block=False) == [1, 2]


class RecordingCoordinator:
    def __init__(self) -> None:
        self.acks: list[int] = []

    def receive_ack(self, vertex_id: int, subtask: int, checkpoint_id: int, handle: Any,
                    metrics: Any) -> None:  # fmt: skip
        self.acks.append(checkpoint_id)


def test_a_failed_attempt_acknowledges_no_checkpoint() -> None:
    """An ended attempt's acknowledgements are ignored: its pending checkpoints are aborted
    with it (Flink aborts them on failover). Issue 28: a run that lost records after a worker
    kill printed "checkpoint 5 completed" after "attempt 0 failed" and restored from it (that
    this lost the records is suspected, not shown)."""
    job = graph()
    coordinator = RecordingCoordinator()
    attempt, host = Attempt(0, job, 2, 10_000), FakeHost(coordinator=coordinator)
    registered(attempt, host)
    vertex = job.vertices[-1]
    dispatch(host, attempt, 0, object(), AcknowledgeCheckpoint(0, vertex.id, 0, 5, None))  # type: ignore[arg-type]
    host.fail(attempt, JobExecutionError("worker 1 exited unexpectedly"))
    dispatch(host, attempt, 1, object(), AcknowledgeCheckpoint(0, vertex.id, 1, 5, None))  # type: ignore[arg-type]
    assert coordinator.acks == [5]


def test_with_during_recovery_off_no_checkpoint_before_restored_input_was_consumed() -> None:
    """``await_channel_state_recovery``: on (the default) it does not wait for channel state
    restored in place; off, it waits until each subtask restoring input in place reported
    ``ChannelStateRecovered`` (output state only: no report needed)."""
    data = b"abc"
    handle = build_handle("stringify (1/2)", 4, ChannelStateDirection.INPUT, {(0, 0): [data]},
                          0, hashlib.sha256(data).hexdigest(), inline_data=data)  # fmt: skip
    vertex = graph().vertices[-1].id
    restore = RestorePlan(
        None, "", "", {}, {},  # type: ignore[arg-type]
        channel_state={(vertex, 1): ChannelStateHandles(input=handle)},
    )  # fmt: skip

    async def scenario(during_recovery: bool) -> list[str]:
        attempt, host = Attempt(3, graph(), 2, 10_000), FakeHost()
        waiting = asyncio.ensure_future(
            await_channel_state_recovery(attempt, restore, during_recovery)
        )
        await asyncio.sleep(0.05)
        seen = ["waiting" if not waiting.done() else "triggering"]
        report = ChannelStateRecovered(3, vertex, 1)  # type: ignore[arg-type]
        dispatch(host, attempt, 0, object(), report)  # type: ignore[arg-type]
        await asyncio.wait_for(waiting, 1)
        return [*seen, "triggering"]

    assert asyncio.run(scenario(True)) == ["triggering", "triggering"]
    assert asyncio.run(scenario(False)) == ["waiting", "triggering"]
