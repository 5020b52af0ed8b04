"""benchmarks/kafka_load.py: how the Kafka benchmark turns its two logs into figures.

The producer logs ``(key, send ns)`` per input record, the measuring consumer logs ``(key,
running count, visible ns)`` per output record; a record's latency is its send to the first
output whose count covers it. These tests pin that join, the percentile and the saturation
arithmetic, without a broker.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_load as load


def test_an_output_covers_every_record_of_its_key_up_to_its_count() -> None:
    keys, sent = [0, 1, 0, 1], [10, 20, 30, 40]
    # given out of order: the join goes by visible time, so (0, 1) at 15 covers the first
    # record of key 0, and (0, 2) at 45 only the second
    seen = [(1, 2, 50), (0, 2, 45), (0, 1, 15)]
    latencies, overcounts = load.record_latencies(keys, sent, seen)
    assert latencies == [5, 30, 15, 10]
    assert overcounts == 0


def test_a_repeated_or_lower_count_covers_nothing_new() -> None:
    keys, sent = [7, 7, 7], [0, 10, 20]
    seen = [(7, 2, 25), (7, 1, 30), (7, 2, 40)]  # duplicates after the fact (at-least-once)
    latencies, _ = load.record_latencies(keys, sent, seen)
    assert latencies == [25, 15, None]
    summary = load.summarize(latencies)
    assert (summary.measured, summary.missing) == (2, 1)


def test_a_count_beyond_what_was_sent_is_reported() -> None:
    latencies, overcounts = load.record_latencies([3], [100], [(3, 2, 150), (4, 1, 160)])
    assert latencies == [50]
    assert overcounts == 2


def test_the_latency_percentiles_are_nearest_rank() -> None:
    """(percentiles.py has the rule's own tests.)"""
    summary = load.summarize([2_000_000, 1_000_000, 3_000_000, 4_000_000, None])
    assert (summary.p50_ms, summary.p99_ms) == (2.0, 4.0)
    assert (summary.measured, summary.missing) == (4, 1)


def test_saturation_is_the_burst_over_first_send_to_last_visible() -> None:
    sent = [0, 1_000_000_000, 1_500_000_000, 2_000_000_000]
    latencies: list[int | None] = [5, 100_000_000, 1_500_000_000, 500_000_000]
    through, producer = load.saturation(sent, latencies, [1, 2, 3])  # type: ignore[misc]
    # 3 records from 1.0 s (first send) to 3.0 s (the second of them visible last)
    assert through == pytest.approx(1.5)
    assert producer == pytest.approx(3.0)
    assert load.saturation(sent, [*latencies[:3], None], [1, 2, 3]) is None


class LateConsumer:
    """librdkafka's rule: ``consume(n, timeout)`` with fewer than ``n`` records queued waits the
    whole timeout before it returns them; ``poll(timeout)`` waits only while nothing is
    queued. ``waited`` sums the time a real consumer would have waited."""

    def __init__(self, queued: list[int]) -> None:
        self.queued = list(queued)
        self.waited = 0.0

    def consume(self, num_messages: int, timeout: float) -> list[int]:
        if len(self.queued) < num_messages:
            self.waited += timeout
        taken, self.queued = self.queued[:num_messages], self.queued[num_messages:]
        return taken

    def poll(self, timeout: float) -> int | None:
        if not self.queued:
            self.waited += timeout
            return None
        return self.queued.pop(0)


def test_the_measuring_consumer_sees_records_without_waiting_for_a_fuller_batch() -> None:
    """Three records queued are taken at once: waiting for 1,000 (or 50 ms) would add up to
    50 ms to every latency measured below 20,000 records/s. Only an empty consumer is waited
    on, and then up to the timeout."""
    consumer = LateConsumer([1, 2, 3])
    assert load.take(consumer) == [1, 2, 3]
    assert consumer.waited == 0
    assert load.take(consumer) == []
    assert consumer.waited == pytest.approx(0.05)


def test_the_consumers_share_is_append_to_visible_within_the_window() -> None:
    # (key, count, visible ns, broker append ms, stamps): 2 and 5 ms after the append, one outside
    seen = [(1, 1, 12_000_000, 10, ()), (2, 1, 25_000_000, 20, ()), (3, 1, 99_000_000, 1, ())]
    assert load.append_to_visible(seen, 0, 50_000_000) == [2.0, 5.0]
    assert load.append_to_visible(seen, 20_000_000, 2**63) == [5.0, 98.0]
    # the join ignores what follows the visible time
    latencies, _ = load.record_latencies([1, 2], [11_000_000, 21_000_000], seen)
    assert latencies == [1_000_000, 4_000_000]
