"""A job written the way PyFlink tutorials write them, for ``undertow run`` tests (issue 26).

Its record type is a class of the script itself (so of ``__main__``, which no worker can
import), kept in keyed state through a final checkpoint; a named row type is filled from those
objects' attributes; the user's function calls ``print()``.
"""

from undertow.common import Types
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.functions import KeyedProcessFunction, RuntimeContext
from undertow.datastream.state import ValueStateDescriptor


class WaterSensor:
    def __init__(self, id, vc, ts):
        self.id = id
        self.vc = vc
        self.ts = ts

    def __repr__(self):
        return f"WaterSensor({self.id},{self.vc},{self.ts})"


class KeepHighest(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        descriptor = ValueStateDescriptor("highest", Types.PICKLED_BYTE_ARRAY())
        self.highest = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        print(f"seen {value}")
        highest = self.highest.value()
        if highest is None or value.vc > highest.vc:
            highest = value
            self.highest.update(value)
        yield f"highest of {value.id}: {highest}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(200)  # the state holding WaterSensor objects goes into checkpoints
sensors = [WaterSensor(f"s{i % 3}", i, 1000 * i) for i in range(12)]
named = Types.ROW_NAMED(["id", "vc", "ts"], [Types.STRING(), Types.INT(), Types.LONG()])
env.from_collection(sensors).rebalance().key_by(lambda w: w.id).process(KeepHighest()).print()
env.from_collection(sensors[:2], type_info=named).rebalance().map(lambda r: f"row {r}").print()
env.execute("user classes")
