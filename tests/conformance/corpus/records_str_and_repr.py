"""Objects of the script's classes printed by str() and repr(), collected with a limit."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"

    def __str__(self):
        return f"<{self.x}, {self.y}>"


class Label:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        return "label:" + self.text


class Describe(MapFunction):
    def map(self, value):
        print("str", str(value), "repr", repr(value))
        return value


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    points = env.from_collection([Point(1, 2), Point(-3, 4.5), Point("a", None)])
    points.map(Describe()).print()
    points.map(lambda p: [p, p.x], output_type=Types.PICKLED_BYTE_ARRAY()).map(
        lambda pair: "pair " + str(pair) + " " + repr(pair[0])
    ).print()

    labels = env.from_collection([Label("x"), Label("y")])
    labels.map(lambda label: label.text.upper(), output_type=Types.STRING()).print()
    labels.print()
    env.execute("records str and repr")

    as_rows = points.map(
        lambda p: Row(x=str(p.x), point=str(p)),
        output_type=Types.ROW_NAMED(["x", "point"], [Types.STRING(), Types.STRING()]),
    )
    for row in as_rows.execute_and_collect(limit=2):
        print("limited", row, row.point)
    with points.map(lambda p: (repr(p), str(p.y))).execute_and_collect() as results:
        for r in results:
            print("collected", r)
    print(
        "all",
        points.map(lambda p: str(p.x), output_type=Types.STRING()).execute_and_collect(limit=10),
    )


if __name__ == "__main__":
    main()
