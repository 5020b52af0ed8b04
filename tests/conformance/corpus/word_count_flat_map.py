"""Word count: flat_map with yield, key_by with a lambda, reduce on tuples."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

TEXT = [
    "to be or not to be",
    "that is the question",
    "whether tis nobler in the mind to suffer",
    "the slings and arrows of outrageous fortune",
]


def split(line):
    for word in line.split():
        yield word, 1


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    counts = (
        env.from_collection(TEXT, type_info=Types.STRING())
        .flat_map(split, output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    counts.print()
    env.execute("word count")


if __name__ == "__main__":
    main()
