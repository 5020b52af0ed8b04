"""Sliding event-time windows with an AggregateFunction, and a window reduce on all records."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessAllWindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        accumulator[0] += 1
        accumulator[1] += value[1]
        return accumulator

    def get_result(self, accumulator):
        return f"count={accumulator[0]} sum={accumulator[1]}"

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


class Busiest(ProcessAllWindowFunction):
    def process(self, context, elements):
        top = max(elements, key=lambda e: (e[1], e[0]))
        yield f"[{context.window().start}, {context.window().end}) busiest {top[0]}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    clicks = [("home", 1, 0), ("shop", 4, 2000), ("home", 2, 4500), ("shop", 1, 6000),
              ("home", 5, 7000), ("cart", 9, 12500)]  # fmt: skip
    stream = env.from_collection(
        clicks, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ClickTime())
    )
    windows = SlidingEventTimeWindows.of(Time.seconds(6), Time.seconds(3))
    stream.key_by(lambda c: c[0]).window(windows).aggregate(
        CountAndSum(),
        accumulator_type=Types.LIST(Types.INT()),
        output_type=Types.STRING(),
    ).print()
    stream.window_all(windows).process(Busiest(), Types.STRING()).print()
    env.execute("sliding windows")


if __name__ == "__main__":
    main()
