"""Keyed count windows, tumbling and sliding, with a window function that looks at the window."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction, WindowFunction


class ShowWindow(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        window = context.window()
        values = [e[1] for e in elements]
        yield f"{self.label} {key} {window} max {window.max_timestamp()} values {values}"


class Total(WindowFunction):
    def apply(self, key, window, inputs):
        yield f"apply {key} {window} total {sum(e[1] for e in inputs)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    orders = [("tea", 1), ("cake", 2), ("tea", 3), ("tea", 4), ("cake", 5), ("tea", 6),
              ("cake", 7), ("tea", 8), ("cake", 9), ("tea", 10), ("tea", 11)]  # fmt: skip
    keyed = env.from_collection(
        orders, type_info=Types.TUPLE([Types.STRING(), Types.INT()])
    ).key_by(lambda o: o[0], key_type=Types.STRING())
    keyed.count_window(2).process(ShowWindow("tumbling"), Types.STRING()).print()
    keyed.count_window(3, 2).process(ShowWindow("sliding"), Types.STRING()).print()
    keyed.count_window(4).apply(Total(), Types.STRING()).print()
    env.execute("count windows per key")


if __name__ == "__main__":
    main()
