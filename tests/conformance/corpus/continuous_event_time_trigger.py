"""A tumbling event-time window with a trigger that fires every 2 s of event time."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import ContinuousEventTimeTrigger, TumblingEventTimeWindows


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    events = [("a", 100, 1), ("b", 1500, 2), ("a", 2500, 3), ("a", 4200, 4), ("b", 8000, 5)]
    stream = env.from_collection(
        events, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())
    )
    stream.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Time.seconds(10))).trigger(
        ContinuousEventTimeTrigger.of(Time.seconds(2))
    ).reduce(lambda x, y: (x[0], max(x[1], y[1]), x[2] + y[2])).map(
        lambda e: f"continuous {e}"
    ).print()
    env.execute("continuous trigger")


if __name__ == "__main__":
    main()
