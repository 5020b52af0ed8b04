"""Per-window and per-key state in a ProcessWindowFunction that fires early, and its clear()."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import CountTrigger, TumblingEventTimeWindows


class VisitTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class FiringCounter(ProcessWindowFunction):
    def __init__(self):
        self.firings = ValueStateDescriptor("firings", Types.INT())
        self.windows_seen = ValueStateDescriptor("windows-seen", Types.INT())

    def process(self, key, context, elements):
        window = context.window()
        firings = context.window_state().get_state(self.firings)
        count = (firings.value() or 0) + 1
        firings.update(count)
        if count == 1:
            seen = context.global_state().get_state(self.windows_seen)
            seen.update((seen.value() or 0) + 1)
        total = context.global_state().get_state(self.windows_seen).value()
        pages = [e[2] for e in elements]
        yield (
            f"{key} [{window.start}, {window.end}) firing {count} pages {pages} "
            f"(window {total} of this user)"
        )

    def clear(self, context):
        window = context.window()
        firings = context.window_state().get_state(self.firings)
        print(f"clear [{window.start}, {window.end}) after {firings.value()} firings")
        firings.clear()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    visits = [("ann", 1000, "home"), ("ann", 2000, "shop"), ("bob", 2500, "home"),
              ("ann", 3000, "cart"), ("ann", 4000, "pay"), ("bob", 4500, "help"),
              ("ann", 6000, "home"), ("bob", 7000, "shop"), ("ann", 7500, "shop")]  # fmt: skip
    stream = env.from_collection(
        visits, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(VisitTime())
    )
    stream.key_by(lambda v: v[0]).window(TumblingEventTimeWindows.of(Time.seconds(5))).trigger(
        CountTrigger.of(2)
    ).process(FiringCounter(), Types.STRING()).print()
    env.execute("window state")


if __name__ == "__main__":
    main()
