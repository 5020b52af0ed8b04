"""Session windows that merge when a late-arriving event bridges two sessions."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    ReduceFunction,
    WindowFunction,
)
from pyflink.datastream.window import EventTimeSessionWindows


class Play:
    def __init__(self, player, points, ts):
        self.player = player
        self.points = points
        self.ts = ts


class PlayTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value.ts


class PointsAndPlays(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        return [accumulator[0] + value.points, accumulator[1] + 1]

    def get_result(self, accumulator):
        return f"{accumulator[0]} points in {accumulator[1]} plays"

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


class SessionSpan(ProcessWindowFunction):
    def process(self, key, context, results):
        window = context.window()
        for result in results:
            yield f"aggregate {key} session [{window.start}, {window.end}): {result}"


class BestPlay(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 if value1.points >= value2.points else value2


class BestOfSession(WindowFunction):
    def apply(self, key, window, inputs):
        for best in inputs:
            yield f"reduce {key} session [{window.start}, {window.end}) best {best.points}"


class Busy(ProcessAllWindowFunction):
    def process(self, context, plays):
        players = sorted({p.player for p in plays})
        window = context.window()
        yield f"all session [{window.start}, {window.end}) players {players}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    plays = [Play("kim", 3, 1000), Play("lee", 5, 1500), Play("kim", 4, 2000),
             Play("kim", 7, 9000), Play("lee", 1, 9500), Play("kim", 2, 5500),
             Play("lee", 6, 20000), Play("kim", 1, 21000), Play("lee", 2, 14500)]  # fmt: skip
    stream = env.from_collection(plays).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(60)
        ).with_timestamp_assigner(PlayTime())
    )
    sessions = EventTimeSessionWindows.with_gap(Time.seconds(4))
    keyed = stream.key_by(lambda p: p.player, key_type=Types.STRING())
    keyed.window(sessions).aggregate(
        PointsAndPlays(),
        SessionSpan(),
        accumulator_type=Types.LIST(Types.INT()),
        output_type=Types.STRING(),
    ).print()
    keyed.window(sessions).reduce(BestPlay(), BestOfSession(), output_type=Types.STRING()).print()
    stream.window_all(sessions).process(Busy(), Types.STRING()).print()
    env.execute("session merging")


if __name__ == "__main__":
    main()
