"""The watermark values functions see: before any watermark, and at the end of the input."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Watch(KeyedProcessFunction):
    def process_element(self, value, ctx):
        watermark = ctx.timer_service().current_watermark()
        ctx.timer_service().register_event_time_timer(value[1] + 1000)
        yield f"element {value} at {ctx.timestamp()} sees watermark {watermark}"

    def on_timer(self, timestamp, ctx):
        watermark = ctx.timer_service().current_watermark()
        yield f"timer {ctx.get_current_key()} {timestamp} sees watermark {watermark}"


class WindowWatch(ProcessWindowFunction):
    def process(self, key, context, elements):
        count = len(list(elements))
        yield (
            f"window {key} {context.window()} of {count} sees watermark "
            f"{context.current_watermark()}"
        )


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    readings = env.from_collection(
        [("p", 1500), ("q", 2500), ("p", 7000)],
        type_info=Types.TUPLE([Types.STRING(), Types.LONG()]),
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.no_watermarks().with_timestamp_assigner(ReadingTime())
    )
    keyed = readings.key_by(lambda r: r[0], key_type=Types.STRING())
    keyed.process(Watch(), Types.STRING()).print()
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(5))).process(
        WindowWatch(), Types.STRING()
    ).print()
    env.execute("watermark values")


if __name__ == "__main__":
    main()
