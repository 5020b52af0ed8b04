"""Function classes: MapFunction, FlatMapFunction, FilterFunction and a KeySelector class."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import FilterFunction, FlatMapFunction, KeySelector, MapFunction


class Order:
    def __init__(self, order_id, user, items):
        self.order_id = order_id
        self.user = user
        self.items = items


class ParseOrder(MapFunction):
    def map(self, value):
        order_id, user, items = value.split(";")
        return Order(int(order_id), user, items.split(","))


class ExplodeItems(FlatMapFunction):
    def flat_map(self, value):
        for item in value.items:
            print("exploding", value.order_id, item)
            yield value.user, item


class NotFree(FilterFunction):
    def filter(self, value):
        return value[1] != "sample"


class UserKey(KeySelector):
    def get_key(self, value):
        return value[0]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    lines = env.from_collection(
        ["1;alice;book,pen", "2;bob;sample,lamp", "3;alice;lamp", "4;carol;sample"],
        type_info=Types.STRING(),
    )
    items = (
        lines.map(ParseOrder())
        .flat_map(ExplodeItems(), output_type=Types.TUPLE([Types.STRING(), Types.STRING()]))
        .filter(NotFree())
    )
    items.key_by(UserKey()).map(
        lambda v: f"{v[0]} bought {v[1]}", output_type=Types.STRING()
    ).print()
    env.execute("function classes")


if __name__ == "__main__":
    main()
