"""Processing time at the end of data: an operator's processing-time service is quiesced
before its ``finish()`` (and when the data ends without drain); afterwards no processing-time
timer fires, registrations are ignored, and keyed timers stay in the snapshot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.common import Configuration
from undertow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from undertow.graph.job_graph import JobVertex
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.chain import OperatorChain
from undertow.runtime.task.context import OperatorProcessingTimeService
from undertow.runtime.task.keyed_operators import KeyedProcessOperator
from undertow.testing.harness import KeyedOneInputOperatorTestHarness, ManualProcessingTimeService


class QueuedMails:
    """A task-level service whose due callbacks become queued mails, run by :meth:`run`."""

    def __init__(self) -> None:
        self.registered: list[tuple[int, Callable[[int], None]]] = []
        self.mails: list[Callable[[], None]] = []
        self.cancelled = 0

    def current_processing_time(self) -> int:
        return 0

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> Any:
        self.registered.append((timestamp, callback))
        mails = self

        class Handle:
            def cancel(self) -> None:
                mails.cancelled += 1

        return Handle()

    def post_due(self) -> None:
        """The loop fired every registered timer: their mails wait in the mailbox."""
        for timestamp, callback in self.registered:
            self.mails.append(lambda t=timestamp, c=callback: c(t))  # type: ignore[misc]
        self.registered = []

    def run(self) -> None:
        for mail in self.mails:
            mail()
        self.mails = []


def test_quiesce_drops_pending_callbacks_queued_mails_and_later_registrations() -> None:
    task_service = QueuedMails()
    service = OperatorProcessingTimeService(task_service)
    fired: list[int] = []
    service.register_timer(10, fired.append)
    service.register_timer(20, fired.append)
    task_service.post_due()  # both mails are queued before the operator finishes
    service.register_timer(30, fired.append)
    assert service.num_pending() == 3

    service.quiesce()

    assert task_service.cancelled == 3 and service.num_pending() == 0
    handle = service.register_timer(40, fired.append)
    handle.cancel()  # a handle that never fires, but can be cancelled
    assert [t for t, _ in task_service.registered] == [30], "40 must not reach the task"
    task_service.post_due()  # even a callback whose cancel came too late
    task_service.run()
    assert fired == [] and service.is_quiesced


def test_an_active_service_runs_its_callbacks_once_and_honours_cancel() -> None:
    task_service = QueuedMails()
    service = OperatorProcessingTimeService(task_service)
    fired: list[int] = []
    service.register_timer(10, fired.append)
    cancelled = service.register_timer(20, fired.append)
    task_service.post_due()
    cancelled.cancel()  # after its mail was queued: it must not run
    task_service.run()
    assert fired == [10] and service.num_pending() == 0


class Ticker(KeyedProcessFunction):
    """A processing-time timer per record, 5 ms ahead; each timer emits a tick."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        timers = ctx.timer_service()
        timers.register_processing_time_timer(timers.current_processing_time() + 5)
        return None

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield ("tick", ctx.get_current_key(), timestamp)


def _ticker_chain() -> tuple[OperatorChain, RecordWriter, ManualProcessingTimeService]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ticks = env.from_collection([1]).key_by(lambda v: v).process(Ticker()).name("ticker")
    ticks.rebalance().print()
    vertex: JobVertex = next(v for v in env._job_graph("ticks").vertices if v.name == "ticker")
    partition = ResultPartition("ticker out", [1], buffers_per_channel=2, floating_buffers=2,
                                max_buffers_per_channel=100)  # fmt: skip
    writer = RecordWriter(partition, vertex.outputs[0].new_partitioner(), 1 << 16)
    clock = ManualProcessingTimeService()
    chain = OperatorChain(vertex, 0, 1, Configuration(), {vertex.outputs[0].id: writer},
                          None, clock)  # type: ignore[arg-type]  # fmt: skip
    chain.open()
    return chain, writer, clock


def test_the_chain_quiesces_an_operator_before_it_finishes() -> None:
    chain, writer, clock = _ticker_chain()
    chain.head.process_batch([1, 2], None)
    clock.set_processing_time(5)
    assert writer.records_out == 2  # timers fire while the operator runs
    chain.head.process_batch([3], None)

    chain.finish()
    clock.set_processing_time(1_000)

    assert writer.records_out == 2, "a processing-time timer fired after finish()"
    assert chain.snapshot_state(1).operators, "the pending timer stays in the snapshot"
    chain.close()


def test_an_end_of_data_without_drain_quiesces_without_finishing() -> None:
    chain, writer, clock = _ticker_chain()
    chain.head.process_batch([1, 2], None)

    chain.quiesce_processing_time()
    clock.set_processing_time(1_000)
    chain.head.process_batch([3], None)  # what arrived before EndOfData: its timer is kept
    clock.set_processing_time(2_000)

    assert writer.records_out == 0
    [part] = chain.snapshot_state(1).operators.values()
    assert part.timers, "pending timers are state: the savepoint holds them"
    chain.close()


def test_the_harness_finish_quiesces_like_a_task() -> None:
    harness = KeyedOneInputOperatorTestHarness(
        KeyedProcessOperator(Ticker()), key_selector=lambda v: v
    )
    harness.open()
    harness.process_elements([1, 2])
    harness.finish()
    harness.set_processing_time(100)
    assert harness.extract_output_values() == []
    assert harness.num_processing_time_timers() == 2
    harness.close()
