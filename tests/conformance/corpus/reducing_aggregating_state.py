"""ReducingState and AggregatingState with TTL: running max and running average per key."""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
)


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class Stats(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        ttl = StateTtlConfig.new_builder(Time.seconds(600)).build()
        highest = ReducingStateDescriptor("highest", lambda a, b: max(a, b), Types.INT())
        highest.enable_time_to_live(ttl)
        average = AggregatingStateDescriptor(
            "average", Average(), Types.TUPLE([Types.INT(), Types.INT()])
        )
        average.enable_time_to_live(ttl)
        self.highest = runtime_context.get_reducing_state(highest)
        self.average = runtime_context.get_aggregating_state(average)

    def process_element(self, value, ctx):
        self.highest.add(value[1])
        self.average.add(value[1])
        yield f"{value[0]}: max={self.highest.get()} avg={self.average.get():.2f}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    temps = [("kitchen", 21), ("garage", 9), ("kitchen", 24), ("kitchen", 19), ("garage", 12)]
    env.from_collection(temps, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).key_by(
        lambda t: t[0]
    ).process(Stats(), output_type=Types.STRING()).print()
    env.execute("reducing and aggregating state")


if __name__ == "__main__":
    main()
