"""Kafka -> words -> key_by -> running count -> Kafka, EXACTLY_ONCE, end to end: the job of
``examples/kafka_wordcount.py`` on ``local`` with a seeded ``kill -9`` of a worker once a
read_committed consumer saw a count (so a completed checkpoint held counts' state). A
read_committed consumer must see, for every word, the running counts ``1, 2, ..., n`` exactly
once and in order (``n`` its number of occurrences): a lost update leaves a gap, a duplicated
one repeats a count, and restored keyed state that was lost or applied twice shows as counts
that do not follow on.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from confluent_kafka import Consumer, TopicPartition

from undertow.testing.oracle import oracle_seed
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .kills import RESTARTING, run_killing_a_worker_after_a_checkpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kafka_wordcount.py"
#: 40 copies of the example's text: 200 lines, 1,560 words; at 10 ms per line the job reads
#: for 1 to 2 s (two partitions, filled unevenly by the producer)
COPIES, PACE_S = 40, 0.010


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("kafka_wordcount_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # worker processes cannot import the example: ship its functions by value
    cloudpickle.register_pickle_by_value(module)
    return module


@contextlib.contextmanager
def _first_count(bootstrap: str, topic: str) -> Iterator[Callable[[], bool]]:
    """A probe that turns true once a read_committed consumer got a record of ``topic`` (both
    partitions, from the start); the consumer is closed on exit."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-count-{topic}",
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    seen = False

    def counted() -> bool:
        nonlocal seen
        while not seen:
            message = consumer.poll(0)
            if message is None:
                break
            seen = message.error() is None
        return seen

    try:
        yield counted
    finally:
        consumer.close()


@pytest.mark.restores(catches=["keyed-state"])
@pytest.mark.parametrize("target", ["local"])
def test_kafka_to_kafka_word_count_is_exactly_once_under_a_kill(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kafka_bootstrap: str,
) -> None:
    example = _example()
    seed = oracle_seed()
    text = example.TEXT * COPIES
    lines, counts = example.prepare(kafka_bootstrap, text, uuid.uuid4().hex[:8])
    env = make_env(
        parallelism=2,
        config={
            "execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "0 ms",
        },
    )
    example.build(env, kafka_bootstrap, lines, counts, pace_s=PACE_S)
    client = env.execute_async("kafka wordcount")
    # the kill waits for committed counts: a commit follows a completed checkpoint that held
    # them, so the restored one (that or newer) holds counts' keyed state (two checkpoints alone
    # may complete before the source's first fetch, and a restore of one holding no count
    # passes under the keyed-state control)
    with _first_count(kafka_bootstrap, counts) as counted:
        _, console = run_killing_a_worker_after_a_checkpoint(
            client, capsys, seed, earliest_s=0.05, latest_s=0.5, timeout_s=90.0, flowed=counted
        )
    assert RESTARTING.findall(console), (seed, console)

    expected = Counter(w for line in text for w in example.words(line))
    seen: dict[str, list[int]] = defaultdict(list)
    for word, count in example.read_counts(kafka_bootstrap, counts):
        seen[word].append(count)
    started_again = sorted(w for w, values in seen.items() if values.count(1) > 1)
    evidence(
        not started_again,
        f"the counts of {started_again[:5]} started again at 1 after the restore: the word "
        "counts' keyed state did not come back",
    )
    wrong = {
        w: f"{len(seen.get(w, []))} counts, {len(set(seen.get(w, [])))} distinct, expected 1..{n}"
        for w, n in expected.items()
        if seen.get(w) != list(range(1, n + 1))
    }
    assert not wrong and set(seen) == set(expected), (seed, wrong)
