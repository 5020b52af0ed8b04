"""The mailbox rule for every shape of work, counted in records (issue 14, ARCHITECTURE.md §3).

Each test runs a real :class:`StreamTask` whose user function spins a known time per record,
posts mails to it from another thread (as a checkpoint trigger or RPC arrives on a socket)
while it works, and counts the records the function processed between the posting of each
mail and its running. A slice is 2 ms; at 0.2 ms per record that is about 10 records, so the
bound is a small multiple of that (the first chunk, 64 records, runs before the chunk size
adapts, and is skipped); without slicing, a mail waits for a whole input buffer, fan-out,
window firing or timer burst (thousands of records).

Shapes: chained operators on network input, a flat_map fan-out, a processing-time window
firing 10,000 keys at once, a burst of 10,000 processing-time timers of a keyed process
function, the event-time timers one watermark fires, and work a mail continues in further
mails (a snapshot's pickling). The source
reader's output has its own test (test_source_slicing.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from tests.runtime.task.mail_probe import post_mails_from_another_thread
from tests.runtime.task.task_fakes import NullServices

from undertow.common import Configuration, Time
from undertow.core.config import Options
from undertow.datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from undertow.datastream.window import TumblingProcessingTimeWindows
from undertow.graph.job_graph import JobVertex
from undertow.runtime.network.buffer import Buffer, serialize_batch
from undertow.runtime.network.credit import Send
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.deployment import TaskDeployment
from undertow.runtime.task.events import WatermarkEvent
from undertow.runtime.task.mailbox_loop import fit_switch_interval
from undertow.runtime.task.stream_task import StreamTask

SPIN_S = 0.0002
#: How long a scenario waits, after its mails ran, for what its test checks next.
UNTIL_WITHIN_S = 60.0
#: Records (fired windows, timers) processed per user-function call, per test module run.
COUNTS: dict[str, int] = {}


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def counted(name: str, seconds: float = SPIN_S) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1
    spin(seconds)


def spin_map(value: Any) -> Any:
    counted("map")
    return value


def fan_out(value: int) -> list[int]:
    return [value] * 100


def spin_fanned(value: Any) -> Any:
    counted("fanned", 0.00002)  # 20 us per output record: a slice holds ~100 of them
    return value


class SpinPerWindow(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        counted("window")
        return []


class TimerPerKey(KeyedProcessFunction):
    """Registers one processing-time timer per key, all at the same instant."""

    def __init__(self, at_ms: int) -> None:
        self.at_ms = at_ms

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_processing_time_timer(self.at_ms)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        counted("timer")
        return []


class EventTimerPerKey(KeyedProcessFunction):
    """Registers one event-time timer per key, all at the same time."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(1000)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        counted("event-timer")
        return []


class TimersBeforeLaterRecords(KeyedProcessFunction):
    """Keys >= 0 register an event-time timer at 1000; a negative key, sent after the
    watermark, notes how many timers had fired when it was processed."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        if value < 0:
            SEEN_AT_LATER_RECORD.append(COUNTS.get("event-timer", 0))
        else:
            ctx.timer_service().register_event_time_timer(1000)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        counted("event-timer")
        return []


SEEN_AT_LATER_RECORD: list[int] = []


class Producer:
    """Feeds one input channel one buffer per credit: ``batches`` of records (a list of values,
    or a (values, timestamps) pair), then (if ``endless``) the last batch again and again;
    ``then``: events sent after the batches (they take no credit)."""

    def __init__(self, channel: Any, batches: list[Any], endless: bool,
                 then: tuple[Any, ...] = ()) -> None:  # fmt: skip
        self.channel = channel
        self.data = [serialize_batch(*b) if isinstance(b, tuple) else serialize_batch(b, None)
                     for b in batches]  # fmt: skip
        self.endless = endless
        self.events = list(then)
        self.sequence = 0

    def add_credit(self, credit: int) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(credit):
            if self.sequence >= len(self.data) and not self.endless:
                break
            data = self.data[min(self.sequence, len(self.data) - 1)]
            send = Send(Buffer(data), False, self.sequence, backlog=1)
            self.sequence += 1
            loop.call_soon(self.channel.on_send, send)
        if self.sequence >= len(self.data) and not self.endless:
            while self.events:
                event = self.events.pop(0)
                is_event = not isinstance(event, Buffer)
                send = Send(event, is_event, self.sequence, backlog=0)
                loop.call_soon(self.channel.on_send, send)
                self.sequence += 1

    def resume(self) -> None:
        pass

    def new_buffer_size(self, size: int, max_records: int) -> None:
        """Buffer debloating's announcement (on by default): this producer's buffers are
        fixed."""


def middle_vertex(build: Callable[[Any], Any]) -> JobVertex:
    """The vertex ``build`` makes out of a keyed (or rebalanced) stream of ints; its output
    goes to a print vertex."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    build(env.from_collection([0])).name("under-test").rebalance().print()
    [vertex] = [v for v in env._job_graph("slices").vertices if "under-test" in v.name]
    return vertex


