"""Inactivity timeouts: each event moves the key's event-time timer, and a timer can re-arm."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment, TimeDomain
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Click:
    def __init__(self, user, page, ts):
        self.user = user
        self.page = page
        self.ts = ts


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class Inactivity(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline", Types.LONG()))
        self.reminders = runtime_context.get_state(ValueStateDescriptor("reminders", Types.INT()))

    def process_element(self, value, ctx):
        previous = self.deadline.value()
        if previous is not None:
            ctx.timer_service().delete_event_time_timer(previous)
        deadline = ctx.timestamp() + 3000
        ctx.timer_service().register_event_time_timer(deadline)
        self.deadline.update(deadline)
        user = ctx.get_current_key()
        yield f"{user} clicked {value.page} at {ctx.timestamp()}, idle at {deadline}"

    def on_timer(self, timestamp, ctx):
        watermark = ctx.timer_service().current_watermark()
        domain = "event" if ctx.time_domain() == TimeDomain.EVENT_TIME else "processing"
        reminders = (self.reminders.value() or 0) + 1
        self.reminders.update(reminders)
        yield (
            f"{ctx.get_current_key()} idle: {domain} timer {timestamp}, ctx.timestamp() "
            f"{ctx.timestamp()}, watermark reached it: {watermark >= timestamp}, "
            f"reminder {reminders}"
        )
        if reminders < 2:
            ctx.timer_service().register_event_time_timer(timestamp + 1000)
            self.deadline.update(timestamp + 1000)
        else:
            self.deadline.clear()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    clicks = [Click("ann", "home", 1000), Click("bob", "home", 1200), Click("ann", "shop", 2500),
              Click("ann", "cart", 2000), Click("bob", "help", 6000), Click("cid", "home", 7000),
              Click("ann", "pay", 4000)]  # fmt: skip
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(500)
    ).with_timestamp_assigner(ClickTime())
    env.from_collection(clicks).assign_timestamps_and_watermarks(strategy).key_by(
        lambda c: c.user, key_type=Types.STRING()
    ).process(Inactivity(), output_type=Types.STRING()).print()
    env.execute("inactivity timers")


if __name__ == "__main__":
    main()
