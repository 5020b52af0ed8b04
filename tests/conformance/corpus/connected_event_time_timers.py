"""Two event-time streams connected by key: timers fire on the slower input's watermark."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class MatchPayment(KeyedCoProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.order = runtime_context.get_state(ValueStateDescriptor("order", Types.LONG()))
        self.paid = runtime_context.get_state(ValueStateDescriptor("paid", Types.LONG()))

    def process_element1(self, order, ctx):
        self.order.update(ctx.timestamp())
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5000)
        yield f"order {ctx.get_current_key()} at {ctx.timestamp()}"

    def process_element2(self, payment, ctx):
        self.paid.update(ctx.timestamp())
        yield f"payment {ctx.get_current_key()} at {ctx.timestamp()}"

    def on_timer(self, timestamp, ctx):
        order, paid = self.order.value(), self.paid.value()
        if paid is not None and paid <= timestamp:
            yield f"{ctx.get_current_key()} paid {paid - order} ms after ordering"
        else:
            yield f"{ctx.get_current_key()} unpaid at {timestamp}"
        self.order.clear()
        self.paid.clear()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    row = Types.TUPLE([Types.STRING(), Types.LONG()])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_seconds(30)
    ).with_timestamp_assigner(EventTime())
    orders = env.from_collection(
        [("o1", 1000), ("o2", 2000), ("o3", 4000), ("o4", 9000)], type_info=row
    ).assign_timestamps_and_watermarks(strategy)
    payments = env.from_collection(
        [("o2", 3500), ("o1", 8000), ("o4", 9500), ("o3", 8500)], type_info=row
    ).assign_timestamps_and_watermarks(strategy)
    orders.connect(payments).key_by(lambda o: o[0], lambda p: p[0]).process(
        MatchPayment(), Types.STRING()
    ).print()
    env.execute("connected timers")


if __name__ == "__main__":
    main()
