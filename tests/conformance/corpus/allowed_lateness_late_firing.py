"""Allowed lateness: late readings fire their window again, later ones go to a side output."""

import time

from pyflink.common import Configuration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class Reading:
    def __init__(self, sensor, value, ts):
        self.sensor = sensor
        self.value = value
        self.ts = ts


class ReplayWithPause(MapFunction):
    """Stands for a slow upstream: pauses before each heartbeat, so event time moves on."""

    def map(self, value):
        if value.sensor == "heartbeat":
            time.sleep(0.3)
        return value


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class Firing(ProcessWindowFunction):
    def process(self, key, context, readings):
        values = sorted(r.value for r in readings)
        window = context.window()
        yield f"{key} [{window.start}, {window.end}) values {values}"


def main():
    config = Configuration()
    config.set_integer("python.fn-execution.bundle.size", 1)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)

    readings = [Reading("a", 1, 1000), Reading("b", -1, 1200), Reading("a", 2, 3000),
                Reading("b", 3, 4000),
                Reading("a", 4, 12000), Reading("heartbeat", 0, 12000),
                Reading("heartbeat", 0, 12000), Reading("heartbeat", 0, 12000),
                Reading("a", 5, 4500), Reading("b", 6, 2000), Reading("a", 8, 1500),
                Reading("b", 9, 9000), Reading("a", 11, 11000), Reading("a", 7, 19000),
                Reading("heartbeat", 0, 19000), Reading("heartbeat", 0, 19000),
                Reading("heartbeat", 0, 19000),
                Reading("a", 12, 2000), Reading("b", 13, 8000), Reading("a", 14, 14000),
                Reading("a", 15, 3000)]  # fmt: skip
    late = OutputTag("too-late")
    replayed = env.from_collection(readings).map(ReplayWithPause())
    windowed = (
        replayed.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ReadingTime())
        )
        .start_new_chain()
        .filter(lambda r: r.value >= 0)
        .key_by(lambda r: r.sensor)
        .window(TumblingEventTimeWindows.of(Time.seconds(5)))
        .allowed_lateness(10000)
        .side_output_late_data(late)
        .process(Firing(), Types.STRING())
    )
    windowed.print()
    windowed.get_side_output(late).map(
        lambda r: f"too late: {r.sensor} {r.value} at {r.ts}"
    ).print()
    env.execute("allowed lateness")


if __name__ == "__main__":
    main()
