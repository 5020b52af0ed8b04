"""Declared types as the script and the next function see them: collected, chained, after key_by."""

from decimal import Decimal

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment


def collect(env, label, values, type_info):
    source = env.from_collection(["go"], type_info=Types.STRING())
    stream = source.map(lambda _: values, output_type=type_info)
    print(label, [repr(v) for v in stream.execute_and_collect()])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    collect(env, "float", 0.1, Types.FLOAT())
    collect(env, "decimal", Decimal("1.10"), Types.BIG_DEC())
    collect(env, "list", [1, 2], Types.LIST(Types.INT()))
    collect(env, "map", {"a": 1.5}, Types.MAP(Types.STRING(), Types.DOUBLE()))
    collect(env, "basic array", ["x", None], Types.BASIC_ARRAY(Types.STRING()))
    collect(env, "int array", [3, 4], Types.PRIMITIVE_ARRAY(Types.INT()))
    collect(env, "byte array", bytes([1, 2, 255]), Types.PRIMITIVE_ARRAY(Types.BYTE()))
    collect(env, "tuple", ("a", 0.1), Types.TUPLE([Types.STRING(), Types.FLOAT()]))
    collect(env, "row", Row("a", 1), Types.ROW([Types.STRING(), Types.INT()]))
    collect(
        env,
        "named row",
        Row(k="a", v=1),
        Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()]),
    )
    collect(env, "pickled", {"any": (1, 2)}, Types.PICKLED_BYTE_ARRAY())

    numbers = env.from_collection([0.1, 2.5], type_info=Types.DOUBLE())
    as_float = numbers.map(lambda d: d, output_type=Types.FLOAT())
    as_float.map(lambda f: "chained " + repr(f), output_type=Types.STRING()).print()
    as_float.key_by(lambda f: "k").map(
        lambda f: "after key_by " + repr(f), output_type=Types.STRING()
    ).print()
    pairs = numbers.map(
        lambda d: ("k", d), output_type=Types.TUPLE([Types.STRING(), Types.FLOAT()])
    )
    pairs.key_by(lambda p: p[0]).sum(1).map(
        lambda p: "float sum " + repr(p), output_type=Types.STRING()
    ).print()
    env.execute("chained types")


if __name__ == "__main__":
    main()