def start_task(
    vertex: JobVertex, batches: list[Any], endless: bool, then: tuple[Any, ...] = ()
) -> tuple[StreamTask, asyncio.Future[Any]]:
    """Run ``vertex`` as a task on the running loop, fed with ``batches`` by a producer; its
    output goes to a partition nobody reads (1,000 buffers: never a backpressure here)."""
    gate = InputGate("input", vertex.inputs[0].target_input, floating_buffers=8)
    channel = gate.add_channel(0, "input channel 0", initial_credit=2)
    channel.connect(Producer(channel, batches, endless, then))
    edge = vertex.outputs[0]
    out = ResultPartition("out", [1], buffers_per_channel=1000, floating_buffers=0,
                          max_buffers_per_channel=1000)  # fmt: skip
    writer = RecordWriter(out, edge.new_partitioner(), 1 << 16)
    deployment = TaskDeployment(vertex=vertex, subtask_index=0, attempt=0,
                                config=Configuration(), gates=(gate,),
                                writers={edge.id: writer})  # fmt: skip
    task = StreamTask(deployment=deployment, services=NullServices(),
                      loop=asyncio.get_running_loop())  # fmt: skip
    return task, asyncio.ensure_future(task.run())


def records_between_post_and_run(
    vertex: JobVertex, batches: list[Any], counter: str, *, endless: bool,
    mails: int = 30, start_after: Callable[[], bool] = lambda: True, then: tuple[Any, ...] = (),
    until: Callable[[], bool] = lambda: True,
) -> tuple[list[int], int]:  # fmt: skip
    """Run ``vertex`` fed with ``batches``; once ``start_after()``, post ``mails`` mails from
    another thread, one every 5 ms (:func:`post_mails_from_another_thread`: for each mail how
    many ``counter`` records ran between its posting and its running, and how many ran from
    the first posting to the last mail's running). The task is cancelled once the mails ran
    and ``until()`` holds (at most :data:`UNTIL_WITHIN_S`): a test of what the task does after
    the mails waits for it, however slowly a loaded machine runs it."""
    COUNTS.clear()
    fit_switch_interval(Configuration().get(Options.MAILBOX_SLICE) / 1000.0)  # as a worker does

    async def scenario() -> tuple[list[int], int]:
        task, running = start_task(vertex, batches, endless, then)
        probe = await asyncio.to_thread(
            post_mails_from_another_thread, task, mails, lambda: COUNTS.get(counter, 0),
            start_after,
        )  # fmt: skip
        deadline = time.monotonic() + UNTIL_WITHIN_S
        while not until() and time.monotonic() < deadline and not running.done():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return probe

    return asyncio.run(scenario())


# -- the shapes ---------------------------------------------------------------------------------
def test_chained_operators_on_network_input_let_a_mail_in_within_a_few_records() -> None:
    vertex = middle_vertex(lambda s: s.rebalance().map(spin_map).map(lambda v: v)
                           .filter(lambda v: False))  # fmt: skip
    waits, ran = records_between_post_and_run(vertex, [list(range(4096))], "map", endless=True)
    assert len(waits) == 30 and ran > 0, waits  # the map did run meanwhile
    # a 2 ms slice holds ~10 records of 0.2 ms; one buffer holds 4,096
    assert max(waits[5:]) <= 64, waits


def test_a_flat_map_fan_out_lets_a_mail_in_within_a_few_input_records() -> None:
    vertex = middle_vertex(lambda s: s.rebalance().flat_map(fan_out).map(spin_fanned)
                           .filter(lambda v: False))  # fmt: skip
    waits, ran = records_between_post_and_run(vertex, [list(range(1024))], "fanned",
                                              endless=True)  # fmt: skip
    assert len(waits) == 30 and ran > 0, waits
    # one input record is 100 output records (2 ms); a buffer of 1,024 inputs is 102,400
    assert max(waits[5:]) <= 3 * 100, waits


