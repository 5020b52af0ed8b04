"""Fraud detection, the shape of Flink's DataStream tutorial: transactions (a dataclass of the
script) keyed by account; a keyed process function keeps a flag and a timer in value state,
alerts on a large amount right after a small one, deletes the timer when it resets and
``print()``s when the timer fires at the end of input (an event-time timer a minute after the
small amount; ``on_timer`` is a generator, as PyFlink needs)."""

from dataclasses import dataclass

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor

SMALL_AMOUNT = 1.00
LARGE_AMOUNT = 500.00
ONE_MINUTE = 60 * 1000


@dataclass
class Transaction:
    account_id: int
    timestamp: int
    amount: float


class Alert:
    def __init__(self, account_id):
        self.id = account_id

    def __str__(self):
        return f"Alert{{id={self.id}}}"


class FraudDetector(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.flag_state = runtime_context.get_state(ValueStateDescriptor("flag", Types.BOOLEAN()))
        self.timer_state = runtime_context.get_state(
            ValueStateDescriptor("timer-state", Types.LONG())
        )

    def process_element(self, transaction, ctx: "KeyedProcessFunction.Context"):
        last_transaction_was_small = self.flag_state.value()
        if last_transaction_was_small is not None:
            if transaction.amount > LARGE_AMOUNT:
                yield str(Alert(transaction.account_id))
            self.clean_up(ctx)
        if transaction.amount < SMALL_AMOUNT:
            self.flag_state.update(True)
            timer = ctx.timestamp() + ONE_MINUTE
            ctx.timer_service().register_event_time_timer(timer)
            self.timer_state.update(timer)

    def on_timer(self, timestamp, ctx):
        print("timer fired", ctx.get_current_key(), timestamp)
        self.timer_state.clear()
        self.flag_state.clear()
        yield from []

    def clean_up(self, ctx):
        timer = self.timer_state.value()
        ctx.timer_service().delete_event_time_timer(timer)
        self.timer_state.clear()
        self.flag_state.clear()


class TxTimestamps(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.timestamp


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    txs = [
        Transaction(1, 1000, 188.23),
        Transaction(2, 2000, 0.5),
        Transaction(3, 3000, 0.3),
        Transaction(2, 4000, 712.0),
        Transaction(3, 70000, 900.0),
        Transaction(4, 71000, 0.1),
        Transaction(4, 72000, 0.2),
        Transaction(4, 73000, 501.0),
        Transaction(1, 200000, 0.01),
    ]
    ds = env.from_collection(txs).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(1)
        ).with_timestamp_assigner(TxTimestamps())
    )
    alerts = ds.key_by(lambda t: t.account_id).process(FraudDetector()).name("fraud-detector")
    alerts.print()
    env.execute("Fraud Detection")


if __name__ == "__main__":
    main()
