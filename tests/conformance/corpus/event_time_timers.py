"""Event-time timers: a custom TimestampAssigner, bounded out-of-orderness, a timeout per key."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Login:
    def __init__(self, user, ok, ts):
        self.user = user
        self.ok = ok
        self.ts = ts


class LoginTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class FailedLogins(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.failures = runtime_context.get_state(ValueStateDescriptor("failures", Types.INT()))

    def process_element(self, value, ctx):
        failures = self.failures.value() or 0
        if value.ok:
            self.failures.clear()
            yield f"{value.user} logged in at {ctx.timestamp()}"
            return
        self.failures.update(failures + 1)
        ctx.timer_service().register_event_time_timer(value.ts + 5000)

    def on_timer(self, timestamp, ctx):
        failures = self.failures.value()
        if failures:
            yield f"{ctx.get_current_key()} had {failures} failed logins, timer at {timestamp}"
            self.failures.clear()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    logins = env.from_collection(
        [
            Login("ann", False, 1000),
            Login("bob", True, 1500),
            Login("ann", False, 2000),
            Login("ann", False, 1800),
            Login("bob", False, 3000),
            Login("cid", False, 4000),
            Login("bob", True, 3500),
        ]
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_seconds(1)
    ).with_timestamp_assigner(LoginTime())
    logins.assign_timestamps_and_watermarks(strategy).key_by(lambda login: login.user).process(
        FailedLogins(), output_type=Types.STRING()
    ).print()
    env.execute("failed logins")


if __name__ == "__main__":
    main()
