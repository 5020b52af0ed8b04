"""Global windows with a trigger of the script's own: fire when a basket reaches 100."""

from pyflink.common import Types
from pyflink.common.typeinfo import Types as T
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import GlobalWindows, Trigger, TriggerResult


class AmountReached(Trigger):
    def __init__(self, limit):
        self.limit = limit
        self.total = ValueStateDescriptor("total", T.INT())

    def on_element(self, element, timestamp, window, ctx):
        total = ctx.get_partitioned_state(self.total)
        reached = (total.value() or 0) + element[1]
        if reached >= self.limit:
            total.clear()
            return TriggerResult.FIRE_AND_PURGE
        total.update(reached)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.get_partitioned_state(self.total).clear()


class Basket(ProcessWindowFunction):
    def process(self, key, context, elements):
        items = [e[1] for e in elements]
        yield f"{key} basket {items} total {sum(items)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    buys = [("ann", 30), ("bob", 90), ("ann", 50), ("bob", 20), ("ann", 40), ("ann", 100),
            ("bob", 5), ("ann", 10)]  # fmt: skip
    env.from_collection(buys, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).key_by(
        lambda b: b[0]
    ).window(GlobalWindows.create()).trigger(AmountReached(100)).process(
        Basket(), Types.STRING()
    ).print()
    env.execute("global windows")


if __name__ == "__main__":
    main()
