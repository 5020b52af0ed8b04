"""STREAMING mode: a session timeout on a processing-time timer, and a reminder in event time.

The input ends long before the hour-long processing-time timeout, so only what the records
and the end of input (the final watermark) cause is printed.
"""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment, TimeDomain
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

HOUR = 3_600_000


class Clicked(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Timeout(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.clicks = runtime_context.get_state(ValueStateDescriptor("clicks", Types.INT()))

    def process_element(self, value, ctx):
        clicks = (self.clicks.value() or 0) + 1
        self.clicks.update(clicks)
        now = ctx.timer_service().current_processing_time()
        ctx.timer_service().register_processing_time_timer(now + HOUR)
        ctx.timer_service().register_event_time_timer(value[1] + 1000)
        yield f"{value[0]} click {clicks}"

    def on_timer(self, timestamp, ctx):
        if ctx.time_domain() == TimeDomain.PROCESSING_TIME:
            yield f"{ctx.get_current_key()} timed out"
        else:
            yield f"{ctx.get_current_key()} reminder at {timestamp} after {self.clicks.value()}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    clicks = [("ann", 1000), ("bob", 1200), ("ann", 1500), ("ann", 5000)]
    env.from_collection(
        clicks, type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Clicked())
    ).key_by(lambda c: c[0]).process(Timeout(), output_type=Types.STRING()).print()
    env.execute("processing-time timeout")


if __name__ == "__main__":
    main()
