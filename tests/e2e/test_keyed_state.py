"""Keyed state through the runtime context: value, list, map, reducing, aggregating, TTL."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import pytest

from undertow.common import Time
from undertow.core.errors import JobExecutionError
from undertow.datastream import (
    AggregateFunction,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    KeyedProcessFunction,
    MapFunction,
    RuntimeContext,
)
from undertow.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)

from .conftest import EnvFactory

# (user, item, amount)
EVENTS = [
    ("alice", "apple", 3),
    ("bob", "pear", 5),
    ("alice", "plum", 1),
    ("carol", "apple", 2),
    ("alice", "apple", 4),
    ("bob", "pear", 1),
    ("dave", "fig", 7),
    ("carol", "fig", 6),
    ("alice", "fig", 2),
    ("bob", "plum", 9),
    ("eve", "kiwi", 1),
    ("dave", "fig", 3),
]


class Average(AggregateFunction):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class AllStates(KeyedProcessFunction):
    """Keeps every kind of keyed state per user and emits a snapshot of it per event."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.items = runtime_context.get_list_state(ListStateDescriptor("items"))
        self.per_item = runtime_context.get_map_state(MapStateDescriptor("per_item"))
        self.total = runtime_context.get_reducing_state(
            ReducingStateDescriptor("total", lambda a, b: a + b)
        )
        self.average = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("average", Average())
        )

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        user, item, amount = value
        assert ctx.get_current_key() == user
        self.count.update((self.count.value() or 0) + 1)
        self.items.add(item)
        self.per_item.put(item, (self.per_item.get(item) or 0) + amount)
        self.total.add(amount)
        self.average.add(amount)
        yield (
            user,
            self.count.value(),
            list(self.items.get()),
            dict(self.per_item.items()),
            self.total.get(),
            self.average.get(),
        )


def expected_snapshots() -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    items: dict[str, list[str]] = defaultdict(list)
    per_item: dict[str, dict[str, int]] = defaultdict(dict)
    amounts: dict[str, list[int]] = defaultdict(list)
    for user, item, amount in EVENTS:
        items[user].append(item)
        per_item[user][item] = per_item[user].get(item, 0) + amount
        amounts[user].append(amount)
        out[user].append((
            user, len(items[user]), list(items[user]), dict(per_item[user]),
            sum(amounts[user]), sum(amounts[user]) / len(amounts[user]),
        ))  # fmt: skip
    return dict(out)


