"""JSON strings parsed in a map, filtered, keyed and reduced, emitted as JSON again."""

import json

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

EVENTS = [
    '{"user": "ann", "action": "view", "item": {"sku": "p1", "price": 10}}',
    '{"user": "bob", "action": "buy", "item": {"sku": "p2", "price": 25}}',
    '{"user": "ann", "action": "buy", "item": {"sku": "p1", "price": 10}}',
    '{"user": "ann", "action": "buy", "item": {"sku": "p3", "price": 5}}',
    '{"user": "bob", "action": "view", "item": {"sku": "p1", "price": 10}}',
]


def spend(event):
    return event["user"], event["item"]["price"]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    events = env.from_collection(EVENTS, type_info=Types.STRING()).map(json.loads)
    buys = events.filter(lambda e: e["action"] == "buy").map(
        spend, output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    totals = buys.key_by(lambda s: s[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    totals.map(
        lambda t: json.dumps({"user": t[0], "spent": t[1]}, sort_keys=True),
        output_type=Types.STRING(),
    ).print()
    env.execute("json events")


if __name__ == "__main__":
    main()
