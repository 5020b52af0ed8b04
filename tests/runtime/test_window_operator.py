"""The window operator through the operator test harness.

Expected results come from brute-force models in this file (scan candidate windows, sort and
split sessions, replay watermarks), not from the operator's own formulas.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.api.functions import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    WindowFunction,
)
from undertow.api.output_tag import OutputTag
from undertow.api.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeEvictor,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from undertow.common import Types
from undertow.core.errors import GraphBuildError, StateError
from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.task.window_functions import (
    WindowContents,
    aggregate_window_contents,
    apply_window_contents,
    process_window_contents,
    reduce_window_contents,
)
from undertow.runtime.task.window_operator import NUM_LATE_RECORDS_DROPPED, WindowOperator
from undertow.state.descriptors import ValueStateDescriptor
from undertow.testing.harness import (
    KeyedOneInputOperatorTestHarness,
    OneInputOperatorTestHarness,
    Watermark,
)

# --- helpers and brute-force models ----------------------------------------------------------


def _sum(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return (a[0], a[1] + b[1])


def _harness(
    assigner: Any,
    contents: WindowContents,
    *,
    trigger: Any = None,
    key: Callable[[Any], Any] = lambda v: v[0],
    lateness: int = 0,
    late_tag: str | None = None,
    evictor: Any = None,
) -> KeyedOneInputOperatorTestHarness:
    op = WindowOperator(
        assigner=assigner,
        trigger=trigger if trigger is not None else assigner.get_default_trigger(None),
        key_selector=key,
        window_function=contents.window_function,
        state_descriptor=contents.state_descriptor,
        allowed_lateness_ms=lateness,
        late_data_tag_id=late_tag,
        evictor=evictor,
    )
    harness = KeyedOneInputOperatorTestHarness(op)
    harness.open()
    return harness


def _timed_output(h: KeyedOneInputOperatorTestHarness) -> list[tuple[Any, int]]:
    """The harness output; every window result carries a timestamp."""
    out = []
    for value, ts in h.get_output():
        assert ts is not None
        out.append((value, ts))
    return out


def _windows_containing(ts: int, size: int, slide: int, offset: int = 0) -> list[tuple[int, int]]:
    """Scan starts offset + k*slide around ts and keep the windows that contain it."""
    first_k = (ts - size - offset) // slide - 1
    found = []
    for k in range(first_k, first_k + size // slide + 4):
        start = offset + k * slide
        if start <= ts < start + size:
            found.append((start, start + size))
    return found


def _sessions(timestamps: list[int], gap: int) -> list[tuple[int, int, list[int]]]:
    """Sort, then split where the next record starts after the current session's end."""
    sessions: list[tuple[int, int, list[int]]] = []
    for ts in sorted(timestamps):
        if sessions and ts <= sessions[-1][1]:
            start, end, members = sessions[-1]
            sessions[-1] = (start, max(end, ts + gap), [*members, ts])
        else:
            sessions.append((ts, ts + gap, [ts]))
    return sessions


