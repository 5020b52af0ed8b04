"""Row behaviours users rely on: kinds, access by name and position, as_dict, `in`, equality."""

from pyflink.common import Row, Types
from pyflink.common.types import RowKind
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import FilterFunction, FlatMapFunction

ORDER = Types.ROW_NAMED(["user", "item", "qty"], [Types.STRING(), Types.STRING(), Types.INT()])
CHANGE = Types.ROW_NAMED(["user", "qty"], [Types.STRING(), Types.INT()])


class ToChanges(FlatMapFunction):
    def flat_map(self, value):
        before = Row(user=value["user"], qty=value[2] - 1)
        before.set_row_kind(RowKind.UPDATE_BEFORE)
        yield before
        after = Row(user=value.user, qty=value.qty)
        after.set_row_kind(RowKind.UPDATE_AFTER)
        yield after
        if value.qty > 2:
            yield Row.of_kind(RowKind.DELETE, value.user, 0)


class BigOrders(FilterFunction):
    def filter(self, value):
        return value.qty >= 2


def inspect(row):
    print(
        "dict",
        row.as_dict(),
        "kind",
        row.get_row_kind(),
        "len",
        len(row),
        "has alice",
        "alice" in row,
    )
    print("equal to plain row", row == Row(user=row.user, item=row.item, qty=row.qty))
    print(
        "fields",
        list(row),
        "user" in row,
        row[1:],
        row.as_dict() == {"user": row[0], "item": row[1], "qty": row[2]},
    )
    return row


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    orders = env.from_collection(
        [Row("alice", "book", 1), Row("bob", "lamp", 3), Row("alice", "pen", 2)], type_info=ORDER
    )
    orders.map(inspect, output_type=ORDER).filter(BigOrders()).print()

    changes = orders.flat_map(ToChanges(), output_type=CHANGE)
    changes.print()
    changes.map(
        lambda r: f"{r.get_row_kind()} {r} {r.get_row_kind().name}", output_type=Types.STRING()
    ).print()

    positional = orders.map(
        lambda r: Row(r[0], r["qty"] * 10), output_type=Types.ROW([Types.STRING(), Types.INT()])
    )
    positional.print()
    positional.map(
        lambda r: "positional " + repr(r) + " " + str(r[1]), output_type=Types.STRING()
    ).print()

    deleted = orders.map(
        lambda r: Row.of_kind(RowKind.DELETE, r.user, r.item, r.qty), output_type=ORDER
    )
    deleted.key_by(lambda r: r[0], key_type=Types.STRING()).sum("qty").print()

    env.execute("row kinds and access")


if __name__ == "__main__":
    main()
