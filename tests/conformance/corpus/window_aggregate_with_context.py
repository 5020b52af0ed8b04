"""A window aggregate with a ProcessWindowFunction that reads the window and the watermark."""

from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class Order:
    def __init__(self, shop, amount, ts):
        self.shop = shop
        self.amount = amount
        self.ts = ts


class OrderTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class AverageAmount(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value.amount, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, averages):
        window = context.window()
        average = next(iter(averages))
        passed = context.current_watermark() >= window.max_timestamp()
        print(f"{key}: {window} max {window.max_timestamp()} watermark passed end: {passed}")
        yield Row(shop=key, start=window.start, end=window.end, average=average)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    orders = [Order("north", 10, 1000), Order("south", 25, 1500), Order("north", 30, 4000),
              Order("north", 5, 6500), Order("south", 15, 3000), Order("south", 40, 9900),
              Order("north", 12, 12000)]  # fmt: skip
    stream = env.from_collection(orders).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(2)
        ).with_timestamp_assigner(OrderTime())
    )
    stream.key_by(lambda o: o.shop, key_type=Types.STRING()).window(
        TumblingEventTimeWindows.of(Time.seconds(5))
    ).aggregate(
        AverageAmount(),
        WithWindow(),
        accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]),
        output_type=Types.ROW_NAMED(
            ["shop", "start", "end", "average"],
            [Types.STRING(), Types.LONG(), Types.LONG(), Types.DOUBLE()],
        ),
    ).print()
    env.execute("window aggregate with context")


if __name__ == "__main__":
    main()
