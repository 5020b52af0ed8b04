"""A rich MapFunction: open() reads the RuntimeContext and sets up a lookup table."""

from pyflink.common import Types
from pyflink.datastream import RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction


class Enrich(MapFunction):
    def __init__(self, prefix):
        self.prefix = prefix
        self.names = None

    def open(self, runtime_context: RuntimeContext):
        print(
            "open subtask",
            runtime_context.get_index_of_this_subtask(),
            "of",
            runtime_context.get_number_of_parallel_subtasks(),
        )
        self.names = {1: "one", 2: "two", 3: "three"}

    def map(self, value):
        return f"{self.prefix}-{value}-{self.names.get(value, 'many')}"

    def close(self):
        print("close", self.prefix)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    env.from_collection([1, 2, 3, 4], type_info=Types.INT()).map(
        Enrich("n"), output_type=Types.STRING()
    ).print()
    env.execute("rich function")


if __name__ == "__main__":
    main()
