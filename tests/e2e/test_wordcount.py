"""Word count and the basic transformations, sources and exchanges, end to end."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import MapFunction, RuntimeContext, RuntimeExecutionMode
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.number_seq import NumberSequenceSource

from .conftest import EnvFactory

LINES = [
    "to be or not to be",
    "that is the question",
    "whether tis nobler in the mind to suffer",
    "the slings and arrows of outrageous fortune",
    "or to take arms against a sea of troubles",
]


def per_key(records: Iterable[Any], key: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    """Records grouped by key, in arrival order."""
    grouped: dict[Any, list[Any]] = defaultdict(list)
    for record in records:
        grouped[key(record)].append(record)
    return dict(grouped)


@pytest.mark.parametrize("chaining", [True, False], ids=["chained", "unchained"])
def test_word_count_emits_rolling_counts_per_word(make_env: EnvFactory, chaining: bool) -> None:
    env = make_env(parallelism=2)
    if not chaining:  # every operator its own task: all records cross the network
        env.disable_operator_chaining()
        env.set_buffer_timeout(0)
    counts = (
        env.from_collection(LINES)
        .flat_map(lambda line: line.split())
        .map(lambda word: (word, 1))
        .key_by(lambda pair: pair[0])
        .sum(1)
    )
    result = list(counts.execute_and_collect())

    words = Counter(w for line in LINES for w in line.split())
    expected = {w: [(w, i) for i in range(1, n + 1)] for w, n in words.items()}
    assert per_key(result, lambda pair: pair[0]) == expected


def test_number_sequence_source_feeds_a_keyed_sum(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    numbers = env.from_source(
        NumberSequenceSource(1, 10000), WatermarkStrategy.no_watermarks(), "seq"
    )
    sums = numbers.map(lambda n: (n % 7, n)).key_by(lambda pair: pair[0]).sum(1)
    result = list(sums.execute_and_collect())

    assert len(result) == 10000
    for key, partials in per_key(result, lambda pair: pair[0]).items():
        inputs = [n for n in range(1, 10001) if n % 7 == key]
        running = [value for _, value in partials]
        # readers interleave, but each rolling sum adds one input to the previous one
        assert running == sorted(running)
        steps = [b - a for a, b in zip([0, *running], running)]
        assert sorted(steps) == inputs


def test_data_generator_source_word_count(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    words = env.from_source(
        DataGeneratorSource(lambda i: f"w{i % 5}", count=1000),
        WatermarkStrategy.no_watermarks(),
        "words",
    )
    counts = words.map(lambda w: (w, 1)).key_by(lambda pair: pair[0]).sum(1)
    result = list(counts.execute_and_collect())

    expected = Counter(f"w{i % 5}" for i in range(1000))
    finals = {
        w: max(n for _, n in partials) for w, partials in per_key(result, lambda p: p[0]).items()
    }
    assert finals == dict(expected)
    assert len(result) == 1000


RECORDS = [
    ("a", 3, "x"),
    ("a", 1, "y"),
    ("b", 5, "z"),
    ("a", 1, "w"),
    ("b", 7, "q"),
    ("a", 4, "v"),
    ("b", 2, "u"),
    ("b", 7, "t"),
]


def rolling(records: list[tuple[str, int, str]], step: Callable[[Any, Any], Any]) -> list[Any]:
    state: dict[str, Any] = {}
    out = []
    for record in records:
        key = record[0]
        state[key] = record if key not in state else step(state[key], record)
        out.append(state[key])
    return out


def test_reduce_and_field_aggregations_on_tuples(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    keyed = env.from_collection(RECORDS).key_by(lambda r: r[0])
    branches = {
        "reduce": keyed.reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])),
        "min": keyed.min(1),
        "max": keyed.max(1),
        "min_by": keyed.min_by(1),
        "max_by": keyed.max_by(1),
    }
    tagged = [stream.map(lambda r, name=name: (name, r)) for name, stream in branches.items()]
    result = list(tagged[0].union(*tagged[1:]).execute_and_collect())

    # Flink's semantics: min/max replace the field in the first record of the key; min_by and
    # max_by keep the whole record holding the extreme, the earlier one on ties
    expected = {
        "reduce": rolling(RECORDS, lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])),
        "min": rolling(RECORDS, lambda a, b: (a[0], min(a[1], b[1]), a[2])),
        "max": rolling(RECORDS, lambda a, b: (a[0], max(a[1], b[1]), a[2])),
        "min_by": rolling(RECORDS, lambda a, b: b if b[1] < a[1] else a),
        "max_by": rolling(RECORDS, lambda a, b: b if b[1] > a[1] else a),
    }
    got = per_key(result, lambda tagged_record: tagged_record[0])
    for name, records in expected.items():
        outputs = [r for _, r in got[name]]
        assert per_key(outputs, lambda r: r[0]) == per_key(records, lambda r: r[0]), name


def test_filter_and_union(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    evens = env.from_collection(range(50)).filter(lambda n: n % 2 == 0)
    letters = env.from_collection(["a", "b", "c"])
    more = env.from_source(NumberSequenceSource(100, 120), WatermarkStrategy.no_watermarks(), "s")
    result = list(evens.union(letters, more.filter(lambda n: n > 110)).execute_and_collect())

    expected = [n for n in range(50) if n % 2 == 0] + ["a", "b", "c"] + list(range(111, 121))
    assert Counter(map(str, result)) == Counter(map(str, expected))


class TagSubtask(MapFunction):
    """Pairs each record with the index of the subtask that saw it."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value: Any) -> Any:
        return (value, self.index)


