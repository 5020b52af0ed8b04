"""Top-N hot items (the classic UserBehavior shape): sliding event-time windows of item views
counted with an aggregate and a window function into rows with a ``count`` field, then per
window end a keyed process function gathers them in list state and, when an event-time timer
fires at the window's end, prints the top 3 sorted by ``-row.count`` (a field read as an
attribute; on a tuple it would be the tuple's method)."""

import random

from pyflink.common import Duration, Row, Types, WatermarkStrategy
from pyflink.common.time import Time
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    RuntimeContext,
)
from pyflink.datastream.state import ListStateDescriptor
from pyflink.datastream.window import SlidingEventTimeWindows


class ByTs(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class CountAgg(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class WindowResult(ProcessWindowFunction):
    def process(self, key, context, elements):
        count = next(iter(elements))
        yield Row(item=key, window_end=context.window().end, count=count)


class TopN(KeyedProcessFunction):
    def __init__(self, n):
        self.n = n

    def open(self, runtime_context: RuntimeContext):
        self.items = runtime_context.get_list_state(
            ListStateDescriptor(
                "items",
                Types.ROW_NAMED(
                    ["item", "window_end", "count"], [Types.INT(), Types.LONG(), Types.LONG()]
                ),
            )
        )

    def process_element(self, value, ctx):
        self.items.add(value)
        ctx.timer_service().register_event_time_timer(value.window_end + 1)

    def on_timer(self, timestamp, ctx):
        items = sorted(self.items.get(), key=lambda r: (-r.count, r.item))
        self.items.clear()
        lines = [f"window end {timestamp - 1}"]
        for i, r in enumerate(items[: self.n]):
            lines.append(f"  No.{i + 1} item={r.item} views={r.count}")
        yield "\n".join(lines)


rng = random.Random(7)
views = []
ts = 0
for _ in range(1500):
    ts += rng.randint(0, 40)
    item = int(rng.paretovariate(1.2)) % 50
    views.append(Row(user=rng.randint(1, 100), item=item, ts=ts + rng.randint(-300, 0)))

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
stream = env.from_collection(
    views,
    type_info=Types.ROW_NAMED(["user", "item", "ts"], [Types.INT(), Types.INT(), Types.LONG()]),
)
stream = stream.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(300)).with_timestamp_assigner(
        ByTs()
    )
)
counts = (
    stream.key_by(lambda v: v.item, key_type=Types.INT())
    .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
    .aggregate(
        CountAgg(),
        WindowResult(),
        accumulator_type=Types.LONG(),
        output_type=Types.ROW_NAMED(
            ["item", "window_end", "count"], [Types.INT(), Types.LONG(), Types.LONG()]
        ),
    )
)
counts.key_by(lambda r: r.window_end, key_type=Types.LONG()).process(
    TopN(3), output_type=Types.STRING()
).set_parallelism(1).print().set_parallelism(1)
env.execute("hot items")
