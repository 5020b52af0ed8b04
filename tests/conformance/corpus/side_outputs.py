"""Side outputs: split readings into normal, too high and broken, each with its own type."""

from pyflink.common import Row, Types
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessFunction

TOO_HIGH = OutputTag("too-high", Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()]))
BROKEN = OutputTag("broken", Types.STRING())


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        parts = value.split(",")
        if len(parts) != 2 or not parts[1].isdigit():
            yield BROKEN, f"cannot parse {value!r}"
            return
        reading = Row(id=parts[0], vc=int(parts[1]))
        if reading.vc > 10:
            yield TOO_HIGH, reading
        else:
            yield reading


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    lines = env.from_collection(["s1,5", "s2,12", "oops", "s1,7", "s3,x", "s2,30"])
    normal = lines.process(
        Split(), output_type=Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    )
    normal.map(lambda r: f"normal {r.id}={r.vc}").print()
    normal.get_side_output(TOO_HIGH).map(lambda r: f"alarm {r}").print()
    normal.get_side_output(BROKEN).print()
    env.execute("side outputs")


if __name__ == "__main__":
    main()
