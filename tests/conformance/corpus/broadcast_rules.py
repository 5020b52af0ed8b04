"""Broadcast state: thresholds per sensor type broadcast to a keyed stream.

Readings wait in keyed state until the end of input (an event-time timer), when every rule has
arrived, so the result does not depend on how the two inputs interleave.
"""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())


class Alarm(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.readings = runtime_context.get_list_state(ListStateDescriptor("readings", Types.INT()))

    def process_element(self, value, ctx):
        self.readings.add(value[1])
        ctx.timer_service().register_event_time_timer(1)

    def process_broadcast_element(self, value, ctx):
        print("rule", value[0], ">", value[1])
        ctx.get_broadcast_state(RULES).put(value[0], value[1])

    def on_timer(self, timestamp, ctx):
        sensor = ctx.get_current_key()
        limit = ctx.get_broadcast_state(RULES).get(sensor.split("-")[0])
        for reading in self.readings.get():
            if limit is not None and reading > limit:
                yield f"{sensor}: {reading} above {limit}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    rules = env.from_collection(
        [("temp", 30), ("humidity", 80)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
    ).broadcast(RULES)
    readings = env.from_collection(
        [("temp-1", 25), ("temp-2", 35), ("humidity-1", 90), ("temp-1", 31), ("wind-1", 99)],
        type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
    )
    readings.key_by(lambda r: r[0]).connect(rules).process(
        Alarm(), output_type=Types.STRING()
    ).print()
    env.execute("broadcast rules")


if __name__ == "__main__":
    main()
