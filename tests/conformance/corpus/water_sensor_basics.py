"""Water sensors: a record class of the script's own, map to named rows, filter, print."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment


class WaterSensor:
    def __init__(self, id, ts, vc):
        self.id = id
        self.ts = ts
        self.vc = vc

    def __repr__(self):
        return f"WaterSensor(id={self.id}, ts={self.ts}, vc={self.vc})"


def to_row(sensor):
    return Row(id=sensor.id, vc=sensor.vc, ts=sensor.ts)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    sensors = env.from_collection(
        [
            WaterSensor("s1", 1, 1),
            WaterSensor("s2", 2, 2),
            WaterSensor("s3", 3, 30),
            WaterSensor("s1", 4, 11),
            WaterSensor("s3", 5, 3),
        ]
    )
    sensors.print()

    high = sensors.filter(lambda s: s.vc > 2)
    high.map(
        to_row,
        output_type=Types.ROW_NAMED(
            ["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()]
        ),
    ).print()
    high.map(lambda s: s.id + ":" + str(s.vc), output_type=Types.STRING()).print()

    env.execute("water sensor basics")


if __name__ == "__main__":
    main()