def test_a_window_firing_10000_keys_at_once_lets_a_mail_in_within_a_few_windows() -> None:
    # every record arrives well before the window's end; then all 10,000 windows fire at once
    vertex = middle_vertex(
        lambda s: (
            s.key_by(lambda v: v)
            .window(TumblingProcessingTimeWindows.of(Time.milliseconds(400)))
            .process(SpinPerWindow())
        )
    )
    batches = [list(range(i, i + 1000)) for i in range(0, 10_000, 1000)]
    waits, ran = records_between_post_and_run(
        vertex, batches, "window", endless=False,
        start_after=lambda: COUNTS.get("window", 0) > 0,
    )  # fmt: skip
    assert len(waits) == 30 and 0 < ran < 10_000, (ran, waits)  # the mails came mid-firing
    assert max(waits) <= 64, waits  # 10,000 windows at 0.2 ms: 2 s in one step without slices


def test_a_burst_of_10000_timers_lets_a_mail_in_within_a_few_timers() -> None:
    at_ms = int(time.time() * 1000) + 600
    vertex = middle_vertex(lambda s: s.key_by(lambda v: v).process(TimerPerKey(at_ms)))
    batches = [list(range(i, i + 1000)) for i in range(0, 10_000, 1000)]
    waits, ran = records_between_post_and_run(
        vertex, batches, "timer", endless=False,
        start_after=lambda: COUNTS.get("timer", 0) > 0,
    )  # fmt: skip
    assert len(waits) == 30 and 0 < ran < 10_000, (ran, waits)  # the mails came mid-burst
    assert max(waits) <= 64, waits


def test_work_a_mail_continues_in_further_mails_lets_records_in_between() -> None:
    """A snapshot's pickling (snapshot_slices.py) goes on in a mail that posts the next one;
    that next mail runs at the next turn, after a slice of input, not in the same turn."""
    vertex = middle_vertex(lambda s: s.rebalance().map(spin_map).filter(lambda v: False))
    between: list[int] = []

    async def scenario() -> None:
        task, running = start_task(vertex, [list(range(4096))], endless=True)
        await asyncio.sleep(0.1)  # the chunk size adapted to the map
        finished = asyncio.Event()
        last = [COUNTS.get("map", 0)]

        def step() -> None:  # one slice of some longer work, then the next one
            now = COUNTS.get("map", 0)
            between.append(now - last[0])
            last[0] = now
            if len(between) < 50:
                task.post(step)
            else:
                finished.set()

        task.post(step)
        await asyncio.wait_for(finished.wait(), 30)
        task.cancel()
        await asyncio.gather(running, return_exceptions=True)

    COUNTS.clear()
    asyncio.run(scenario())
    # each step after the first found records processed since the previous one: a slice
    assert all(n > 0 for n in between[1:]), between
    assert max(between[1:]) <= 64, between


def test_the_event_time_timers_of_one_watermark_let_a_mail_in_within_a_few_timers() -> None:
    vertex = middle_vertex(lambda s: s.key_by(lambda v: v).process(EventTimerPerKey()))
    batches = [(list(range(i, i + 1000)), [500] * 1000) for i in range(0, 10_000, 1000)]
    waits, ran = records_between_post_and_run(
        vertex, batches, "event-timer", endless=False, then=(WatermarkEvent(2000),),
        start_after=lambda: COUNTS.get("event-timer", 0) > 0,
    )  # fmt: skip
    assert len(waits) == 30 and 0 < ran < 10_000, (ran, waits)  # the mails came mid-burst
    assert max(waits) <= 64, waits


def test_records_after_a_watermark_wait_for_all_of_its_timers() -> None:
    """The timers of a watermark fire over many turns, but no input is taken meanwhile: a
    record behind the watermark is processed after the last of them (FLIP-443 without
    records in between), and so is the next watermark."""
    SEEN_AT_LATER_RECORD.clear()
    vertex = middle_vertex(lambda s: s.key_by(lambda v: v).process(TimersBeforeLaterRecords()))
    keys = list(range(3000))
    records_between_post_and_run(
        vertex, [(keys, [500] * len(keys))], "event-timer", endless=False, mails=200,
        then=(WatermarkEvent(2000), Buffer(serialize_batch([-1], [2500])), WatermarkEvent(3000)),
        start_after=lambda: COUNTS.get("event-timer", 0) > 0,
        until=lambda: bool(SEEN_AT_LATER_RECORD),  # the mails may all run before the record
    )  # fmt: skip
    assert SEEN_AT_LATER_RECORD == [3000]
