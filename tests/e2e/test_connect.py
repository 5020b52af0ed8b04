"""Two-input operators end to end: connect, keyed connect, and the broadcast state pattern.

How the two inputs interleave is up to the network. The tests check results that hold for any
interleaving, and read the final state from event-time timers: the end of input raises both
inputs' watermarks to MAX only after both inputs ended, so those timers see every record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from undertow.core.types import MIN_TIMESTAMP
from undertow.datastream import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    RuntimeContext,
)
from undertow.datastream.state import MapStateDescriptor, ValueStateDescriptor

from .conftest import EnvFactory

NUMBERS = list(range(20))
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


class Describe(CoMapFunction):
    def map1(self, value: int) -> Any:
        return ("number", value * 2)

    def map2(self, value: str) -> Any:
        return ("word", value.upper())


def test_co_map_applies_one_function_per_input(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    numbers = env.from_collection(NUMBERS)
    words = env.from_collection(WORDS)
    result = list(numbers.connect(words).map(Describe()).execute_and_collect())

    expected = [("number", n * 2) for n in NUMBERS] + [("word", w.upper()) for w in WORDS]
    assert Counter(result) == Counter(expected)


class Explode(CoFlatMapFunction):
    def flat_map1(self, value: int) -> Any:
        return [value] * (value % 3)

    def flat_map2(self, value: str) -> Any:
        yield from value


def test_co_flat_map_emits_any_number_of_records_per_input(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    numbers = env.from_collection(NUMBERS)
    words = env.from_collection(WORDS)
    result = list(numbers.connect(words).flat_map(Explode()).execute_and_collect())

    expected = [n for n in NUMBERS for _ in range(n % 3)] + [c for w in WORDS for c in w]
    assert Counter(result) == Counter(expected)


class Label(CoProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        yield ("left", value, ctx.timestamp())

    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        yield ("right", value, ctx.timestamp())


def test_co_process_function_on_non_keyed_streams(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    left = env.from_collection(NUMBERS)
    right = env.from_collection(WORDS)
    result = list(left.connect(right).process(Label()).execute_and_collect())

    no_ts = MIN_TIMESTAMP  # PyFlink's ctx.timestamp() of a record without one
    expected = [("left", n, no_ts) for n in NUMBERS] + [("right", w, no_ts) for w in WORDS]
    assert Counter(result) == Counter(expected)


# (order id, item) and (order id, amount); some orders are never paid, some payments unmatched
ORDERS = [(1, "book"), (2, "lamp"), (3, "desk"), (4, "pen"), (5, "mug"), (7, "cup")]
PAYMENTS = [(3, 120), (1, 15), (6, 99), (2, 40), (5, 8), (3, 5)]


class JoinOrdersAndPayments(KeyedCoProcessFunction):
    """Joins an order with its payments, whichever comes first; reports what is left over
    when event time ends."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.order = runtime_context.get_state(ValueStateDescriptor("order"))
        self.paid = runtime_context.get_state(ValueStateDescriptor("paid"))

    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        order_id, item = value
        assert ctx.get_current_key() == order_id
        self.order.update(item)
        ctx.timer_service().register_event_time_timer(0)
        if self.paid.value() is not None:
            yield ("joined", order_id, item, self.paid.value())

    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        order_id, amount = value
        assert ctx.get_current_key() == order_id
        total = (self.paid.value() or 0) + amount
        self.paid.update(total)
        ctx.timer_service().register_event_time_timer(0)
        if self.order.value() is not None:
            yield ("joined", order_id, self.order.value(), total)

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Any:
        yield ("final", ctx.get_current_key(), self.order.value(), self.paid.value())


