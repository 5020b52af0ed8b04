"""Fraud detection with ValueState (with TTL): a small amount followed by a large one."""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import StateTtlConfig, ValueStateDescriptor

SMALL = 1.0
LARGE = 500.0


class Transaction:
    def __init__(self, account, amount):
        self.account = account
        self.amount = amount


class FraudDetector(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        ttl = (
            StateTtlConfig.new_builder(Time.minutes(1))
            .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
            .build()
        )
        descriptor = ValueStateDescriptor("flag", Types.BOOLEAN())
        descriptor.enable_time_to_live(ttl)
        self.flag = runtime_context.get_state(descriptor)

    def process_element(self, tx, ctx):
        if self.flag.value():
            if tx.amount > LARGE:
                yield f"ALERT account={ctx.get_current_key()} amount={tx.amount}"
            self.flag.clear()
        if tx.amount < SMALL:
            self.flag.update(True)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    transactions = env.from_collection(
        [
            Transaction(1, 188.23),
            Transaction(2, 0.5),
            Transaction(2, 725.0),
            Transaction(3, 0.1),
            Transaction(3, 12.0),
            Transaction(3, 900.0),
            Transaction(1, 0.9),
            Transaction(1, 501.0),
        ]
    )
    transactions.key_by(lambda t: t.account).process(
        FraudDetector(), output_type=Types.STRING()
    ).print()
    env.execute("fraud detection")


if __name__ == "__main__":
    main()
