"""Rolling aggregations by field name on named rows: sum, min, max, min_by, max_by, reduce."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

SENSOR = Types.ROW_NAMED(["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    rows = [
        Row(id="s1", vc=1, ts=100),
        Row(id="s1", vc=11, ts=200),
        Row(id="s2", vc=2, ts=150),
        Row(id="s1", vc=3, ts=300),
        Row(id="s2", vc=22, ts=250),
        Row(id="s1", vc=11, ts=400),
    ]
    sensors = env.from_collection(rows, type_info=SENSOR)
    by_id = sensors.key_by(lambda r: r.id, key_type=Types.STRING())

    by_id.sum("vc").map(lambda r: "sum " + str(r)).print()
    by_id.min("vc").map(lambda r: "min " + str(r)).print()
    by_id.max("vc").map(lambda r: "max " + str(r)).print()
    by_id.min_by("vc").map(lambda r: "min_by " + str(r)).print()
    by_id.max_by("vc").map(lambda r: "max_by " + str(r)).print()
    by_id.reduce(lambda a, b: Row(id=a.id, vc=a.vc + b.vc, ts=max(a.ts, b.ts))).map(
        lambda r: "reduce " + str(r)
    ).print()

    env.execute("rolling aggregations")


if __name__ == "__main__":
    main()