class _CountAgg(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class _AvgAgg(AggregateFunction[Any, tuple[int, int], float]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Any, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class _WindowInfo(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
    """Emits (key, start, end, inputs as a list)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        w = context.window()
        yield (key, w.start, w.end, list(elements))


class _ListValues(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield [v[1] for v in elements]


# --- event-time tumbling ---------------------------------------------------------------------


def test_tumbling_event_time_reduce_out_of_order() -> None:
    records = [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5), ("a", 6), ("c", 7)]
    stamps = [12, 3, 1, 25, 19, 9, -4]
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum))
    h.process_elements(records[:4], stamps[:4])
    h.process_watermark(-5)  # nothing is late yet: the record at -4 is in [-10, 0)
    h.process_elements(records[4:], stamps[4:])
    h.process_watermark(100)

    expected: dict[tuple[str, int], int] = defaultdict(int)
    for (k, v), ts in zip(records, stamps):
        ((start, _),) = _windows_containing(ts, 10, 10)
        expected[(k, start)] += v
    got = {(value[0], ts - 9): value[1] for value, ts in _timed_output(h)}
    assert got == dict(expected)
    assert len(h.get_output()) == len(expected)
    assert h.get_watermarks() == [-5, 100]
    # nothing left behind: every window's state and timers are gone
    assert h.num_event_time_timers() == 0
    assert h.num_keyed_state_entries("window-contents", TimeWindow(0, 10)) == 0


def test_a_reduce_raising_on_a_record_fails_naming_that_record() -> None:
    def divide(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
        return (a[0], a[1] // b[1])

    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(divide))
    with pytest.raises(ZeroDivisionError) as caught:
        h.process_elements([("a", 4), ("a", 2), ("a", 0), ("a", 1)], [1, 2, 3, 4])
    assert caught.value.__notes__ == ["on the record ('a', 0)"]


def test_one_watermark_emits_one_batch_in_window_end_order() -> None:
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum))
    h.process_elements([("a", 1), ("b", 1), ("a", 1), ("b", 1), ("a", 1)], [35, 5, 5, 22, 18])
    batches_before = h.output.batches
    h.process_watermark(50)
    assert h.output.batches == batches_before + 1
    events = h.get_output_with_watermarks()
    assert isinstance(events[-1], Watermark) and events[-1].timestamp == 50
    ends = [ts for _, ts in _timed_output(h)]
    assert ends == sorted(ends) == [9, 9, 19, 29, 39]  # window-end order across keys too


def test_late_records_are_dropped_and_counted() -> None:
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum))
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == 0
    h.process_element(("a", 1), 15)
    h.process_watermark(20)
    h.process_element(("a", 100), 5)  # window [0, 10) ended at watermark 9
    h.process_element(("a", 2), 21)  # on time
    h.process_watermark(30)
    assert h.get_output() == [(("a", 1), 19), (("a", 2), 29)]
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == 1


def test_late_records_go_to_the_side_output() -> None:
    tag = OutputTag("late")
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum), late_tag=tag.tag_id)
    h.process_watermark(20)
    h.process_elements([("a", 1), ("a", 2)], [3, 25])
    h.process_watermark(40)
    assert h.get_side_output(tag) == [(("a", 1), 3)]
    assert h.get_output() == [(("a", 2), 29)]
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == 0


def test_allowed_lateness_refires_then_cleans_up() -> None:
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum), lateness=5)
    h.process_element(("a", 1), 3)
    h.process_watermark(9)
    assert h.get_output() == [(("a", 1), 9)]
    h.process_element(("a", 2), 4)  # late but within the allowed lateness: fires again
    assert h.get_output() == [(("a", 1), 9), (("a", 3), 9)]
    assert h.num_keyed_state_entries("window-contents", TimeWindow(0, 10)) == 1
    h.process_watermark(14)  # cleanup time 9 + 5
    assert h.num_keyed_state_entries("window-contents", TimeWindow(0, 10)) == 0
    assert h.num_event_time_timers() == 0
    h.process_element(("a", 4), 5)  # now beyond the lateness
    assert len(h.get_output()) == 2
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == 1


def test_negative_timestamps_and_offset() -> None:
    stamps = list(range(-23, 8, 3))
    records = [("k", ts) for ts in stamps]
    h = _harness(TumblingEventTimeWindows.of(10, 3), process_window_contents(_WindowInfo()))
    h.process_elements(records, stamps)
    h.process_watermark(1000)
    expected = defaultdict(list)
    for record, ts in zip(records, stamps):
        ((start, end),) = _windows_containing(ts, 10, 10, offset=3)
        expected[(record[0], start, end)].append(record)
    got = {(k, s, e): vals for k, s, e, vals in h.extract_output_values()}
    assert got == dict(expected)
    assert (-17, -7) in {(s, e) for _, s, e in got}
    assert all(ts == e - 1 for (_, _, e, _), ts in h.get_output())


def test_event_time_window_needs_timestamps() -> None:
    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(_sum))
    with pytest.raises(ValueError, match="no timestamp"):
        h.process_element(("a", 1))


# --- sliding and sessions --------------------------------------------------------------------


def test_sliding_event_time_counts() -> None:
    stamps = [0, 3, 4, 9, 10, 14, 22, 23, 37, -6]
    records = [("a" if i % 3 else "b", i) for i in range(len(stamps))]

    class Tag(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            (count,) = elements
            yield (key, context.window().start, count)

    h = _harness(SlidingEventTimeWindows.of(10, 5), aggregate_window_contents(_CountAgg(), Tag()))
    h.process_elements(records, stamps)
    h.process_watermark(100)
    expected: dict[tuple[str, int], int] = defaultdict(int)
    for (k, _), ts in zip(records, stamps):
        for start, _ in _windows_containing(ts, 10, 5):
            expected[(k, start)] += 1
    got = {(k, s): c for k, s, c in h.extract_output_values()}
    assert got == dict(expected)


@pytest.mark.parametrize("kind", ["process", "reduce", "aggregate"])
def test_session_windows_merge_out_of_order(kind: str) -> None:
    stamps = [0, 30, 15, 8, 22, 60, 61, 90]
    records = [("a", ts) for ts in stamps[:5]] + [("b", 60), ("b", 61), ("a", 90)]
    gap = 10

    class Sum(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            (value,) = elements
            total = value[1] if isinstance(value, tuple) else value
            yield (key, context.window().start, context.window().end, total)

    if kind == "process":
        contents = process_window_contents(_WindowInfo())
    elif kind == "reduce":
        contents = reduce_window_contents(_sum, Sum())
    else:

        class SumAgg(_CountAgg):
            def add(self, value: Any, accumulator: int) -> int:
                return accumulator + value[1]

        contents = aggregate_window_contents(SumAgg(), Sum())
    h = _harness(EventTimeSessionWindows.with_gap(gap), contents)
    h.process_elements(records[:4], stamps[:4])
    h.process_watermark(5)  # the growing session of "a" must not fire yet
    assert h.get_output() == []
    h.process_elements(records[4:], stamps[4:])
    h.process_watermark(1000)

    expected = {}
    for key in ("a", "b"):
        key_stamps = [ts for (k, _), ts in zip(records, stamps) if k == key]
        for start, end, members in _sessions(key_stamps, gap):
            expected[(key, start, end)] = members if kind == "process" else sum(members)
    got = {}
    for value, ts in h.get_output():
        k, start, end, payload = value
        assert ts == end - 1
        got[(k, start, end)] = sorted(v for _, v in payload) if kind == "process" else payload
    assert got == expected
    assert h.num_event_time_timers() == 0
    assert h.num_keyed_state_entries("merging-window-set") == 0
    h.process_element(("a", 5), 50)  # [50, 60) ended long ago
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == 1


def test_processing_time_sessions() -> None:
    h = _harness(ProcessingTimeSessionWindows.with_gap(10), process_window_contents(_ListValues()))
    h.set_processing_time(0)
    h.process_element(("a", 1))
    h.set_processing_time(5)
    h.process_element(("a", 2))
    h.set_processing_time(13)
    assert h.get_output() == []
    h.set_processing_time(14)  # the session [0, 15) ends: timer at its max timestamp
    assert h.get_output() == [([1, 2], 14)]
    assert h.num_processing_time_timers() == 0


def test_dynamic_processing_time_sessions_take_each_records_gap() -> None:
    """The gap comes from the record: a session ends ``gap`` after its last record, and a
    record with a longer gap keeps it open longer."""
    h = _harness(
        DynamicProcessingTimeSessionWindows(lambda record: record[1] * 10),
        process_window_contents(_ListValues()),
    )
    h.set_processing_time(0)
    h.process_element(("a", 1))  # [0, 10)
    h.set_processing_time(5)
    h.process_element(("a", 3))  # [5, 35): merged into [0, 35)
    h.process_element(("b", 1))  # [5, 15)
    h.set_processing_time(14)
    assert h.get_output() == [([1], 14)]
    h.set_processing_time(33)
    assert len(h.get_output()) == 1
    h.set_processing_time(34)
    assert h.get_output()[1:] == [([1, 3], 34)]
    assert h.num_processing_time_timers() == 0


class _AmountReached(Trigger[Any, Any]):
    """A user's trigger: fire and purge once a key's amounts reach ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = ValueStateDescriptor("total", Types.INT())

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        total = ctx.get_partitioned_state(self.total)
        total.update((total.value() or 0) + element[1])
        if total.value() < self.limit:
            return TriggerResult.CONTINUE
        self.clear(window, ctx)
        return TriggerResult.FIRE_AND_PURGE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_merge(self, window: Any, ctx: Any) -> None:
        pass

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.total).clear()


def test_global_windows_fire_only_as_a_users_trigger_says() -> None:
    never = _harness(GlobalWindows.create(), process_window_contents(_ListValues()))
    never.process_elements([("a", 50), ("a", 60)], [1, 2])
    never.process_watermark(10**6)
    never.set_processing_time(10**6)
    assert never.get_output() == [], "the default NeverTrigger never fires"
    h = _harness(GlobalWindows.create(), process_window_contents(_ListValues()),
                 trigger=_AmountReached(100))  # fmt: skip
    h.process_elements([("a", 50), ("b", 70), ("a", 60), ("a", 1)], [1, 2, 3, 4])
    assert h.extract_output_values() == [[50, 60]], "fired and purged: 1 starts anew"
    h.process_elements([("b", 30), ("a", 99)], [5, 6])
    assert h.extract_output_values()[1:] == [[70, 30], [1, 99]]


def test_session_merge_moves_trigger_state() -> None:
    # CountTrigger keeps a count per window; merging sessions must add their counts up.
    h = _harness(
        EventTimeSessionWindows.with_gap(10),
        process_window_contents(_ListValues()),
        trigger=CountTrigger.of(3),
    )
    h.process_elements([("a", 0), ("a", 20)], [0, 20])  # two sessions, one record each
    assert h.get_output() == []
    h.process_element(("a", 10), 10)  # bridges both: the merged session counts 3
    assert [sorted(v) for v in h.extract_output_values()] == [[0, 10, 20]]


# --- processing time -------------------------------------------------------------------------


def test_tumbling_processing_time_with_the_manual_clock() -> None:
    h = _harness(TumblingProcessingTimeWindows.of(10), reduce_window_contents(_sum))
    h.set_processing_time(3)
    h.process_elements([("a", 1), ("a", 2)], [1000, 1000])  # record timestamps do not matter
    h.set_processing_time(8)
    h.process_elements([("a", 3), ("b", 4)])
    h.set_processing_time(12)
    assert sorted(h.get_output()) == [(("a", 6), 9), (("b", 4), 9)]
    h.process_element(("a", 5))
    h.set_processing_time(18)
    assert len(h.get_output()) == 2
    h.set_processing_time(19)  # [10, 20) fires when the clock reaches its max timestamp
    assert h.get_output()[2:] == [(("a", 5), 19)]
    assert h.num_processing_time_timers() == 0
    h.process_watermark(10**6)  # watermarks do not fire processing-time windows
    assert len(h.get_output()) == 3


def test_processing_time_windows_still_open_at_finish_never_fire() -> None:
    """Flink's streaming rule: the processing-time service is quiesced before ``finish()``,
    so an open processing-time window drops its contents at the end of input."""
    h = _harness(TumblingProcessingTimeWindows.of(10), reduce_window_contents(_sum))
    h.set_processing_time(3)
    h.process_element(("a", 1))
    h.finish()
    h.set_processing_time(100)
    assert h.get_output() == []
    h.close()


# --- count windows and triggers --------------------------------------------------------------


def test_count_tumbling_windows() -> None:
    records = [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20), ("a", 4), ("b", 30), ("a", 5)]
    h = _harness(CountTumblingWindowAssigner.of(3), reduce_window_contents(_sum))
    h.process_elements(records)
    per_key: dict[str, list[int]] = defaultdict(list)
    for k, v in records:
        per_key[k].append(v)
    expected = sorted(
        (k, sum(vals[i : i + 3])) for k, vals in per_key.items() for i in range(0, len(vals) - 2, 3)
    )
    assert sorted(h.extract_output_values()) == expected
    assert all(ts == 2**63 - 1 for _, ts in h.get_output())
    assert h.num_keyed_state_entries("window-contents", CountWindow(0)) == 0  # purged


def test_count_sliding_windows() -> None:
    values = list(range(1, 10))
    h = _harness(CountSlidingWindowAssigner.of(3, 2), process_window_contents(_ListValues()))
    h.process_elements([("k", v) for v in values])
    # window k holds elements 2k .. 2k+2 and fires when full
    expected = [values[2 * k : 2 * k + 3] for k in range(len(values)) if 2 * k + 3 <= len(values)]
    assert h.extract_output_values() == expected


def test_global_window_count_trigger_fire_vs_purge() -> None:
    records = [("k", v) for v in (1, 2, 3, 4, 5)]
    keep = _harness(
        GlobalWindows.create(), reduce_window_contents(_sum), trigger=CountTrigger.of(2)
    )
    keep.process_elements(records)
    assert [v for _, v in keep.extract_output_values()] == [3, 10]
    purge = _harness(
        GlobalWindows.create(),
        reduce_window_contents(_sum),
        trigger=PurgingTrigger.of(CountTrigger.of(2)),
    )
    purge.process_elements(records)
    assert [v for _, v in purge.extract_output_values()] == [3, 7]


def test_continuous_event_time_trigger_fires_early() -> None:
    h = _harness(
        TumblingEventTimeWindows.of(100),
        reduce_window_contents(_sum),
        trigger=ContinuousEventTimeTrigger.of(30),
    )
    h.process_element(("a", 1), 5)
    h.process_watermark(29)
    assert h.get_output() == []
    h.process_watermark(30)
    assert h.get_output() == [(("a", 1), 99)]
    h.process_element(("a", 2), 40)
    # fires at 60 and at the window's end 99; the 90 that the firing at 60 registers waits for
    # the next watermark (PyFlink's timer rule), and the window's end clears it
    h.process_watermark(100)
    assert h.get_output()[1:] == [(("a", 3), 99)] * 2
    assert h.num_event_time_timers() == 0


def test_continuous_processing_time_trigger_fires_every_interval_until_the_window_ends() -> None:
    """Flink's rule: the first record registers the next multiple of the interval after the
    aligned clock, each firing the next one, capped at the window's max timestamp."""
    h = _harness(
        TumblingProcessingTimeWindows.of(100),
        reduce_window_contents(_sum),
        trigger=ContinuousProcessingTimeTrigger.of(30),
    )
    h.set_processing_time(5)
    h.process_element(("a", 1))
    h.set_processing_time(29)
    assert h.get_output() == []
    h.set_processing_time(30)
    assert h.get_output() == [(("a", 1), 99)]
    h.set_processing_time(40)
    h.process_element(("a", 2))
    h.set_processing_time(60)
    assert h.get_output()[1:] == [(("a", 3), 99)]
    h.set_processing_time(99)  # 90, then the window's end (the cap) fire
    assert h.get_output()[2:] == [(("a", 3), 99)] * 2
    assert h.num_processing_time_timers() == 0
    h.process_watermark(10**6)  # watermarks fire nothing
    assert len(h.get_output()) == 4


# --- evictors --------------------------------------------------------------------------------


def test_count_evictor_gives_flink_count_window_with_slide() -> None:
    values = list(range(1, 8))
    h = _harness(
        GlobalWindows.create(),
        process_window_contents(_ListValues()),
        trigger=CountTrigger.of(2),
        evictor=CountEvictor.of(3),
    )
    h.process_elements([("k", v) for v in values])
    # fires every 2 records with the last (at most) 3 records seen so far
    expected = [values[max(0, n - 3) : n] for n in range(2, len(values) + 1, 2)]
    assert h.extract_output_values() == expected


def test_count_evictor_after_the_function() -> None:
    h = _harness(
        GlobalWindows.create(),
        process_window_contents(_ListValues()),
        trigger=CountTrigger.of(3),
        evictor=CountEvictor.of(1, do_evict_after=True),
    )
    h.process_elements([("k", v) for v in range(1, 7)])
    assert h.extract_output_values() == [[1, 2, 3], [3, 4, 5, 6]]


def test_time_evictor_in_tumbling_window() -> None:
    stamps = [5, 50, 85, 92, 95, 150]
    records = [("k", ts) for ts in stamps]
    h = _harness(
        TumblingEventTimeWindows.of(100),
        process_window_contents(_ListValues()),
        evictor=TimeEvictor.of(10),
    )
    h.process_elements(records, stamps)
    h.process_watermark(1000)
    expected = []
    for start in (0, 100):
        in_window = [ts for ts in stamps if start <= ts < start + 100]
        expected.append([ts for ts in in_window if ts > max(in_window) - 10])
    assert h.extract_output_values() == expected


@pytest.mark.parametrize("kind", ["reduce", "aggregate"])
def test_evicting_reduce_and_aggregate(kind: str) -> None:
    if kind == "reduce":
        contents = reduce_window_contents(_sum, evicting=True)
    else:
        contents = aggregate_window_contents(_AvgAgg(), evicting=True)
    assert contents.state_descriptor.kind == "list"
    h = _harness(
        GlobalWindows.create(), contents, trigger=CountTrigger.of(2), evictor=CountEvictor.of(2)
    )
    h.process_elements([("k", v) for v in (1, 2, 3, 4)])
    out = h.extract_output_values()
    assert out == ([("k", 3), ("k", 7)] if kind == "reduce" else [1.5, 3.5])


@pytest.mark.parametrize("kind", ["reduce", "aggregate"])
def test_an_evicting_fold_opens_clears_and_closes_its_window_function(kind: str) -> None:
    calls: list[Any] = []

    class Recording(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
        def open(self, runtime_context: RuntimeContext) -> None:
            calls.append("open")

        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            yield (key, *elements)

        def clear(self, context: Any) -> None:
            calls.append(("clear", context.window()))

        def close(self) -> None:
            calls.append("close")

    if kind == "reduce":
        contents = reduce_window_contents(_sum, Recording(), evicting=True)
    else:
        contents = aggregate_window_contents(_AvgAgg(), Recording(), evicting=True)
    h = _harness(TumblingEventTimeWindows.of(10), contents, evictor=CountEvictor.of(5))
    h.process_elements([("a", 1), ("a", 2)], [1, 2])
    h.process_watermark(20)
    assert h.extract_output_values() == [("a", ("a", 3) if kind == "reduce" else 1.5)]
    h.close()
    assert calls == ["open", ("clear", TimeWindow(0, 10)), "close"]


class _Told:
    """Logs ``(name, hook, checkpoint id)`` for each checkpoint hook into ``calls``."""

    def __init__(self, name: str, calls: list[Any]) -> None:
        self.name, self.calls = name, calls

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.calls.append((self.name, "barrier", checkpoint_id))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.calls.append((self.name, "complete", checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.calls.append((self.name, "aborted", checkpoint_id))


class _ToldProcess(_Told, _WindowInfo):
    pass


class _ToldApply(_Told, WindowFunction[Any, Any, Any, TimeWindow]):
    def apply(self, key: Any, window: TimeWindow, inputs: Iterable[Any]) -> Iterable[Any]:
        yield (key, list(inputs))


class _ToldReduce(_Told, ReduceFunction[tuple[str, int]]):
    def reduce(self, value1: Any, value2: Any) -> Any:
        return _sum(value1, value2)


class _ToldAvg(_Told, _AvgAgg):
    pass


def _told_contents(flavour: str, calls: list[Any]) -> WindowContents:
    window, evicting = _ToldProcess("window", calls), flavour.startswith("evicting")
    if flavour == "process":
        return process_window_contents(window)
    if flavour == "apply":
        return apply_window_contents(_ToldApply("window", calls))
    if flavour == "reduce only":
        return reduce_window_contents(_ToldReduce("fold", calls))
    if flavour.endswith("reduce"):
        return reduce_window_contents(_ToldReduce("fold", calls), window, evicting=evicting)
    return aggregate_window_contents(_ToldAvg("fold", calls), window, evicting=evicting)


@pytest.mark.parametrize(
    "flavour",
    ["process", "apply", "reduce only", "reduce", "aggregate", "evicting reduce",
     "evicting aggregate"],
)  # fmt: skip
def test_the_window_operator_passes_checkpoint_hooks_on_to_every_function(flavour: str) -> None:
    """As a map operator does (Flink's AbstractUdfStreamOperator): the barrier, completion and
    abort reach the reduce/aggregate function and the window function that implement them,
    the folding function first."""
    calls: list[Any] = []
    contents = _told_contents(flavour, calls)
    evictor = CountEvictor.of(5) if flavour.startswith("evicting") else None
    h = _harness(TumblingEventTimeWindows.of(10), contents, evictor=evictor)
    h.process_elements([("a", 1), ("a", 2)], [1, 2])
    h.operator.prepare_snapshot_pre_barrier(1)
    h.operator.notify_checkpoint_complete(1)
    h.operator.notify_checkpoint_aborted(2)
    h.process_watermark(20)
    assert len(h.extract_output_values()) == 1
    h.close()
    names = ["fold"] if flavour == "reduce only" else ["window"]
    if flavour in ("reduce", "aggregate", "evicting reduce", "evicting aggregate"):
        names = ["fold", "window"]
    expected = [(n, hook, cid) for hook, cid in (("barrier", 1), ("complete", 1), ("aborted", 2))
                for n in names]  # fmt: skip
    assert calls == expected


# --- window function flavours ----------------------------------------------------------------


def test_reduce_function_object_with_process_window_function() -> None:
    class Sum(ReduceFunction[tuple[str, int]]):
        def reduce(self, value1: Any, value2: Any) -> Any:
            return (value1[0], value1[1] + value2[1])

    h = _harness(TumblingEventTimeWindows.of(10), reduce_window_contents(Sum(), _WindowInfo()))
    h.process_elements([("a", 1), ("a", 2), ("a", 5)], [1, 2, 11])
    h.process_watermark(20)
    assert h.extract_output_values() == [("a", 0, 10, [("a", 3)]), ("a", 10, 20, [("a", 5)])]


def test_aggregate_with_window_function() -> None:
    class Apply(WindowFunction[Any, Any, Any, TimeWindow]):
        def apply(self, key: Any, window: TimeWindow, inputs: Iterable[Any]) -> Iterable[Any]:
            return [(key, window.start, *inputs)]

    h = _harness(TumblingEventTimeWindows.of(10), aggregate_window_contents(_AvgAgg(), Apply()))
    h.process_elements([("a", 1), ("b", 4), ("a", 2)], [1, 2, 3])
    h.process_watermark(9)
    assert sorted(h.extract_output_values()) == [("a", 0, 1.5), ("b", 0, 4.0)]


def test_apply_window_function_sees_all_records() -> None:
    class Apply(WindowFunction[Any, Any, Any, TimeWindow]):
        def apply(self, key: Any, window: TimeWindow, inputs: Iterable[Any]) -> Iterable[Any]:
            yield (key, sorted(v for _, v in inputs))

    h = _harness(TumblingEventTimeWindows.of(10), apply_window_contents(Apply()))
    h.process_elements([("a", 3), ("a", 1), ("a", 2)], [1, 2, 3])
    h.process_watermark(9)
    assert h.extract_output_values() == [("a", [1, 2, 3])]


def test_process_function_state_side_output_and_clear() -> None:
    side = OutputTag("side")
    cleared: list[TimeWindow] = []
    opened: list[Any] = []

    class Fn(ProcessWindowFunction[Any, Any, Any, TimeWindow]):
        firings = ValueStateDescriptor("firings")
        total = ValueStateDescriptor("total")

        def open(self, runtime_context: RuntimeContext) -> None:
            opened.append(runtime_context)

        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            per_window = context.window_state().get_state(self.firings)
            per_window.update((per_window.value() or 0) + 1)
            overall = context.global_state().get_state(self.total)
            overall.update((overall.value() or 0) + 1)
            context.output(side, ("side", key, context.current_watermark()))
            yield (key, context.window().start, per_window.value(), overall.value())

        def clear(self, context: Any) -> None:
            cleared.append(context.window())
            context.window_state().get_state(self.firings).clear()

        def close(self) -> None:
            opened.append("closed")

    h = _harness(TumblingEventTimeWindows.of(10), process_window_contents(Fn()), lateness=10)
    assert len(opened) == 1 and isinstance(opened[0], RuntimeContext)
    h.process_element(("a", 1), 1)
    h.process_watermark(9)
    h.process_element(("a", 2), 2)  # late within lateness: fires the same window again
    h.process_element(("a", 3), 12)
    h.process_watermark(19)
    assert h.extract_output_values() == [("a", 0, 1, 1), ("a", 0, 2, 2), ("a", 10, 1, 3)]
    assert h.get_side_output("side") == [
        (("side", "a", 9), 9),
        (("side", "a", 9), 9),
        (("side", "a", 19), 19),
    ]
    assert cleared == [TimeWindow(0, 10)]  # cleanup of [0, 10) at 9 + 10
    assert h.num_keyed_state_entries("firings", TimeWindow(0, 10)) == 0
    h.close()
    assert opened[-1] == "closed"


def test_all_window_functions_with_a_constant_key() -> None:
    class AllApply(AllWindowFunction[Any, Any, TimeWindow]):
        def apply(self, window: TimeWindow, inputs: Iterable[Any]) -> Iterable[Any]:
            yield (window.start, sorted(inputs))

    class AllProcess(ProcessAllWindowFunction[Any, Any, TimeWindow]):
        def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            yield (context.window().start, sum(elements))

    for contents, expected in (
        (apply_window_contents(AllApply()), [(0, [1, 2, 3]), (10, [4])]),
        (process_window_contents(AllProcess()), [(0, 6), (10, 4)]),
        (reduce_window_contents(lambda a, b: a + b, AllProcess()), [(0, 6), (10, 4)]),
    ):
        h = _harness(TumblingEventTimeWindows.of(10), contents, key=lambda _: 0)
        h.process_elements([3, 1, 4, 2], [1, 2, 15, 9])
        h.process_watermark(100)
        assert h.extract_output_values() == expected


# --- construction and lifecycle --------------------------------------------------------------


def test_window_operator_needs_a_keyed_input() -> None:
    contents = reduce_window_contents(_sum)
    op = WindowOperator(
        assigner=TumblingEventTimeWindows.of(10),
        trigger=EventTimeTrigger.create(),
        key_selector=lambda v: v[0],
        window_function=contents.window_function,
        state_descriptor=contents.state_descriptor,
    )
    with pytest.raises(StateError, match="keyed input"):
        OneInputOperatorTestHarness(op).open()


def test_invalid_configurations_are_refused() -> None:
    class NoMerge(EventTimeTrigger):
        def can_merge(self) -> bool:
            return False

    reduce = reduce_window_contents(_sum)
    common: dict[str, Any] = {
        "key_selector": lambda v: v,
        "window_function": reduce.window_function,
        "state_descriptor": reduce.state_descriptor,
    }
    with pytest.raises(GraphBuildError, match="trigger that can merge"):
        WindowOperator(assigner=EventTimeSessionWindows.with_gap(5), trigger=NoMerge(), **common)
    with pytest.raises(GraphBuildError, match="evictor"):
        WindowOperator(
            assigner=GlobalWindows.create(),
            trigger=CountTrigger.of(2),
            evictor=CountEvictor.of(1),
            **common,
        )
    with pytest.raises(GraphBuildError, match="lateness"):
        WindowOperator(
            assigner=GlobalWindows.create(),
            trigger=CountTrigger.of(2),
            allowed_lateness_ms=-1,
            **common,
        )
    with pytest.raises(TypeError, match="WindowFunction"):
        apply_window_contents(lambda k, w, i: i)
    with pytest.raises(TypeError, match="AggregateFunction"):
        aggregate_window_contents(lambda a, b: a)  # type: ignore[arg-type]


# --- property: tumbling event-time sums against a replay model -------------------------------

_SIZE = 10

_event = st.one_of(
    st.tuples(st.just("rec"), st.sampled_from("ab"), st.integers(-40, 80), st.integers(1, 9)),
    st.tuples(st.just("wm"), st.integers(0, 15)),  # watermark advance
)


def _model(
    events: list[tuple[Any, ...]], lateness: int
) -> tuple[dict[str, list[tuple[int, int]]], int]:
    """Replay: per key, the (sum, timestamp) outputs in order, and the dropped count."""
    sums: dict[tuple[str, int], int] = {}
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    wm, dropped = MIN_TIMESTAMP, 0
    for event in events:
        if event[0] == "wm":
            new_wm = event[1]
            due = sorted(
                (end - 1, key, start)
                for (key, start) in sums
                if wm < (end := start + _SIZE) - 1 <= new_wm
            )
            for fire_ts, key, start in due:
                out[key].append((sums[(key, start)], fire_ts))
            for key, start in [w for w in sums if w[1] + _SIZE - 1 + lateness <= new_wm]:
                del sums[(key, start)]
            wm = new_wm
        else:
            _, key, ts, value = event
            ((start, end),) = _windows_containing(ts, _SIZE, _SIZE)
            if end - 1 + lateness <= wm:
                dropped += 1
                continue
            sums[(key, start)] = sums.get((key, start), 0) + value
            if end - 1 <= wm:  # already past the end, within the lateness: fires at once
                out[key].append((sums[(key, start)], end - 1))
    return out, dropped


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    steps=st.lists(st.lists(_event, min_size=1, max_size=6), min_size=1, max_size=12),
    lateness=st.sampled_from([0, 0, 3, 10]),
)
def test_tumbling_sums_match_replay_model(
    steps: list[list[tuple[Any, ...]]], lateness: int
) -> None:
    h = _harness(
        TumblingEventTimeWindows.of(_SIZE), reduce_window_contents(_sum), lateness=lateness
    )
    flat: list[tuple[Any, ...]] = []
    wm = -50
    for step in steps:
        batch, stamps = [], []
        for event in step:
            if event[0] == "rec":
                batch.append((event[1], event[3]))
                stamps.append(event[2])
                flat.append(event)
            else:
                if batch:
                    h.process_elements(batch, stamps)
                    batch, stamps = [], []
                wm += event[1]
                h.process_watermark(wm)
                flat.append(("wm", wm))
        if batch:
            h.process_elements(batch, stamps)
    h.process_watermark(10**6)
    flat.append(("wm", 10**6))

    expected, dropped = _model(flat, lateness)
    got: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    for (key, total), ts in h.get_output():
        got[key].append((total, ts))
    assert dict(got) == dict(expected)
    assert h.counters[NUM_LATE_RECORDS_DROPPED] == dropped
    assert h.num_event_time_timers() == 0


# --- the harness itself ----------------------------------------------------------------------


def test_harness_key_selector_sets_the_current_key_per_run() -> None:
    from undertow.runtime.task.operator import OneInputStreamOperator, Timestamps

    class CountPerKey(OneInputStreamOperator):
        def open(self) -> None:
            assert self.ctx.keyed_backend is not None
            self.backend = self.ctx.keyed_backend
            self.count: Any = self.backend.get_partitioned_state(ValueStateDescriptor("count"))

        def process_batch(self, values: list[Any], timestamps: Timestamps) -> None:
            out = []
            for value in values:
                assert self.backend.get_current_key() == value[0]
                self.count.update((self.count.value() or 0) + 1)
                out.append((value[0], self.count.value()))
            self.output.collect_batch(out, timestamps)

    with KeyedOneInputOperatorTestHarness(CountPerKey(), key_selector=lambda v: v[0]) as h:
        h.process_elements([("a", 1), ("a", 2), ("b", 3), ("a", 4)], [1, 2, 3, 4])
        assert h.get_output() == [(("a", 1), 1), (("a", 2), 2), (("b", 1), 3), (("a", 3), 4)]
        assert h.num_keyed_state_entries("count") == 2


def test_a_window_reduce_takes_what_is_shaped_like_a_reduce_function_and_refuses_the_rest() -> None:
    class Multiply:  # not a ReduceFunction: its reduce() is what counts
        def reduce(self, value1: Any, value2: Any) -> Any:
            return (value1[0], value1[1] * value2[1])

    for evicting in (False, True):
        reduce_window_contents(Multiply(), evicting=evicting)
        with pytest.raises(TypeError, match=r"reduce needs a ReduceFunction .* got 5"):
            reduce_window_contents(5, evicting=evicting)
    for evicting in (False, True):
        h = _harness(
            TumblingEventTimeWindows.of(10), reduce_window_contents(Multiply(), evicting=evicting)
        )
        h.process_elements([("a", 2), ("a", 3), ("a", 4)], [1, 2, 3])
        h.process_watermark(20)
        assert [value for value, _ in _timed_output(h)] == [("a", 24)]
