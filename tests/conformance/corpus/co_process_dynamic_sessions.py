"""A CoProcessFunction over two streams, and dynamic processing-time sessions on a count trigger."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import CoProcessFunction
from pyflink.datastream.window import (
    CountTrigger,
    DynamicProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
)


class LongGap(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return 3_600_000 if element[0] == "a" else 7_200_000


class Tag(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield f"left {value}"

    def process_element2(self, value, ctx):
        if value % 2 == 0:
            yield f"right even {value}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    events = [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5)]
    stream = env.from_collection(events, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    stream.key_by(lambda e: e[0]).window(
        DynamicProcessingTimeSessionWindows.with_dynamic_gap(LongGap())
    ).trigger(CountTrigger.of(2)).reduce(lambda x, y: (x[0], x[1] + y[1])).map(
        lambda e: f"session {e[0]} {e[1]}"
    ).print()

    words = env.from_collection(["x", "y"], type_info=Types.STRING())
    numbers = env.from_collection([1, 2, 3, 4], type_info=Types.INT())
    words.connect(numbers).process(Tag(), output_type=Types.STRING()).print()
    env.execute("co-process and dynamic sessions")


if __name__ == "__main__":
    main()
