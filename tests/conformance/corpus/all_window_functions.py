"""Windows over all records: process, apply, aggregate and reduce with window functions."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
    ReduceFunction,
)
from pyflink.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    TumblingEventTimeWindows,
)


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountReadings(ProcessAllWindowFunction):
    def process(self, context, elements):
        names = sorted(e[0] for e in elements)
        yield f"process {context.window()} saw {names}"


class ListWindow(AllWindowFunction):
    def apply(self, window, inputs):
        yield f"apply {window} values {[e[1] for e in inputs]}"


class MaxValue(AggregateFunction):
    def create_accumulator(self):
        return -1

    def add(self, value, accumulator):
        return max(accumulator, value[1])

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return max(a, b)


class LabelMax(ProcessAllWindowFunction):
    def process(self, context, maxima):
        for m in maxima:
            yield f"aggregate [{context.window().start}, {context.window().end}) max {m}"


class Longest(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 if len(value1[0]) >= len(value2[0]) else value2


class LabelLongest(AllWindowFunction):
    def apply(self, window, inputs):
        for e in inputs:
            yield f"reduce {window} longest {e[0]}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    readings = [("t1", 5, 100), ("t22", 8, 1200), ("t3", 2, 2900), ("t444", 7, 3100),
                ("t5", 1, 5200), ("t66", 9, 6100), ("t7", 4, 9000)]  # fmt: skip
    stream = env.from_collection(
        readings, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ReadingTime())
    )
    stream.window_all(TumblingEventTimeWindows.of(Time.seconds(3))).process(
        CountReadings(), Types.STRING()
    ).print()
    stream.window_all(CountSlidingWindowAssigner.of(3, 2)).apply(
        ListWindow(), Types.STRING()
    ).print()
    stream.window_all(TumblingEventTimeWindows.of(Time.seconds(4))).aggregate(
        MaxValue(), LabelMax(), accumulator_type=Types.INT(), output_type=Types.STRING()
    ).print()
    stream.window_all(CountTumblingWindowAssigner.of(3)).reduce(
        Longest(), LabelLongest(), output_type=Types.STRING()
    ).print()
    env.execute("all windows")


if __name__ == "__main__":
    main()
