"""The coordinator's gateway to the running attempt: each request becomes a control message
of the current attempt to the worker that runs the subtask (or to all of them), and nothing
is sent between attempts."""

from __future__ import annotations

import asyncio
import threading
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
    GrantCollectCredit,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    StopSource,
    TriggerSourceCheckpoint,
)
from undertow.runtime.control.placement import plan_execution
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.collect_window import Grant
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


@dataclass
class ThreadRecordingConnection:
    """A control connection that notes the thread of every ``send`` (loop-only in truth:
    ``ControlConnection.send`` writes the transport of the loop's stream)."""

    sent: list[tuple[Any, int]] = field(default_factory=list)

    def send(self, message: Any) -> None:
        self.sent.append((message, threading.get_ident()))


def test_credit_granted_from_the_readers_thread_is_sent_on_the_loop() -> None:
    """The iterator's thread grants credit while the loop writes the same connections: the
    send must happen on the loop (a write from the reader's thread once failed with EBADF)."""
    gw, attempt, _, _ = gateway()
    conn = ThreadRecordingConnection()
    attempt.workers[0] = conn  # type: ignore[assignment]
    gw.attempt = attempt
    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever)
    loop_thread.start()
    try:
        gw.loop = loop
        readers = [
            threading.Thread(target=gw.grant_collect_credit, args=("sink", Grant(5, 100 + i)))
            for i in range(8)
        ]
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        gw.grant_collect_credit("sink", Grant(4, 1))  # an older attempt's: dropped
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        loop_thread.join(10)
        loop.close()
    assert sorted(m.credit for m, _ in conn.sent) == [100 + i for i in range(8)]
    assert {m for m, _ in conn.sent} <= {
        GrantCollectCredit(AttemptNumber(5), "sink", 100 + i) for i in range(8)
    }
    assert {thread for _, thread in conn.sent} == {loop_thread.ident}
    gw.grant_collect_credit("sink", Grant(5, 1))  # after the loop closed: dropped, no error
