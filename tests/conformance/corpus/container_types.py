"""Lists, maps, arrays, pickled values, nested named rows and None fields, printed both ways."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

ADDRESS = Types.ROW_NAMED(["city", "zip"], [Types.STRING(), Types.INT()])
CUSTOMER = Types.ROW_NAMED(
    ["name", "address", "tags", "scores", "codes", "counts"],
    [
        Types.STRING(),
        ADDRESS,
        Types.LIST(Types.STRING()),
        Types.BASIC_ARRAY(Types.INT()),
        Types.PRIMITIVE_ARRAY(Types.LONG()),
        Types.MAP(Types.STRING(), Types.INT()),
    ],
)


def describe(customer):
    print("got", customer)
    return (
        f"{customer.name} lives in {customer.address.city} ({customer.address['zip']}), "
        f"tags={customer.tags} scores={customer.scores} codes={customer.codes} "
        f"counts={sorted(customer.counts.items())}"
    )


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    customers = env.from_collection(
        [
            Row("ann", Row("Oslo", 150), ["new", "vip"], [1, 2, 3], [10, 20], {"a": 1}),
            Row("bob", Row(None, 7), [], [None, 5], [], {}),
        ],
        type_info=CUSTOMER,
    )
    customers.print()
    customers.map(describe, output_type=Types.STRING()).print()

    customers.map(
        lambda c: Row(c.name, c.address), output_type=Types.ROW([Types.STRING(), ADDRESS])
    ).print()

    lists = env.from_collection(["1,2", "3"], type_info=Types.STRING()).map(
        lambda s: [int(x) for x in s.split(",")], output_type=Types.LIST(Types.INT())
    )
    lists.print()
    lists.map(
        lambda xs: "sum of " + str(xs) + " is " + str(sum(xs)), output_type=Types.STRING()
    ).print()

    maps = env.from_collection(["k"], type_info=Types.STRING()).map(
        lambda s: {s: 1}, output_type=Types.MAP(Types.STRING(), Types.LONG())
    )
    maps.print()
    maps.map(lambda m: "map " + str(m), output_type=Types.STRING()).print()

    pickled = env.from_collection([1, 2], type_info=Types.INT()).map(
        lambda n: {"set": {n}} if n == 1 else (n, "x"), output_type=Types.PICKLED_BYTE_ARRAY()
    )
    pickled.map(lambda v: "pickled " + repr(v), output_type=Types.STRING()).print()

    pairs = env.from_collection(
        [Row("x", None), Row(None, 2)], type_info=Types.ROW([Types.STRING(), Types.INT()])
    )
    pairs.print()
    pairs.map(lambda r: "pair " + str(r), output_type=Types.STRING()).print()

    env.execute("container types")


if __name__ == "__main__":
    main()
