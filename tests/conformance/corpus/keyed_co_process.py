"""Order and payment matching with connect + KeyedCoProcessFunction and ValueState."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Order:
    def __init__(self, order_id, amount):
        self.order_id = order_id
        self.amount = amount


class Payment:
    def __init__(self, order_id, method):
        self.order_id = order_id
        self.method = method


class Match(KeyedCoProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.order = runtime_context.get_state(
            ValueStateDescriptor("order", Types.PICKLED_BYTE_ARRAY())
        )
        self.payment = runtime_context.get_state(
            ValueStateDescriptor("payment", Types.PICKLED_BYTE_ARRAY())
        )

    def process_element1(self, value, ctx):
        payment = self.payment.value()
        if payment is None:
            self.order.update(value)
        else:
            self.payment.clear()
            yield f"order {value.order_id} ({value.amount}) paid by {payment.method}"

    def process_element2(self, value, ctx):
        order = self.order.value()
        if order is None:
            self.payment.update(value)
        else:
            self.order.clear()
            yield f"order {order.order_id} ({order.amount}) paid by {value.method}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    orders = env.from_collection([Order(1, 9.5), Order(2, 20.0), Order(3, 7.25)])
    payments = env.from_collection([Payment(2, "card"), Payment(1, "cash"), Payment(4, "card")])
    orders.connect(payments).key_by(lambda o: o.order_id, lambda p: p.order_id).process(
        Match(), output_type=Types.STRING()
    ).print()
    env.execute("order matching")


if __name__ == "__main__":
    main()
