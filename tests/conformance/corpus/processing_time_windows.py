"""Processing-time windows (tumbling, sliding, session) that fire on a count trigger.

The windows are long, so every record of a run falls into the same windows; a purging count
trigger fires them. Printed lines carry no wall-clock time.
"""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import (
    CountTrigger,
    ProcessingTimeSessionWindows,
    PurgingTrigger,
    SlidingProcessingTimeWindows,
    TumblingProcessingTimeWindows,
)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    orders = [("tea", 2), ("cake", 1), ("tea", 3), ("tea", 1), ("cake", 4), ("tea", 5),
              ("cake", 2), ("cake", 1)]  # fmt: skip
    stream = env.from_collection(orders, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = stream.key_by(lambda o: o[0])

    keyed.window(TumblingProcessingTimeWindows.of(Time.days(3650))).trigger(
        PurgingTrigger.of(CountTrigger.of(2))
    ).reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda o: f"tumbling {o}").print()

    keyed.window(SlidingProcessingTimeWindows.of(Time.days(3650), Time.days(1825))).trigger(
        PurgingTrigger.of(CountTrigger.of(3))
    ).reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda o: f"sliding {o}").print()

    keyed.window(ProcessingTimeSessionWindows.with_gap(Time.hours(1))).trigger(
        CountTrigger.of(4)
    ).reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda o: f"session {o}").print()

    env.execute("processing-time windows")


if __name__ == "__main__":
    main()
