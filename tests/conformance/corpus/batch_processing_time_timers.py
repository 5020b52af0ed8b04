"""BATCH mode: processing-time and event-time timers fire at the end of each key's input."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class FirstField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Totals(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        if self.total.value() is None:  # one processing-time timer per key
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 60_000)
        self.total.update((self.total.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(value[1] + 10)

    def on_timer(self, timestamp, ctx):
        kind = "processing" if ctx.time_domain() == ctx.time_domain().PROCESSING_TIME else "event"
        if kind == "event":
            yield f"{ctx.get_current_key()} event-time timer at {timestamp}: {self.total.value()}"
        else:
            yield f"{ctx.get_current_key()} processing-time timer: {self.total.value()}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)

    rows = [("a", 1, 5), ("b", 2, 7), ("a", 3, 1), ("c", 4, 2), ("b", 8, 3)]
    stream = env.from_collection(
        rows, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FirstField())
    )
    stream.key_by(lambda r: r[0]).process(Totals(), output_type=Types.STRING()).print()
    env.execute("batch timers")


if __name__ == "__main__":
    main()
