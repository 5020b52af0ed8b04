"""Streams of one basic type each, printed by the print sink and as str() in a map."""

import datetime
from decimal import Decimal

from pyflink.common import Instant, Types
from pyflink.datastream import StreamExecutionEnvironment


def both(env, values, type_info, label):
    stream = env.from_collection(values, type_info=type_info)
    show(stream, label)


def show(stream, label):
    stream.print()
    stream.map(lambda v: f"{label} {v!s} {type(v).__name__}", output_type=Types.STRING()).print()


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    both(env, [0.1, 1e10, 3.0, -2.5e-7], Types.FLOAT(), "float")
    both(env, [Decimal("12.50"), Decimal("1E+3"), Decimal("-0.0000001")], Types.BIG_DEC(), "dec")
    big = [123456789012345678901234567890, -(2**70)]
    env.from_collection(big, type_info=Types.BIG_INT()).print()
    both(env, [2**62, -(2**63)], Types.LONG(), "long")
    small = env.from_collection([7, -128], type_info=Types.INT())
    show(small.map(lambda n: n, output_type=Types.BYTE()), "byte")
    show(small.map(lambda n: n * 3, output_type=Types.SHORT()), "short")
    both(env, ["", "naïve ☃", "tab\there"], Types.STRING(), "string")
    both(env, [datetime.date(2024, 3, 1)], Types.SQL_DATE(), "date")
    both(env, [datetime.time(8, 5, 3)], Types.SQL_TIME(), "time")
    both(
        env,
        [datetime.datetime(2024, 3, 1, 12, 30, 5, 123000), datetime.datetime(2024, 3, 1)],
        Types.SQL_TIMESTAMP(),
        "timestamp",
    )
    both(env, [Instant.of_epoch_milli(1709296205123)], Types.INSTANT(), "instant")

    nested = env.from_collection(
        [("a", (1, 2.5)), ("b", (3, -0.0))],
        type_info=Types.TUPLE([Types.STRING(), Types.TUPLE([Types.INT(), Types.DOUBLE()])]),
    )
    nested.print()
    nested.map(lambda t: "nested " + str(t), output_type=Types.STRING()).print()

    env.execute("basic types print sink")


if __name__ == "__main__":
    main()
