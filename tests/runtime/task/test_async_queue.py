"""The async wait operator's element queue: capacity, ordering, watermarks, checkpoint state.

A Hypothesis program interleaves records, watermarks and completions in any order and checks
the queue against a plain model of Flink's rules.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.task.async_queue import AsyncWaitQueue, EmitRecords, EmitWatermark


def flatten(emissions: list[Any]) -> list[Any]:
    """Emissions as a flat list of ("r", value, stamp) and ("w", watermark)."""
    out: list[Any] = []
    for e in emissions:
        if isinstance(e, EmitWatermark):
            out.append(("w", e.watermark))
        else:
            assert isinstance(e, EmitRecords)
            stamps = e.stamps if e.stamps is not None else [None] * len(e.values)
            out.extend(("r", v, s) for v, s in zip(e.values, stamps))
    return out


def test_capacity_bounds_started_records_and_the_rest_wait_in_order() -> None:
    q = AsyncWaitQueue(capacity=2, ordered=True)
    for v in range(5):
        q.add(v, None)
    assert not q.has_room()
    started = q.to_start()
    assert [e.value for e in started] == [0, 1]
    assert q.to_start() == []  # nothing more until one is emitted
    q.complete(started[1].seq, ["b"])
    assert q.drain() == []  # ordered: 0 is still in flight
    assert q.to_start() == []  # 1 is complete but held back: still counts
    q.complete(started[0].seq, ["a"])
    assert flatten(q.drain()) == [("r", "a", None), ("r", "b", None)]
    assert [e.value for e in q.to_start()] == [2, 3]
    assert q.in_flight() == [(2, None), (3, None), (4, None)]


def test_unordered_emits_on_completion_but_not_across_a_watermark() -> None:
    q = AsyncWaitQueue(capacity=10, ordered=False)
    a, b = q.add("a", 1), q.add("b", 2)
    q.add_watermark(5)
    c = q.add("c", 6)
    q.to_start()
    q.complete(c.seq, ["C"])
    assert q.drain() == []  # c is behind the watermark, which waits for a and b
    q.complete(b.seq, ["B"])
    assert flatten(q.drain()) == [("r", "B", 2)]
    q.complete(a.seq, ["A1", "A2"])
    assert flatten(q.drain()) == [("r", "A1", 1), ("r", "A2", 1), ("w", 5), ("r", "C", 6)]
    assert q.is_empty()


def test_a_watermark_on_an_empty_queue_goes_at_once_and_adjacent_ones_merge() -> None:
    q = AsyncWaitQueue(capacity=3, ordered=True)
    q.add_watermark(1)
    assert q.drain() == [EmitWatermark(1)]
    r = q.add("x", None)
    q.add_watermark(3)
    q.add_watermark(4)
    q.to_start()
    q.complete(r.seq, [])  # an empty result emits nothing, but frees the slot
    assert q.drain() == [EmitWatermark(4)]
    assert q.has_room() and q.is_empty()


def test_completing_a_record_twice_or_unstarted_is_refused() -> None:
    q = AsyncWaitQueue(capacity=1, ordered=True)
    first, second = q.add(1, None), q.add(2, None)
    q.to_start()
    with pytest.raises(ValueError, match="#1 is not in flight"):
        q.complete(second.seq, [])
    q.complete(first.seq, [1])
    with pytest.raises(ValueError, match="#0 is not in flight"):
        q.complete(first.seq, [1])
    with pytest.raises(ValueError):
        AsyncWaitQueue(capacity=0, ordered=True)


_step = st.one_of(
    st.tuples(st.just("record"), st.integers(0, 3)),  # timestamp
    st.tuples(st.just("watermark"), st.integers(1, 3)),  # increment
    st.tuples(st.just("complete"), st.integers(0, 1000), st.integers(0, 2)),  # pick, #results
)


@settings(max_examples=300, deadline=None)
@given(
    ordered=st.booleans(),
    capacity=st.integers(1, 4),
    steps=st.lists(_step, max_size=40),
)
def test_queue_follows_flinks_rules_for_any_interleaving(
    ordered: bool, capacity: int, steps: list[Any]
) -> None:
    q = AsyncWaitQueue(capacity=capacity, ordered=ordered)
    started: list[Any] = []
    segment: dict[int, int] = {}  # record -> number of watermarks added before it
    expected: dict[int, list[Any]] = {}  # record -> its results
    watermarks: list[int] = []
    emitted: list[Any] = []

    def drain() -> None:
        emitted.extend(flatten(q.drain()))
        started.extend(q.to_start())
        queued = {v for v, _ in q.in_flight()}
        busy = [e for e in started if e.value in queued]
        assert len(busy) <= capacity  # started and not emitted
        if len(busy) < capacity:  # a free slot: nothing may wait unstarted
            assert len(busy) == len(queued)

    def complete(entry: Any, count: int) -> None:
        expected[entry.value] = [(entry.value, i) for i in range(count)]
        q.complete(entry.seq, expected[entry.value])

    for step in steps:
        if step[0] == "record":
            segment[len(segment)] = len(watermarks)
            q.add(len(segment) - 1, step[1])
        elif step[0] == "watermark":
            watermarks.append((watermarks[-1] if watermarks else 0) + step[1])
            q.add_watermark(watermarks[-1])
        else:
            pending = [e for e in started if e.results is None]
            if pending:
                complete(pending[step[1] % len(pending)], step[2])
        drain()
    while not q.is_empty():  # complete the rest, newest first
        pending = [e for e in started if e.results is None]
        assert pending, "records wait unstarted although nothing is in flight"
        complete(pending[-1], 1)
        drain()

    # every record's results come out once, in one piece, in the segment of its watermarks
    covered = 0  # input watermarks emitted so far (adjacent ones are merged into the last)
    out: dict[int, list[Any]] = {}
    order: list[int] = []
    for item in emitted:
        if item[0] == "w":
            assert item[1] in watermarks
            covered = watermarks.index(item[1]) + 1
        else:
            value = item[1][0]
            assert segment[value] == covered, f"record {value} crossed a watermark"
            if value not in out:
                order.append(value)
            out.setdefault(value, []).append(item[1])
    assert covered == len(watermarks)
    assert out == {v: r for v, r in expected.items() if r}
    assert set(expected) == set(segment)
    if ordered:
        assert order == sorted(order)
