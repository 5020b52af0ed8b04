"""execute_and_collect: bring results back to the script, from a stream and a keyed stream."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment


class Reading:
    def __init__(self, id, vc):
        self.id = id
        self.vc = vc


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    readings = env.from_collection(
        [Reading("s1", 3), Reading("s2", 4), Reading("s1", 5), Reading("s3", 1), Reading("s2", 6)]
    )
    doubled = readings.map(
        lambda r: Row(id=r.id, vc=r.vc * 2),
        output_type=Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()]),
    )
    with doubled.execute_and_collect() as results:
        for row in results:
            print("collected", row)

    first_two = doubled.execute_and_collect(limit=2)
    print("first two", first_two)

    keyed = env.from_collection(
        [("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)],
        type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
    ).key_by(lambda t: t[0], key_type=Types.STRING())
    print("keyed in order", list(keyed.execute_and_collect()))


if __name__ == "__main__":
    main()