def test_exchanges_deliver_every_record_exactly_once(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    n = 200
    # (number, index of the upstream subtask that emitted it)
    upstream = env.from_source(
        NumberSequenceSource(0, n - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(TagSubtask())

    def downstream(stream: Any, name: str, parallelism: int) -> Any:
        tagged = stream.map(TagSubtask()).set_parallelism(parallelism)
        return tagged.map(lambda r, name=name: (name, r[0][0], r[0][1], r[1]))

    branches = [
        downstream(upstream.rebalance(), "rebalance", 3),
        downstream(upstream.shuffle(), "shuffle", 3),
        downstream(upstream.rescale(), "rescale", 4),
        downstream(upstream.forward(), "forward", 2),
        downstream(upstream.broadcast(), "broadcast", 3),
        downstream(upstream.global_(), "global", 3),
        downstream(upstream.partition_custom(lambda key, count: key % count, lambda r: r[0]),
                   "custom", 3),
    ]  # fmt: skip
    result = list(branches[0].union(*branches[1:]).execute_and_collect())

    by_kind = per_key(result, lambda r: r[0])
    assert set(by_kind) == {
        "rebalance", "shuffle", "rescale", "forward", "broadcast", "global", "custom"
    }  # fmt: skip
    for kind, rows in by_kind.items():
        numbers = Counter(number for _, number, _, _ in rows)
        copies = 3 if kind == "broadcast" else 1
        assert numbers == Counter({i: copies for i in range(n)}), kind
    for _, _, up, down in by_kind["forward"]:
        assert down == up
    for _, _, up, down in by_kind["rescale"]:
        assert down // 2 == up  # 2 -> 4: each upstream subtask feeds its own two
    assert {down for _, _, _, down in by_kind["global"]} == {0}
    for _, number, _, down in by_kind["custom"]:
        assert down == number % 3
    pairs = Counter((number, down) for _, number, _, down in by_kind["broadcast"])
    assert pairs == Counter({(i, d): 1 for i in range(n) for d in range(3)})
    rebalanced = Counter(down for _, _, _, down in by_kind["rebalance"])
    assert set(rebalanced) == {0, 1, 2}


def test_batch_mode_keyed_sum_emits_only_final_results(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2, mode=RuntimeExecutionMode.BATCH)
    pairs = [(w, 1) for line in LINES for w in line.split()]
    result = list(env.from_collection(pairs).key_by(lambda p: p[0]).sum(1).execute_and_collect())

    expected = Counter(w for w, _ in pairs)
    assert sorted(result) == sorted(expected.items())
