"""The coordinator's gateway to the running attempt: each request becomes a control message
of the current attempt to the worker that runs the subtask (or to all of them), and nothing
is sent between attempts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import JobExecutionError, UndertowError
from undertow.core.types import AttemptNumber
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions, SnapshotType
from undertow.runtime.control.messages import (
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    StopSource,
    TriggerSourceCheckpoint,
)
from undertow.runtime.control.placement import plan_execution
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.task_gateway import AttemptGateway

BARRIER = CheckpointBarrier(
    3, 0, CheckpointOptions.for_config(SnapshotType.CHECKPOINT, True, False, 0)
)


@dataclass
class Connection:
    sent: list[Any] = field(default_factory=list)

    def send(self, message: Any) -> None:
        self.sent.append(message)


def graph() -> JobGraph:
    env = StreamExecutionEnvironment(Configuration({}))
    env.set_parallelism(2)
    stream = env.from_source(NumberSequenceSource(1, 5), WatermarkStrategy.no_watermarks(), "seq")
    stream.sink_to(DiscardingSink())
    return env._job_graph("gateway")


def gateway() -> tuple[AttemptGateway, Attempt, list[Connection], list[Any]]:
    g = graph()
    failed: list[tuple[Attempt, UndertowError]] = []
    gw = AttemptGateway(plan_execution(g, 2), lambda a, e: failed.append((a, e)))
    attempt = Attempt(AttemptNumber(5), g, 2, 1000)
    conns = [Connection(), Connection()]
    attempt.workers.update({0: conns[0], 1: conns[1]})  # type: ignore[dict-item]
    return gw, attempt, conns, failed


def test_nothing_is_sent_between_attempts() -> None:
    gw, _, conns, failed = gateway()
    gw.trigger_source(0, 1, BARRIER)
    gw.notify_complete(3)
    gw.fail_job(JobExecutionError("x"))
    assert conns[0].sent == conns[1].sent == [] and failed == []
    assert gw.enumerators() == {}


def test_source_requests_go_to_the_worker_of_the_subtask_with_the_attempts_number() -> None:
    gw, attempt, conns, _ = gateway()
    gw.attempt = attempt
    gw.trigger_source(0, 1, BARRIER)
    gw.stop_source(0, 0, drain=True)
    assert conns[1].sent == [TriggerSourceCheckpoint(AttemptNumber(5), 0, 1, BARRIER)]
    assert conns[0].sent == [StopSource(AttemptNumber(5), 0, 0, True)]


def test_notifications_go_to_every_worker_and_a_failure_to_the_attempt() -> None:
    gw, attempt, conns, failed = gateway()
    gw.attempt = attempt
    gw.notify_complete(3)
    gw.notify_aborted(4)
    expected = [NotifyCheckpointComplete(AttemptNumber(5), 3),
                NotifyCheckpointAborted(AttemptNumber(5), 4)]  # fmt: skip
    assert conns[0].sent == conns[1].sent == expected
    error = JobExecutionError("checkpoint failures exceeded")
    gw.fail_job(error)
    assert failed == [(attempt, error)]
    attempt.enumerators[0] = "enumerator"  # type: ignore[assignment]
    assert gw.enumerators() == {0: "enumerator"}
