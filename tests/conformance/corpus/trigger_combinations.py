"""Triggers combined with event-time windows: counts, purging, event time on global windows."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    GlobalWindows,
    PurgingTrigger,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class EarlyAndOnTime(Trigger):
    """Fires once early on the first element of a window, and again when event time reaches it."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        if element[1] >= 10:
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp())


class Describe(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        values = [e[1] for e in elements]
        yield f"{self.label} {key} {context.window()} values {values} sum {sum(values)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    events = [("x", 1, 100), ("y", 2, 300), ("x", 12, 900), ("x", 3, 1500), ("y", 4, 2100),
              ("x", 5, 2600), ("y", 15, 3300), ("x", 6, 4100), ("y", 7, 4800),
              ("x", 8, 5200)]  # fmt: skip
    stream = env.from_collection(
        events, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    keyed = stream.key_by(lambda e: e[0])
    tumbling = TumblingEventTimeWindows.of(Time.seconds(3))

    keyed.window(tumbling).trigger(CountTrigger.of(2)).process(
        Describe("count"), Types.STRING()
    ).print()
    keyed.window(tumbling).trigger(PurgingTrigger.of(CountTrigger.of(2))).process(
        Describe("purging-count"), Types.STRING()
    ).print()
    keyed.window(tumbling).trigger(
        PurgingTrigger.of(ContinuousEventTimeTrigger.of(Time.seconds(1)))
    ).process(Describe("purging-continuous"), Types.STRING()).print()
    keyed.window(GlobalWindows.create()).trigger(EventTimeTrigger.create()).process(
        Describe("global-event-time"), Types.STRING()
    ).print()
    keyed.window(tumbling).trigger(EarlyAndOnTime()).process(
        Describe("early"), Types.STRING()
    ).print()
    env.execute("trigger combinations")


if __name__ == "__main__":
    main()
