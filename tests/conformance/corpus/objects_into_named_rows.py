"""Plain objects of a script class read as a named row type, then summed per sensor."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


class WaterSensor:
    def __init__(self, id, vc, ts):
        self.id = id
        self.vc = vc
        self.ts = ts


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    sensor_type = Types.ROW_NAMED(["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()])
    sensors = env.from_collection(
        [WaterSensor("s1", 1, 100), WaterSensor("s2", 5, 110), WaterSensor("s1", 7, 120)],
        type_info=sensor_type,
    )
    sensors.print()
    sensors.key_by(lambda r: r["id"]).sum("vc").print()

    env.execute("objects into named rows")


if __name__ == "__main__":
    main()
