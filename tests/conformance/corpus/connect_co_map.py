"""connect: CoMapFunction and CoFlatMapFunction over two streams of different types."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import CoFlatMapFunction, CoMapFunction


class Describe(CoMapFunction):
    def map1(self, value):
        return f"number {value}"

    def map2(self, value):
        return f"word {value.upper()}"


class Spread(CoFlatMapFunction):
    def flat_map1(self, value):
        for i in range(value):
            yield f"tick {value}.{i}"

    def flat_map2(self, value):
        yield from (f"letter {c}" for c in value)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
    words = env.from_collection(["ab", "c"], type_info=Types.STRING())
    numbers.connect(words).map(Describe(), output_type=Types.STRING()).print()
    numbers.connect(words).flat_map(Spread(), output_type=Types.STRING()).print()
    env.execute("connect")


if __name__ == "__main__":
    main()
