"""Declared scalar types printed by the print sink and in a map: decimals, times, floats."""

import datetime
from decimal import Decimal

from pyflink.common import Instant, Row, Types
from pyflink.datastream import StreamExecutionEnvironment

PRICE = Types.ROW_NAMED(
    ["sku", "price", "in_stock", "ratio", "weight"],
    [Types.STRING(), Types.BIG_DEC(), Types.BOOLEAN(), Types.DOUBLE(), Types.FLOAT()],
)
WHEN = Types.ROW_NAMED(
    ["day", "at", "stamp", "instant"],
    [Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP(), Types.INSTANT()],
)


def show(value):
    print("in map:", repr(value))
    return value


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    prices = env.from_collection(
        [
            Row(sku="p1", price=Decimal("12.50"), in_stock=True, ratio=0.1, weight=0.1),
            Row(sku="p2", price=Decimal("-3"), in_stock=False, ratio=1e20, weight=2.5),
            Row(sku="p3", price=Decimal("0.001"), in_stock=True, ratio=-0.0, weight=1e10),
        ],
        type_info=PRICE,
    )
    prices.print()
    prices.map(show, output_type=PRICE).map(
        lambda r: f"{r.sku}: {r.price} x {r.ratio} ({r.weight} kg) {r.in_stock}",
        output_type=Types.STRING(),
    ).print()

    doubles = env.from_collection(
        [0.1, 1e20, -0.0, 123.0, 1e-5, 1e7, 2.0**53], type_info=Types.DOUBLE()
    )
    doubles.print()
    doubles.map(lambda d: "double " + str(d), output_type=Types.STRING()).print()

    flags = env.from_collection([True, False], type_info=Types.BOOLEAN())
    flags.print()

    moments = env.from_collection(
        [
            Row(
                day=datetime.date(2024, 3, 1),
                at=datetime.time(12, 30, 5),
                stamp=datetime.datetime(2024, 3, 1, 12, 30, 5, 123000),
                instant=Instant.of_epoch_milli(1709296205123),
            ),
            Row(
                day=datetime.date(1999, 12, 31),
                at=datetime.time(0, 0, 0),
                stamp=datetime.datetime(1999, 12, 31, 23, 59, 59),
                instant=Instant.of_epoch_milli(0),
            ),
        ],
        type_info=WHEN,
    )
    moments.print()
    moments.map(show, output_type=WHEN).map(
        lambda r: f"{r.day} {r.at} | {r.stamp} | {r.instant} {r.instant.to_epoch_milli()}",
        output_type=Types.STRING(),
    ).print()

    env.execute("declared scalar types")


if __name__ == "__main__":
    main()
