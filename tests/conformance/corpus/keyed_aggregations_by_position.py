"""Rolling aggregations by position on tuples and rows, a ReduceFunction class, typed keys."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ReduceFunction

READING = Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
SENSOR = Types.ROW_NAMED(["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()])


class KeepLatest(ReduceFunction):
    def reduce(self, value1, value2):
        print("reducing", value1, "with", value2)
        return value2[0], value1[1] + value2[1], max(value1[2], value2[2])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    readings = env.from_collection(
        [("s1", 5, 100), ("s2", 3, 150), ("s1", 2, 200), ("s1", 5, 300), ("s2", 9, 120)],
        type_info=READING,
    )
    by_id = readings.key_by(lambda t: t[0], key_type=Types.STRING())
    by_id.sum(1).print()
    by_id.min(2).map(lambda t: "min ts " + str(t), output_type=Types.STRING()).print()
    by_id.max(1).map(lambda t: "max vc " + str(t), output_type=Types.STRING()).print()
    by_id.min_by(1).map(lambda t: "min_by vc " + str(t), output_type=Types.STRING()).print()
    by_id.max_by(1).map(lambda t: "max_by vc " + str(t), output_type=Types.STRING()).print()
    by_id.reduce(KeepLatest()).print()

    sensors = env.from_collection(
        [Row("s1", 5, 100), Row("s2", 3, 150), Row("s1", 2, 200), Row("s1", 5, 300)],
        type_info=SENSOR,
    )
    by_sensor = sensors.key_by(lambda r: r.id, key_type=Types.STRING())
    by_sensor.max_by(1).print()
    by_sensor.min_by("ts").print()
    by_sensor.sum("vc").map(lambda r: "sum vc " + repr(r), output_type=Types.STRING()).print()

    pairs = env.from_collection(
        [("a", 1.5), ("b", 2.0), ("a", 0.25)],
        type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
    )
    pairs.key_by(lambda p: p[0]).sum(1).print()

    composite = readings.key_by(
        lambda t: (t[0], t[1] % 2), key_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    composite.sum(1).map(lambda t: "by parity " + str(t), output_type=Types.STRING()).print()

    env.execute("keyed aggregations by position")


if __name__ == "__main__":
    main()
