"""benchmarks/kafka_hops.py: an instrumented output record splits the latency of the input
record that made its count into the hops of the path, and only chosen records count."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_hops as hops

MS = 1_000_000


def test_an_output_splits_the_latency_of_the_record_that_made_its_count() -> None:
    keys, sent = [5, 5], [1_000 * MS, 1_010 * MS]
    # (key 5, count 2): the second record, appended at 1,012 ms, in the source task at 1,015,
    # counted at 1,019, the output appended at 1,026 and seen at 1,027.5
    seen = [(5, 2, 1_027 * MS + MS // 2, 1_026, (1_012, 1_015 * MS, 1_019 * MS))]
    times = hops.hop_times(keys, sent, seen, {0, 1})
    assert times == [(2.0, 3.0, 4.0, 7.0, 1.5)]
    assert sum(times[0]) == (seen[0][2] - sent[1]) / MS


def test_only_chosen_first_outputs_with_stamps_count() -> None:
    keys, sent = [1, 2, 1], [0, 0, 10 * MS]
    stamps = (11, 12 * MS, 13 * MS)
    seen = [
        (1, 2, 20 * MS, 14, stamps),  # record 2: chosen
        (1, 2, 30 * MS, 14, stamps),  # a duplicate of it
        (2, 1, 20 * MS, 14, stamps),  # record 1: not chosen (the warm-up)
        (1, 3, 20 * MS, 14, stamps),  # a count beyond what was sent
        (1, 1, 20 * MS, 14, ()),  # an uninstrumented output
    ]
    assert len(hops.hop_times(keys, sent, seen, {0, 2})) == 1


def test_the_figures_are_per_hop_percentiles() -> None:
    times = [(float(i), 2.0 * i, 0.0, 1.0, 5.0) for i in range(1, 101)]
    figures = hops.summarize_hops(times)
    assert figures is not None
    assert figures.p50_ms == (50.0, 100.0, 0.0, 1.0, 5.0)
    assert figures.p99_ms == (99.0, 198.0, 0.0, 1.0, 5.0)
    assert figures.records == 100
    assert "exchange 0.0/0.0" in figures.describe()
    assert hops.summarize_hops([]) is None


def test_the_timeline_bins_a_phase_by_send_time_from_its_first_send() -> None:
    # a phase of four records of key 7 sent at 100, 150, 400 and 420 ms (index 0 is the
    # phase before it); the first two waited 200 ms at the fetch, the last two 2 ms
    keys, sent = [7, 7, 7, 7, 7], [0, 100 * MS, 150 * MS, 400 * MS, 420 * MS]

    def out(count: int, fetch_ms: int) -> tuple[int, int, int, int, tuple[int, ...]]:
        at = sent[count - 1] // MS
        return (
            7,
            count,
            (at + fetch_ms + 4) * MS,
            at + fetch_ms + 3,
            (at + 1, (at + 1 + fetch_ms) * MS, (at + 2 + fetch_ms) * MS),
        )

    seen = [out(1, 0), out(2, 200), out(3, 200), out(4, 2), out(5, 2)]
    timeline = hops.hop_timeline(keys, sent, seen, [1, 2, 3, 4], 250.0)
    assert [(b.start_ms, b.records) for b in timeline] == [(0.0, 2), (250.0, 2)]
    assert timeline[0].p50_ms == (1.0, 200.0, 1.0, 1.0, 1.0)
    assert timeline[0].total_ms == 204.0
    assert timeline[1].total_ms == 6.0
    assert "0: 204.0 (fetch 200.0)" in hops.describe_timeline(timeline)
    assert hops.hop_timeline(keys, sent, seen, [], 250.0) == []
