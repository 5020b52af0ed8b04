"""ListState with TTL: keep the last three readings per sensor and print their average."""

from pyflink.common import Row, Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, StateTtlConfig


class LastThree(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        descriptor = ListStateDescriptor("readings", Types.INT())
        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(Time.hours(1)).cleanup_full_snapshot().build()
        )
        self.readings = runtime_context.get_list_state(descriptor)

    def process_element(self, value, ctx):
        self.readings.add(value.vc)
        kept = list(self.readings.get())
        if len(kept) > 3:
            kept = kept[-3:]
            self.readings.update(kept)
        yield Row(id=value.id, last=str(kept), avg=round(sum(kept) / len(kept), 2))


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    sensor = Types.ROW_NAMED(["id", "vc"], [Types.STRING(), Types.INT()])
    data = [Row(id="s1", vc=v) for v in (3, 5, 7, 9)] + [Row(id="s2", vc=v) for v in (10, 20)]
    data += [Row(id="s1", vc=1)]
    env.from_collection(data, type_info=sensor).key_by(lambda r: r.id).process(
        LastThree(),
        output_type=Types.ROW_NAMED(
            ["id", "last", "avg"], [Types.STRING(), Types.STRING(), Types.DOUBLE()]
        ),
    ).print()
    env.execute("list state")


if __name__ == "__main__":
    main()
