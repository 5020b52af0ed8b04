"""MapState with TTL: distinct page visits per user, with put, get, contains, remove, items."""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, StateTtlConfig


class PageVisits(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        descriptor = MapStateDescriptor("visits", Types.STRING(), Types.INT())
        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(Time.days(1))
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
            .build()
        )
        self.visits = runtime_context.get_map_state(descriptor)

    def process_element(self, value, ctx):
        user, page = value
        if page == "logout":
            if self.visits.contains("cart"):
                self.visits.remove("cart")
            pages = sorted(self.visits.items())
            yield f"{user} visited {pages}"
            self.visits.clear()
            return
        count = self.visits.get(page) if self.visits.contains(page) else 0
        self.visits.put(page, count + 1)
        if count:
            yield f"{user} is back on {page} ({count + 1} times)"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    clicks = [
        ("ann", "home"),
        ("bob", "home"),
        ("ann", "cart"),
        ("ann", "home"),
        ("bob", "shop"),
        ("ann", "logout"),
        ("bob", "shop"),
        ("bob", "cart"),
        ("bob", "logout"),
        ("ann", "home"),
        ("ann", "logout"),
    ]
    env.from_collection(clicks, type_info=Types.TUPLE([Types.STRING(), Types.STRING()])).key_by(
        lambda c: c[0]
    ).process(PageVisits(), output_type=Types.STRING()).print()
    env.execute("map state")


if __name__ == "__main__":
    main()
