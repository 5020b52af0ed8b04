"""Tumbling event-time windows: reduce with a ProcessWindowFunction that sees the window."""

from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class WaterSensor:
    def __init__(self, id, ts, vc):
        self.id = id
        self.ts = ts
        self.vc = vc


class SensorTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts * 1000


class Report(ProcessWindowFunction):
    def process(self, key, context, elements):
        sensors = list(elements)
        window = context.window()
        print(f"window [{window.start}, {window.end}) of {key} has {len(sensors)} readings")
        yield Row(id=key, start=window.start, end=window.end, vc=sum(s.vc for s in sensors))


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    sensors = env.from_collection(
        [
            WaterSensor("s1", 1, 1),
            WaterSensor("s1", 2, 2),
            WaterSensor("s2", 3, 3),
            WaterSensor("s1", 11, 11),
            WaterSensor("s2", 12, 12),
            WaterSensor("s1", 9, 9),
            WaterSensor("s1", 25, 25),
        ]
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(5)
        ).with_timestamp_assigner(SensorTime())
    )
    sensors.key_by(lambda s: s.id).window(TumblingEventTimeWindows.of(Time.seconds(10))).process(
        Report(),
        Types.ROW_NAMED(
            ["id", "start", "end", "vc"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()]
        ),
    ).print()
    env.execute("tumbling windows")


if __name__ == "__main__":
    main()
