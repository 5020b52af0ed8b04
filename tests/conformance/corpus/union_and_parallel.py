"""union of three streams, work at parallelism 2 with rebalance, a print sink at parallelism 1."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, RuntimeContext


class Tag(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return f"{value} (one of {self.parallelism} taggers)"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)

    a = env.from_collection(["a1", "a2", "a3"], type_info=Types.STRING())
    b = env.from_collection(["b1", "b2"], type_info=Types.STRING())
    c = env.from_collection(["c1"], type_info=Types.STRING())
    merged = a.union(b, c).rebalance().map(Tag(), output_type=Types.STRING())
    merged.print().set_parallelism(1)

    counts = (
        a.union(b)
        .map(lambda s: (s[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda t: t[0])
        .sum(1)
    )
    counts.filter(lambda t: t[1] >= 2).map(
        lambda t: f"{t[0]} seen {t[1]} times", output_type=Types.STRING()
    ).print().set_parallelism(1)
    env.execute("union")


if __name__ == "__main__":
    main()
