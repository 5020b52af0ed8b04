"""Whole numbers returned under a declared DOUBLE, as the next function and the sink see them."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
    doubled = numbers.map(lambda n: n * 2, output_type=Types.DOUBLE())
    doubled.print()
    doubled.key_by(lambda d: "all").map(
        lambda d: "after key_by " + repr(d), output_type=Types.STRING()
    ).print()

    pairs = numbers.map(
        lambda n: ("k", n), output_type=Types.TUPLE([Types.STRING(), Types.DOUBLE()])
    )
    pairs.key_by(lambda p: p[0]).sum(1).map(
        lambda p: "sum " + repr(p), output_type=Types.STRING()
    ).print()

    rows = numbers.map(
        lambda n: Row(n=n, half=n / 2),
        output_type=Types.ROW_NAMED(["n", "half"], [Types.DOUBLE(), Types.DOUBLE()]),
    )
    rows.print()
    rows.key_by(lambda r: r.n > 1).map(
        lambda r: "row " + repr(r), output_type=Types.STRING()
    ).print()

    env.execute("whole numbers as doubles")


if __name__ == "__main__":
    main()