def by_user(records: list[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        grouped[record[0]].append(record)
    return dict(grouped)


def test_keyed_process_function_keeps_every_kind_of_state_per_key(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    snapshots = env.from_collection(EVENTS).key_by(lambda e: e[0]).process(AllStates())
    assert by_user(list(snapshots.execute_and_collect())) == expected_snapshots()


class Deduplicate(MapFunction):
    """A rich map on a keyed stream: numbers each item per user, remembers what it saw."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen"))
        self.sequence = runtime_context.get_state(ValueStateDescriptor("sequence"))

    def map(self, value: Any) -> Any:
        user, item, _ = value
        number = (self.sequence.value() or 0) + 1
        self.sequence.update(number)
        first = not self.seen.contains(item)
        if first:
            self.seen.put(item, number)
        return (user, item, number, first, self.seen.get(item), sorted(self.seen.keys()))


def test_map_function_on_a_keyed_stream_uses_state_of_the_record_key(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    mapped = env.from_collection(EVENTS).key_by(lambda e: e[0]).map(Deduplicate())
    result = list(mapped.execute_and_collect())

    expected: dict[str, list[Any]] = defaultdict(list)
    first_seen: dict[str, dict[str, int]] = defaultdict(dict)
    for user, item, _ in EVENTS:
        number = len(expected[user]) + 1
        first = item not in first_seen[user]
        first_seen[user].setdefault(item, number)
        expected[user].append(
            (user, item, number, first, first_seen[user][item], sorted(first_seen[user]))
        )
    assert by_user(result) == dict(expected)


TTL_MS = 250


class ExpiringGreeting(KeyedProcessFunction):
    """``("set", key)`` stores a value; ``("get", key)`` reads it; ``("wait-get", key)`` reads it
    after sleeping beyond the TTL."""

    def open(self, runtime_context: RuntimeContext) -> None:
        descriptor = ValueStateDescriptor("greeting")
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(TTL_MS).build())
        self.greeting = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        command, key = value
        if command == "set":
            self.greeting.update(f"hello {key}")
            return
        if command == "wait-get":
            time.sleep(TTL_MS * 2 / 1000)
        yield (key, self.greeting.value())


def test_state_ttl_expires_values_after_their_time_to_live(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1)
    commands = [("set", "a"), ("set", "b"), ("get", "a"), ("wait-get", "b"), ("get", "a")]
    result = env.from_collection(commands).key_by(lambda c: c[1]).process(ExpiringGreeting())
    assert list(result.execute_and_collect()) == [("a", "hello a"), ("b", None), ("a", None)]


class KeyedStateInOpen(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("count"))

    def map(self, value: Any) -> Any:
        return value


def test_keyed_state_on_a_non_keyed_stream_fails_naming_the_operator(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=1)
    env.from_collection([1, 2, 3]).map(KeyedStateInOpen()).name("needs-keys").print()
    with pytest.raises(JobExecutionError) as caught:
        env.execute("non-keyed state")
    message = str(caught.value)
    assert "needs-keys" in message
    assert "StateError" in message
    assert "key_by" in message
    assert caught.value.operator == "needs-keys"


class Describe(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.context = (
            runtime_context.get_task_name(),
            runtime_context.get_index_of_this_subtask(),
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_task_name_with_subtasks(),
            runtime_context.get_job_parameter("greeting", "none"),
            runtime_context.get_job_parameter("missing", "default"),
            runtime_context.get_job_parameter("tricky", "none"),
        )

    def map(self, value: Any) -> Any:
        return self.context


def test_runtime_context_describes_the_subtask_and_carries_job_parameters(
    make_env: EnvFactory,
) -> None:
    env = make_env(parallelism=2)
    tricky = "a:b, 'c',d"
    env.get_config().set_global_job_parameters({"greeting": "hello", "tricky": tricky})
    assert env.get_config().get_global_job_parameters() == {"greeting": "hello", "tricky": tricky}
    described = env.from_collection(range(20)).rebalance().map(Describe()).name("describe")
    contexts = set(described.execute_and_collect())

    assert {c[1] for c in contexts} == {0, 1}
    for name, index, parallelism, with_subtasks, greeting, missing, tricky_value in contexts:
        # the task's (chain's) name, as PyFlink's (PyFlink 2.3, run 2026-12-03: a map chained
        # between a source and a print says 'Source: Collection Source -> describe -> Sink:
        # Print to Std. Out' and '... (1/1)#0')
        assert "describe" in name, name
        assert parallelism == 2
        assert with_subtasks == f"{name} ({index + 1}/2)#0"
        assert (greeting, missing, tricky_value) == ("hello", "default", tricky)


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize(
    ("max_parallelism", "key_of"),
    [(3, lambda x: x), (15, lambda x: x), (29, lambda x: x), (2, lambda x: ("k", x)),
     (5, lambda x: ("k", (x,)))],
    ids=["3", "15", "29", "2-tuple", "5-nested"],
)  # fmt: skip
def test_zero_and_negative_zero_are_two_keys_also_in_one_key_group(
    make_env: EnvFactory, tmp_path: Any, backend: str, max_parallelism: int, key_of: Any
) -> None:
    """Flink keys by Java's ``Double.equals``: ``0.0`` and ``-0.0`` are two keys. At these
    max parallelisms both land in one key group (scalar keys at odd ones, these tuple keys at
    even ones), where Python's dict holds them equal: each must still count on its own."""
    env = make_env(parallelism=1)
    env.set_max_parallelism(max_parallelism)
    if backend == "rocksdb":
        env.set_state_backend(EmbeddedRocksDBStateBackend())
    else:
        env.set_state_backend(HashMapStateBackend())
    zeros = [0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0]
    stream = env.from_collection([(key_of(z), 1) for z in zeros])
    counted = stream.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    out = list(counted.execute_and_collect())
    last: dict[str, int] = {}
    for key, count in out:
        last[repr(key)] = count
    assert last == {repr(key_of(0.0)): 3, repr(key_of(-0.0)): 4}, out


class TimerPerKey(KeyedProcessFunction):
    """Registers one event-time timer at 100 per record; a fired timer emits its key."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        ctx.timer_service().register_event_time_timer(100)
        return iter(())

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield repr(ctx.get_current_key()), type(ctx.get_current_key()) is float


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_zero_and_negative_zero_keep_a_timer_each(make_env: EnvFactory, backend: str) -> None:
    """A timer is (timestamp, key, namespace): ``0.0`` and ``-0.0`` registering one at the
    same time are two timers, each firing with its own key (a plain float), at any max
    parallelism (the heap timer queue's set held them equal)."""
    env = make_env(parallelism=1)
    env.set_max_parallelism(128)  # two key groups, one subtask: one timer queue
    env.set_state_backend(
        EmbeddedRocksDBStateBackend() if backend == "rocksdb" else HashMapStateBackend()
    )
    stream = env.from_collection([0.0, -0.0, 0.0])
    fired = list(stream.key_by(lambda x: x).process(TimerPerKey()).execute_and_collect())
    assert sorted(fired) == [("-0.0", True), ("0.0", True)], fired


class MapKeysAsJava(KeyedProcessFunction):
    """Counts each map key in a ``MapState`` (``put``/``get``); at the ``"end"`` record emits
    what every read gives: ``items()``, ``keys()``, iteration, ``contains`` and, after
    ``remove(-0.0)``, ``keys()`` again (each key as ``(repr, type name)``)."""

    def __init__(self, ttl: bool) -> None:
        self.ttl = ttl

    def open(self, runtime_context: RuntimeContext) -> None:
        descriptor = MapStateDescriptor("counts")
        if self.ttl:
            descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.minutes(10)).build())
        self.counts = runtime_context.get_map_state(descriptor)

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        _, map_key = value
        if map_key != "end":
            self.counts.put(map_key, (self.counts.get(map_key) or 0) + 1)
            return
        state = self.counts

        def shown(keys: Any) -> list[tuple[str, str]]:
            return sorted((repr(k), type(k).__name__) for k in keys)

        yield "items", sorted((repr(k), type(k).__name__, v) for k, v in state.items())
        yield "keys", shown(state.keys())
        yield "iter", shown(state)
        yield "contains", [state.contains(k) for k in (0.0, -0.0, math.nan, ("a", -0.0))]
        state.remove(-0.0)
        state.remove(-math.nan)
        state.remove(("a", 0.0))
        yield "after remove", shown(state.keys())


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("ttl", [False, True], ids=["plain", "ttl"])
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_map_state_keys_are_equal_as_javas_equals_holds_them(
    make_env: EnvFactory, backend: str, ttl: bool
) -> None:
    """Flink's ``MapState`` keys by Java's ``equals``: ``Double.equals`` holds ``0.0`` and
    ``-0.0`` two keys and every NaN (any sign or payload) one, also inside a tuple; Python's
    dict held the zeros one entry and gave each NaN object its own, and a NaN's pickle (the
    RocksDB key) differs by sign. Keys read back are the plain floats written."""
    env = make_env(parallelism=1)
    env.set_state_backend(
        EmbeddedRocksDBStateBackend() if backend == "rocksdb" else HashMapStateBackend()
    )
    nans = [float("nan"), -float("nan"), float("inf") - float("inf"), float("nan")]
    map_keys: list[Any] = [0.0, -0.0, *nans, -0.0, ("a", 0.0), ("a", -0.0), ("a", -0.0), "end"]
    stream = env.from_collection([("k", m) for m in map_keys])
    out = dict(stream.key_by(lambda r: r[0]).process(MapKeysAsJava(ttl)).execute_and_collect())
    floats = [("-0.0", "float"), ("0.0", "float"), ("nan", "float")]
    tuples = [("('a', -0.0)", "tuple"), ("('a', 0.0)", "tuple")]
    assert out["items"] == [
        ("('a', -0.0)", "tuple", 2), ("('a', 0.0)", "tuple", 1),
        ("-0.0", "float", 2), ("0.0", "float", 1), ("nan", "float", 4),
    ]  # fmt: skip
    assert out["keys"] == out["iter"] == sorted(floats + tuples)
    assert out["contains"] == [True, True, True, True]
    assert out["after remove"] == [("('a', -0.0)", "tuple"), ("0.0", "float")]


@pytest.mark.parametrize("target", ["local-threads"])
def test_the_task_name_is_the_chains_as_on_pyflink(make_env: EnvFactory) -> None:
    """``get_task_name`` is the task's (chained operators joined by `` -> ``), not the
    operator's, and ``get_task_name_with_subtasks`` ends with the attempt: PyFlink 2.3 (run
    2026-12-03) says ``Source: Collection Source -> describe -> Sink: Print to Std. Out`` and
    ``... (1/1)#0`` for a map between a collection source and a print."""
    env = make_env(parallelism=1)
    stream = env.from_collection([1]).map(Describe()).name("describe").map(lambda c: c)
    [(name, _, _, with_subtasks, *_)] = stream.name("after").execute_and_collect()
    assert name == "Source: Collection Source -> describe -> after -> Sink: Collect"
    assert with_subtasks == f"{name} (1/1)#0"
