"""Event-time session windows: a fixed gap, and a dynamic gap per user."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import WindowFunction
from pyflink.datastream.window import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
)


class ActivityTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class GapPerUser(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return 1000 if element[0] == "ann" else 5000


class Session(WindowFunction):
    def apply(self, key, window, inputs):
        events = [e[1] for e in inputs]
        yield f"{key} session [{window.start}, {window.end}) events={len(events)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    activity = [("ann", 0), ("ann", 800), ("bob", 1000), ("ann", 2500), ("ann", 3000),
                ("bob", 4000), ("ann", 9000), ("bob", 12000)]  # fmt: skip
    stream = env.from_collection(
        activity, type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ActivityTime())
    )
    keyed = stream.key_by(lambda a: a[0])
    keyed.window(EventTimeSessionWindows.with_gap(Time.seconds(2))).apply(
        Session(), Types.STRING()
    ).map(lambda s: "fixed " + s).print()
    keyed.window(DynamicEventTimeSessionWindows.with_dynamic_gap(GapPerUser())).apply(
        Session(), Types.STRING()
    ).map(lambda s: "dynamic " + s).print()
    env.execute("sessions")


if __name__ == "__main__":
    main()
