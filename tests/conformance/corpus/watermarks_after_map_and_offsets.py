"""Watermarks assigned after a map, idleness, and event-time windows with an offset."""

from pyflink.common import Duration, Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, ProcessWindowFunction, ReduceFunction
from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows


class ParseTrade(MapFunction):
    def map(self, line):
        symbol, price, ts = line.split(",")
        return Row(symbol=symbol, price=int(price), ts=int(ts))


class TradeTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class HighestTrade(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 if value1.price >= value2.price else value2


class StampWindow(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        window = context.window()
        for trade in elements:
            span = f"[{window.start}, {window.end})"
            yield f"{self.label} {key} {span} top {trade.price} at {trade.ts}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    lines = ["ACME,10,1000", "INIT,7,1500", "ACME,14,2500", "ACME,9,3400", "INIT,11,4200",
             "ACME,13,6100", "INIT,8,7700", "ACME,20,8900", "INIT,12,11000"]  # fmt: skip
    trade_type = Types.ROW_NAMED(
        ["symbol", "price", "ts"], [Types.STRING(), Types.INT(), Types.LONG()]
    )
    trades = env.from_collection(lines, type_info=Types.STRING()).map(
        ParseTrade(), output_type=trade_type
    )
    bounded = trades.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
        .with_idleness(Duration.of_seconds(30))
        .with_timestamp_assigner(TradeTime())
    )
    bounded.key_by(lambda t: t.symbol, key_type=Types.STRING()).window(
        TumblingEventTimeWindows.of(Time.seconds(4), Time.seconds(1))
    ).reduce(HighestTrade(), StampWindow("tumbling+1s"), output_type=Types.STRING()).print()

    monotonous = trades.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(TradeTime())
    )
    monotonous.key_by(lambda t: t.symbol, key_type=Types.STRING()).window(
        SlidingEventTimeWindows.of(Time.seconds(6), Time.seconds(3), Time.milliseconds(500))
    ).reduce(HighestTrade(), StampWindow("sliding+500ms"), output_type=Types.STRING()).print()
    env.execute("watermarks after a map")


if __name__ == "__main__":
    main()
