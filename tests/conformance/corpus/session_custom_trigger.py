"""A trigger of the script's own on session windows: early results every third click, merged."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ReducingStateDescriptor
from pyflink.datastream.window import EventTimeSessionWindows, Trigger, TriggerResult


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class EveryThirdAndAtTheEnd(Trigger):
    def __init__(self):
        self.clicks = ReducingStateDescriptor("clicks", lambda a, b: a + b, Types.LONG())

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        clicks = ctx.get_partitioned_state(self.clicks)
        clicks.add(1)
        if clicks.get() % 3 == 0:
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self.clicks)
        ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.clicks).clear()


class Pages(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        pages = sorted(e[2] for e in elements)
        yield f"{key} [{window.start}, {window.end}) {len(pages)} clicks {pages}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    clicks = [("u1", 1000, "a"), ("u1", 2000, "b"), ("u2", 2000, "x"), ("u1", 9000, "c"),
              ("u1", 10000, "d"), ("u1", 5500, "e"), ("u2", 4000, "y"), ("u1", 11000, "f"),
              ("u2", 20000, "z")]  # fmt: skip
    env.from_collection(
        clicks, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(60)
        ).with_timestamp_assigner(ClickTime())
    ).key_by(lambda c: c[0]).window(EventTimeSessionWindows.with_gap(Time.seconds(4))).trigger(
        EveryThirdAndAtTheEnd()
    ).process(Pages(), Types.STRING()).print()
    env.execute("session trigger")


if __name__ == "__main__":
    main()
