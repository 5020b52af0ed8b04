"""Count windows: tumbling and sliding per key, and a count window over all records."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import CountTumblingWindowAssigner


class Average(ProcessWindowFunction):
    def process(self, key, context, elements):
        values = [e[1] for e in elements]
        yield f"{key} avg of {values} = {sum(values) / len(values)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    readings = [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20), ("a", 4), ("b", 30),
                ("a", 5), ("b", 40), ("a", 6)]  # fmt: skip
    stream = env.from_collection(readings, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    keyed = stream.key_by(lambda r: r[0])

    keyed.count_window(3).reduce(lambda a, b: (a[0], a[1] + b[1])).map(
        lambda r: f"tumbling {r}"
    ).print()
    keyed.count_window(3, 2).process(Average(), Types.STRING()).map(
        lambda r: f"sliding {r}"
    ).print()
    keyed.window(CountTumblingWindowAssigner.of(2)).reduce(
        lambda a, b: (a[0], max(a[1], b[1]))
    ).map(lambda r: f"assigner {r}").print()
    stream.window_all(CountTumblingWindowAssigner.of(4)).reduce(
        lambda a, b: ("all", a[1] + b[1])
    ).map(lambda r: f"all {r}").print()
    env.execute("count windows")


if __name__ == "__main__":
    main()
