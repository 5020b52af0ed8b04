"""Where a record's end-to-end latency goes, hop by hop, for benchmarks/kafka.py (issue 28).

With ``--hops`` undertow's job (benchmarks/kafka_engines.py, ``UndertowEngine(hops=True)``)
carries three stamps with every count it writes: the input record's broker append time (the
input topic uses ``LogAppendTime``, so the record's Kafka timestamp is it), the wall clock in
the task that reads it (chained to the source, right after the reader emitted it) and the
wall clock in the task that counts it (after the keyed exchange; the final map and the sink
are chained to the count, so it is also when the sink hands the record to its producer). The
measuring consumer adds the output's broker append time and the time it saw the output.
Together with the send time from the producer's log that splits a latency into:

========== ======================================================================
hop        from -> to
========== ======================================================================
produce    the harness's send -> the broker's append of the input record
fetch      input append -> the source task has the record (consumer fetch, the
           fetcher thread's queue, the task's wake-up)
exchange   source task -> keyed task (network buffers, flush, the keyed task's
           queue and its CPU turn)
sink       keyed task -> the broker's append of the output record (the sink
           producer's linger and poll cadence, the produce request)
observe    output append -> the measuring consumer saw it
========== ======================================================================

The output's stamps are those of the record that made its count (the newest of its key), so
each output record gives the hops of exactly one input record. Broker times have millisecond
resolution, so a hop next to one is exact to about 1 ms. Pure: tested in
tests/benchmarks/test_kafka_hops.py.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from percentiles import percentile

#: The hops in path order (module doc).
HOPS = ("produce", "fetch", "exchange", "sink", "observe")


@dataclass(frozen=True, slots=True)
class Stamps:
    """What one output record carries besides its key and count (module doc)."""

    input_append_ms: int
    source_ns: int
    keyed_ns: int


def parse_stamps(extra: Sequence[int]) -> Stamps | None:
    """The stamps an output value carries after ``<key>,<count>`` (the measuring consumer's
    log keeps them as ints, benchmarks/kafka_load.py), None for an uninstrumented job."""
    return Stamps(*extra) if len(extra) == 3 else None


@dataclass(frozen=True, slots=True)
class HopFigures:
    """Per hop (in :data:`HOPS` order) its p50 and p99 in ms over ``records`` input records."""

    p50_ms: tuple[float, ...]
    p99_ms: tuple[float, ...]
    records: int

    def describe(self) -> str:
        cells = ", ".join(f"{name} {p50:,.1f}/{p99:,.1f}"
                          for name, p50, p99 in zip(HOPS, self.p50_ms, self.p99_ms))  # fmt: skip
        return f"hops p50/p99 ms: {cells} ({self.records:,} records)"


def hop_times(
    keys: Sequence[int],
    sent_ns: Sequence[int],
    seen: Sequence[tuple[int, int, int, int, tuple[int, ...]]],
    chosen: set[int],
) -> list[tuple[float, ...]]:
    """Each hop in ms (:data:`HOPS` order) of the input records at the send-log indices in
    ``chosen`` that made an output's count. ``seen`` is the measuring consumer's log, ``(key,
    count, visible ns, output append ms, stamps)`` per output record; an output without stamps,
    whose count was not sent (a wrong count) or that repeats one already seen (a duplicate)
    gives nothing."""
    return [times for _, times in _indexed_hop_times(keys, sent_ns, seen, chosen)]


def _indexed_hop_times(
    keys: Sequence[int],
    sent_ns: Sequence[int],
    seen: Sequence[tuple[int, int, int, int, tuple[int, ...]]],
    chosen: set[int],
) -> list[tuple[int, tuple[float, ...]]]:
    """:func:`hop_times` with each record's send-log index."""
    indices: dict[int, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        indices[key].append(i)
    done: set[int] = set()
    times = []
    for key, count, visible_ns, out_append_ms, extra in seen:
        stamps = parse_stamps(extra)
        mine = indices.get(key, [])
        if stamps is None or not 0 < count <= len(mine):
            continue
        index = mine[count - 1]
        if index not in chosen or index in done:
            continue
        done.add(index)
        in_append_ns = stamps.input_append_ms * 1_000_000
        out_append_ns = out_append_ms * 1_000_000
        marks = (sent_ns[index], in_append_ns, stamps.source_ns, stamps.keyed_ns,
                 out_append_ns, visible_ns)  # fmt: skip
        times.append((index, tuple((b - a) / 1e6 for a, b in itertools.pairwise(marks))))
    return times


def summarize_hops(times: Sequence[tuple[float, ...]]) -> HopFigures | None:
    """p50 and p99 of each hop over ``times`` (None if empty)."""
    if not times:
        return None
    columns = list(zip(*times))
    return HopFigures(tuple(percentile(c, 0.5, "nearest-rank") for c in columns),
                      tuple(percentile(c, 0.99, "nearest-rank") for c in columns),
                      len(times))  # fmt: skip


@dataclass(frozen=True, slots=True)
class TimelineBin:
    """The records sent in ``[start_ms, start_ms + width)`` after a phase began: how many, and
    the p50 of each hop (:data:`HOPS` order) and of their sum, in ms."""

    start_ms: float
    records: int
    p50_ms: tuple[float, ...]
    total_ms: float


def hop_timeline(
    keys: Sequence[int],
    sent_ns: Sequence[int],
    seen: Sequence[tuple[int, int, int, int, tuple[int, ...]]],
    phase: Sequence[int],
    bin_ms: float,
) -> list[TimelineBin]:
    """Where the latency of a phase's records went over the phase's course: the phase's
    records (send-log indices ``phase``, in send order) in bins of ``bin_ms`` by send time
    from the phase's first send, each bin's per-hop p50 (bins without an instrumented
    record are left out). A transient at the phase's start shows in its first bins, and in
    the hop that carries it."""
    if not phase:
        return []
    began = sent_ns[phase[0]]
    bins: dict[int, list[tuple[float, ...]]] = defaultdict(list)
    for index, times in _indexed_hop_times(keys, sent_ns, seen, set(phase)):
        bins[int((sent_ns[index] - began) / 1e6 // bin_ms)].append(times)
    timeline = []
    for number in sorted(bins):
        times = bins[number]
        columns = list(zip(*times))
        total = percentile([sum(t) for t in times], 0.5, "nearest-rank")
        timeline.append(TimelineBin(number * bin_ms, len(times),
                                    tuple(percentile(c, 0.5, "nearest-rank") for c in columns),
                                    total))  # fmt: skip
    return timeline


def describe_timeline(timeline: Sequence[TimelineBin]) -> str:
    """One cell per bin: ``start ms: total p50 (the largest hop and its p50)``."""
    cells = []
    for one in timeline:
        worst = max(range(len(HOPS)), key=lambda h: one.p50_ms[h])
        cells.append(f"{one.start_ms:,.0f}: {one.total_ms:,.1f} "
                     f"({HOPS[worst]} {one.p50_ms[worst]:,.1f})")  # fmt: skip
    return "timeline p50 ms by send time (largest hop): " + ", ".join(cells)
