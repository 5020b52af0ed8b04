"""Side outputs end to end: ``ctx.output(tag, value)`` and ``get_side_output(tag)``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from undertow.datastream import KeyedProcessFunction, OutputTag, ProcessFunction, RuntimeContext
from undertow.datastream.state import ValueStateDescriptor

from .conftest import EnvFactory

EVEN = OutputTag("even")
BIG = OutputTag("big")
UNREAD = OutputTag("unread")


class Split(ProcessFunction):
    """Odd numbers go to the main output; even ones to ``EVEN``, numbers over 40 also to
    ``BIG``, and every tenth number to a tag nobody reads."""

    def process_element(self, value: int, ctx: ProcessFunction.Context) -> Any:
        if value % 2 == 0:
            ctx.output(EVEN, ("even", value))
        else:
            yield value
        if value > 40:
            ctx.output(BIG, value * 100)
        if value % 10 == 0:
            ctx.output(UNREAD, value)


def test_process_function_splits_into_side_outputs(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    numbers = list(range(50))
    split = env.from_collection(numbers).rebalance().process(Split())
    streams = [
        split.map(lambda v: ("main", v)),
        split.get_side_output(EVEN).map(lambda v: ("side-even", v)),
        split.get_side_output(BIG).map(lambda v: ("side-big", v)),
    ]
    result = list(streams[0].union(*streams[1:]).execute_and_collect())

    expected = (
        [("main", n) for n in numbers if n % 2]
        + [("side-even", ("even", n)) for n in numbers if n % 2 == 0]
        + [("side-big", n * 100) for n in numbers if n > 40]
    )
    assert Counter(result) == Counter(expected)


def test_a_side_output_can_be_the_only_consumer(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    split = env.from_collection(range(30)).process(Split())
    assert sorted(split.get_side_output(EVEN).execute_and_collect()) == [
        ("even", n) for n in range(0, 30, 2)
    ]


DUPLICATE = OutputTag("duplicate")


class FirstPerKey(KeyedProcessFunction):
    """Emits the first record of each key; later ones go to ``DUPLICATE`` with a count."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        count = (self.seen.value() or 0) + 1
        self.seen.update(count)
        if count == 1:
            yield value
        else:
            ctx.output(DUPLICATE, (ctx.get_current_key(), count, value))


def test_keyed_process_function_emits_to_a_side_output(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    visits = [("ann", 1), ("bo", 2), ("ann", 3), ("cy", 4), ("bo", 5), ("ann", 6)]
    firsts = env.from_collection(visits).key_by(lambda v: v[0]).process(FirstPerKey())
    duplicates = firsts.get_side_output(DUPLICATE).map(lambda d: ("dup", d))
    result = list(firsts.map(lambda v: ("first", v)).union(duplicates).execute_and_collect())

    seen: Counter[str] = Counter()
    expected = []
    for visit in visits:
        seen[visit[0]] += 1
        if seen[visit[0]] == 1:
            expected.append(("first", visit))
        else:
            expected.append(("dup", (visit[0], seen[visit[0]], visit)))
    assert Counter(result) == Counter(expected)
    # per key, duplicates come in order
    dups = [d for kind, d in result if kind == "dup"]
    assert [d for d in dups if d[0] == "ann"] == [("ann", 2, ("ann", 3)), ("ann", 3, ("ann", 6))]
