"""Partitioning between operators of other parallelisms: custom, rebalance, shuffle, broadcast."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, Partitioner, RuntimeContext


class ModuloPartitioner(Partitioner):
    def partition(self, key, num_partitions):
        return key % num_partitions


class WhereAmI(MapFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.index = runtime_context.get_index_of_this_subtask()
        self.count = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return f"{self.label} {value} at {self.index} of {self.count}"


class Count(MapFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return f"{self.label} {value} (one of {self.count})"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)

    numbers = env.from_collection(list(range(1, 9)), type_info=Types.INT())

    numbers.partition_custom(ModuloPartitioner(), lambda n: n).map(
        WhereAmI("custom"), output_type=Types.STRING()
    ).set_parallelism(3).print().set_parallelism(1)

    numbers.partition_custom(lambda key, n: 0 if key < 5 else 1, lambda n: n).map(
        WhereAmI("split"), output_type=Types.STRING()
    ).print().set_parallelism(1)

    numbers.rebalance().map(Count("rebalanced"), output_type=Types.STRING()).set_parallelism(
        3
    ).print().set_parallelism(1)

    numbers.shuffle().map(Count("shuffled"), output_type=Types.STRING()).set_parallelism(
        4
    ).print().set_parallelism(1)

    numbers.filter(lambda n: n % 4 == 0).broadcast().map(
        Count("broadcast"), output_type=Types.STRING()
    ).set_parallelism(3).print().set_parallelism(1)

    numbers.map(lambda n: n * 10, output_type=Types.INT()).forward().map(
        Count("forwarded"), output_type=Types.STRING()
    ).print().set_parallelism(1)

    numbers.rescale().map(Count("rescaled"), output_type=Types.STRING()).set_parallelism(
        4
    ).print().set_parallelism(1)

    totals = (
        numbers.map(
            lambda n: ("even" if n % 2 == 0 else "odd", n),
            output_type=Types.TUPLE([Types.STRING(), Types.INT()]),
        )
        .rebalance()
        .key_by(lambda t: t[0], key_type=Types.STRING())
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .filter(lambda t: t[1] == (20 if t[0] == "even" else 16))
    )
    totals.print().set_parallelism(1)

    env.execute("partitioning")


if __name__ == "__main__":
    main()