def test_keyed_co_process_function_joins_by_key_with_state(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    orders = env.from_collection(ORDERS)
    payments = env.from_collection(PAYMENTS)
    joined = (
        orders.connect(payments)
        .key_by(lambda o: o[0], lambda p: p[0])
        .process(JoinOrdersAndPayments())
    )
    result = list(joined.execute_and_collect())

    items = dict(ORDERS)
    totals: Counter[int] = Counter()
    for order_id, amount in PAYMENTS:
        totals[order_id] += amount
    finals = [r for r in result if r[0] == "final"]
    assert sorted(finals, key=lambda r: r[1]) == [
        ("final", i, items.get(i), totals.get(i)) for i in sorted(set(items) | set(totals))
    ]
    joined_rows = [r for r in result if r[0] == "joined"]
    # every join shows the order's item and a running total of its payments; once both sides
    # have arrived the last join of an order shows its full total
    for _, order_id, item, total in joined_rows:
        assert item == items[order_id]
        assert 0 < total <= totals[order_id]
    last = {order_id: total for _, order_id, _, total in joined_rows}
    assert last == {i: totals[i] for i in items if i in totals}


RULES = [("small", 10), ("medium", 100), ("large", 1_000)]
MEASUREMENTS = [("small", 5), ("large", 2_000), ("medium", 150), ("small", 50), ("huge", 1)]
THRESHOLDS = MapStateDescriptor("thresholds")


class Check(BroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element(self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext) -> Any:
        kind, amount = value
        threshold = ctx.get_broadcast_state(THRESHOLDS).get(kind)
        known = sorted(ctx.get_broadcast_state(THRESHOLDS).keys())
        yield ("checked", kind, amount, threshold, known)

    def process_broadcast_element(self, value: Any, ctx: BroadcastProcessFunction.Context) -> Any:
        kind, threshold = value
        ctx.get_broadcast_state(THRESHOLDS).put(kind, threshold)
        yield ("rule", self.subtask, kind)


def test_broadcast_process_function_shares_rules_with_every_subtask(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    rules = env.from_collection(RULES).broadcast(THRESHOLDS)
    measurements = env.from_collection(MEASUREMENTS)
    result = list(measurements.connect(rules).process(Check()).execute_and_collect())

    rule_rows = Counter(r for r in result if r[0] == "rule")
    assert rule_rows == Counter({("rule", s, kind): 1 for s in range(2) for kind, _ in RULES})
    checked = [r for r in result if r[0] == "checked"]
    assert Counter((kind, amount) for _, kind, amount, _, _ in checked) == Counter(MEASUREMENTS)
    thresholds = dict(RULES)
    prefixes = [sorted(k for k, _ in RULES[:n]) for n in range(len(RULES) + 1)]
    for _, kind, _, threshold, known in checked:
        # whatever was seen is what some prefix of the rule stream made of the state
        assert known in prefixes
        assert threshold == (thresholds[kind] if kind in known else None)


class Alert(KeyedBroadcastProcessFunction):
    """Keeps each sensor's maximum in keyed state; at the end of event time compares it with
    the sensor kind's threshold from the broadcast state."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.maximum = runtime_context.get_state(ValueStateDescriptor("maximum"))

    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Any:
        kind, amount = value
        assert ctx.get_current_key() == kind
        self.maximum.update(max(amount, self.maximum.value() or amount))
        ctx.timer_service().register_event_time_timer(0)
        return None

    def process_broadcast_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Any:
        kind, threshold = value
        ctx.get_broadcast_state(THRESHOLDS).put(kind, threshold)
        return None

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Any:
        kind = ctx.get_current_key()
        threshold = ctx.get_broadcast_state(THRESHOLDS).get(kind)
        maximum = self.maximum.value()
        yield (kind, maximum, threshold, threshold is not None and maximum > threshold)


def test_keyed_broadcast_process_function_combines_keyed_and_broadcast_state(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    rules = env.from_collection(RULES).broadcast(THRESHOLDS)
    measurements = env.from_collection(MEASUREMENTS).key_by(lambda m: m[0])
    alerts = measurements.connect(rules).process(Alert())
    result = sorted(alerts.execute_and_collect())

    thresholds = dict(RULES)
    maxima: dict[str, int] = {}
    for kind, amount in MEASUREMENTS:
        maxima[kind] = max(amount, maxima.get(kind, amount))
    expected = sorted(
        (kind, m, thresholds.get(kind), kind in thresholds and m > thresholds[kind])
        for kind, m in maxima.items()
    )
    assert result == expected


ZEROS = MapStateDescriptor("zeros")


class CountBroadcastKeys(BroadcastProcessFunction):
    """Counts each broadcast key in the broadcast state and emits what ``items()`` reads
    after each one (each key as ``(repr, type name, count)``)."""

    def process_element(self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext) -> Any:
        return None

    def process_broadcast_element(self, value: Any, ctx: BroadcastProcessFunction.Context) -> Any:
        state = ctx.get_broadcast_state(ZEROS)
        state.put(value, (state.get(value) or 0) + 1)
        yield sorted((repr(k), type(k).__name__, v) for k, v in state.items())


def test_broadcast_state_keys_are_equal_as_javas_equals_holds_them(make_env: EnvFactory) -> None:
    """Flink's broadcast state is a Java map (``Double.equals``): ``0.0`` and ``-0.0`` are two
    keys, every NaN one; read back as plain floats."""
    env = make_env(parallelism=1)
    nan = float("nan")
    keys = env.from_collection([0.0, -0.0, 0.0, nan, -nan, -0.0, -0.0]).broadcast(ZEROS)
    views = list(env.from_collection([1]).connect(keys).process(CountBroadcastKeys())
                 .execute_and_collect())  # fmt: skip
    assert views[-1] == [("-0.0", "float", 3), ("0.0", "float", 2), ("nan", "float", 2)], views
