"""Windows, assigners, triggers and evictors of ``undertow.datastream.window``, without an operator
(imported from their modules, :mod:`undertow.api.windows.assigners` and its siblings).

Expected windows are computed by brute force (scan every candidate start) rather than with the
closed-form start formula the assigners use.
"""

from __future__ import annotations

import datetime
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.api.windows.assigners import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from undertow.api.windows.evictors import CountEvictor, DeltaEvictor, TimeEvictor, TimestampedValue
from undertow.api.windows.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    TriggerResult,
)
from undertow.api.windows.windows import CountWindow, GlobalWindow, TimeWindow
from undertow.common.time import Duration, Time
from undertow.core.types import MIN_TIMESTAMP
from undertow.state.descriptors import ValueStateDescriptor

# --- fakes -----------------------------------------------------------------------------------


class _FakeValueState:
    def __init__(self, store: dict[str, Any], name: str) -> None:
        self._store, self._name = store, name

    def value(self) -> Any:
        return self._store.get(self._name)

    def update(self, value: Any) -> None:
        self._store[self._name] = value

    def clear(self) -> None:
        self._store.pop(self._name, None)


class _FakeRuntimeContext:
    def __init__(self) -> None:
        self.store: dict[str, Any] = {}

    def get_state(self, descriptor: ValueStateDescriptor) -> Any:
        return _FakeValueState(self.store, descriptor.name)


class _Ctx(WindowAssigner.WindowAssignerContext):
    def __init__(self, now: int = 0) -> None:
        self.now = now
        self.runtime_context = _FakeRuntimeContext()

    def get_current_processing_time(self) -> int:
        return self.now

    def get_runtime_context(self) -> Any:
        return self.runtime_context


class _Merges(MergingWindowAssigner.MergeCallback[TimeWindow]):
    def __init__(self) -> None:
        self.merges: list[tuple[list[TimeWindow], TimeWindow]] = []

    def merge(self, to_be_merged: Any, merge_result: TimeWindow) -> None:
        self.merges.append((sorted(to_be_merged), merge_result))


def _brute_force_windows(ts: int, size: int, slide: int, offset: int) -> set[tuple[int, int]]:
    """Every [s, s + size) with s = offset + k * slide that contains ts, by scanning k."""
    found = set()
    k = (ts - offset) // slide - size // slide - 2
    while offset + k * slide <= ts:
        start = offset + k * slide
        if start <= ts < start + size:
            found.add((start, start + size))
        k += 1
    return found


# --- windows ---------------------------------------------------------------------------------


def test_time_window_basics() -> None:
    w = TimeWindow(0, 10)
    assert w.max_timestamp() == 9
    assert w.intersects(TimeWindow(10, 20))  # touching windows merge (Flink)
    assert not w.intersects(TimeWindow(11, 20))
    assert w.cover(TimeWindow(5, 25)) == TimeWindow(0, 25)
    assert TimeWindow(0, 10) == TimeWindow(0, 10) and hash(w) == hash(TimeWindow(0, 10))
    assert TimeWindow(0, 10) != TimeWindow(0, 11)
    assert sorted([TimeWindow(5, 6), TimeWindow(0, 10), TimeWindow(0, 5)]) == [
        TimeWindow(0, 5),
        TimeWindow(0, 10),
        TimeWindow(5, 6),
    ]
    assert pickle.loads(pickle.dumps(w)) == w
    assert repr(w) == "TimeWindow(start=0, end=10)"


def test_count_and_global_windows() -> None:
    assert CountWindow(3) == CountWindow(3) != CountWindow(4)
    assert CountWindow(3).max_timestamp() == 2**63 - 1
    assert GlobalWindow.get() is GlobalWindow() is pickle.loads(pickle.dumps(GlobalWindow.get()))
    assert GlobalWindow.get().max_timestamp() == 2**63 - 1
    assert pickle.loads(pickle.dumps(CountWindow(7))) == CountWindow(7)


@given(
    ts=st.integers(-(10**12), 10**12),
    size=st.integers(1, 10**6),
    offset_frac=st.floats(-0.99, 0.99),
)
def test_window_start_with_offset_contains_timestamp(
    ts: int, size: int, offset_frac: float
) -> None:
    offset = int(size * offset_frac)
    start = TimeWindow.get_window_start_with_offset(ts, offset, size)
    assert start <= ts < start + size
    assert (start - offset) % size == 0


def test_window_start_negative_timestamps() -> None:
    assert TimeWindow.get_window_start_with_offset(-1, 0, 10) == -10
    assert TimeWindow.get_window_start_with_offset(-10, 0, 10) == -10
    assert TimeWindow.get_window_start_with_offset(-11, 0, 10) == -20
    assert TimeWindow.get_window_start_with_offset(-1, 3, 10) == -7
    assert TimeWindow.get_window_start_with_offset(2, 3, 10) == -7


def test_merge_windows_groups_intersecting() -> None:
    cb = _Merges()
    TimeWindow.merge_windows(
        [
            TimeWindow(10, 15),
            TimeWindow(0, 5),
            TimeWindow(4, 8),
            TimeWindow(20, 30),
            TimeWindow(30, 31),
        ],
        cb,
    )
    assert cb.merges == [
        ([TimeWindow(0, 5), TimeWindow(4, 8)], TimeWindow(0, 8)),
        ([TimeWindow(20, 30), TimeWindow(30, 31)], TimeWindow(20, 31)),
    ]


# --- time assigners --------------------------------------------------------------------------


def test_tumbling_event_time_accepts_time_duration_timedelta_and_ms() -> None:
    for size in (Time.seconds(1), Duration.of_seconds(1), datetime.timedelta(seconds=1), 1000):
        assigner = TumblingEventTimeWindows.of(size)
        assert assigner.assign_windows("x", 1500, _Ctx()) == [TimeWindow(1000, 2000)]
        assert assigner.is_event_time()
        assert isinstance(assigner.get_default_trigger(None), EventTimeTrigger)


def test_tumbling_with_offset_and_negative_timestamps() -> None:
    assigner = TumblingEventTimeWindows.of(Time.hours(24), Time.hours(-8))
    day = 24 * 3600_000
    assert assigner.assign_windows("x", 0, _Ctx()) == [
        TimeWindow(-8 * 3600_000, day - 8 * 3600_000)
    ]
    small = TumblingEventTimeWindows.of(10, 3)
    assert small.assign_windows("x", -1, _Ctx()) == [TimeWindow(-7, 3)]
    assert small.assign_windows("x", -8, _Ctx()) == [TimeWindow(-17, -7)]
    assert TumblingEventTimeWindows.of(10).assign_windows("x", -10, _Ctx()) == [TimeWindow(-10, 0)]


@pytest.mark.parametrize(
    "make",
    [
        lambda: TumblingEventTimeWindows.of(0),
        lambda: TumblingEventTimeWindows.of(10, 10),
        lambda: TumblingEventTimeWindows.of(10, -10),
        lambda: SlidingEventTimeWindows.of(10, 0),
        lambda: SlidingEventTimeWindows.of(0, 5),
        lambda: SlidingEventTimeWindows.of(10, 5, 5),
        lambda: EventTimeSessionWindows.with_gap(0),
        lambda: CountTumblingWindowAssigner.of(0),
        lambda: CountSlidingWindowAssigner.of(3, 0),
        lambda: CountTrigger.of(0),
        lambda: ContinuousEventTimeTrigger.of(0),
    ],
)
def test_invalid_parameters_raise(make: Any) -> None:
    with pytest.raises(ValueError):
        make()


def test_bad_size_type_raises() -> None:
    with pytest.raises(TypeError, match="size"):
        TumblingEventTimeWindows.of("10 s")


def test_event_time_assigners_need_a_timestamp() -> None:
    for assigner in (
        TumblingEventTimeWindows.of(10),
        SlidingEventTimeWindows.of(10, 5),
        EventTimeSessionWindows.with_gap(10),
    ):
        with pytest.raises(ValueError, match="has no timestamp"):
            assigner.assign_windows("rec", MIN_TIMESTAMP, _Ctx())


@settings(max_examples=300)
@given(
    ts=st.integers(-(10**6), 10**6),
    slide=st.integers(1, 50),
    factor=st.integers(1, 6),
    extra=st.integers(0, 49),
    offset_seed=st.integers(-(10**6), 10**6),
)
def test_sliding_windows_match_brute_force(
    ts: int, slide: int, factor: int, extra: int, offset_seed: int
) -> None:
    size = slide * factor + extra % slide  # sizes that are and are not multiples of the slide
    offset = offset_seed % slide * (1 if offset_seed >= 0 else -1)
    assigner = SlidingEventTimeWindows.of(size, slide, offset)
    got = assigner.assign_windows("x", ts, _Ctx())
    assert {(w.start, w.end) for w in got} == _brute_force_windows(ts, size, slide, offset)
    assert len(got) == len(set(got))
    starts = [w.start for w in got]
    assert starts == sorted(starts, reverse=True)  # latest window first, as Flink


def test_processing_time_assigners_use_the_clock() -> None:
    ctx = _Ctx(now=1234)
    tumbling = TumblingProcessingTimeWindows.of(100)
    assert tumbling.assign_windows("x", 5, ctx) == [TimeWindow(1200, 1300)]
    assert not tumbling.is_event_time()
    assert isinstance(tumbling.get_default_trigger(None), ProcessingTimeTrigger)
    sliding = SlidingProcessingTimeWindows.of(100, 50)
    assert set(sliding.assign_windows("x", MIN_TIMESTAMP, ctx)) == {
        TimeWindow(1200, 1300),
        TimeWindow(1150, 1250),
    }
    session = ProcessingTimeSessionWindows.with_gap(Time.milliseconds(30))
    assert session.assign_windows("x", MIN_TIMESTAMP, ctx) == [TimeWindow(1234, 1264)]


def test_session_windows_assign_and_merge() -> None:
    assigner = EventTimeSessionWindows.with_gap(Time.seconds(1))
    assert isinstance(assigner, MergingWindowAssigner)
    assert assigner.assign_windows("x", 500, _Ctx()) == [TimeWindow(500, 1500)]
    cb = _Merges()
    assigner.merge_windows(
        [TimeWindow(0, 1000), TimeWindow(1000, 2000), TimeWindow(3000, 4000)], cb
    )
    assert cb.merges == [([TimeWindow(0, 1000), TimeWindow(1000, 2000)], TimeWindow(0, 2000))]


def test_dynamic_session_gap_from_extractor_or_callable() -> None:
    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element: Any) -> int:
            return int(element[1])

    by_class = EventTimeSessionWindows.with_dynamic_gap(Gap())
    assert isinstance(by_class, DynamicEventTimeSessionWindows)
    assert by_class.assign_windows(("a", 7), 10, _Ctx()) == [TimeWindow(10, 17)]
    by_callable = EventTimeSessionWindows.with_dynamic_gap(lambda e: Time.milliseconds(e[1]))
    assert by_callable.assign_windows(("a", 3), 10, _Ctx()) == [TimeWindow(10, 13)]
    with pytest.raises(ValueError, match="gap must be > 0"):
        by_callable.assign_windows(("a", 0), 10, _Ctx())
    proc = ProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 5)
    assert proc.assign_windows("x", MIN_TIMESTAMP, _Ctx(now=100)) == [TimeWindow(100, 105)]


def test_global_windows() -> None:
    assigner = GlobalWindows.create()
    assert assigner.assign_windows("x", 5, _Ctx()) == [GlobalWindow.get()]
    assert isinstance(assigner.get_default_trigger(None), NeverTrigger)
    assert not assigner.is_event_time()


# --- count assigners -------------------------------------------------------------------------


def test_count_tumbling_ids() -> None:
    assigner = CountTumblingWindowAssigner.of(3)
    ctx = _Ctx()
    ids = [[w.id for w in assigner.assign_windows(i, MIN_TIMESTAMP, ctx)] for i in range(7)]
    assert ids == [[0], [0], [0], [1], [1], [1], [2]]
    trigger = assigner.get_default_trigger(None)
    assert isinstance(trigger, PurgingTrigger)


@pytest.mark.parametrize(("size", "slide"), [(3, 1), (3, 2), (2, 3), (4, 4), (5, 2)])
def test_count_sliding_ids_match_brute_force(size: int, slide: int) -> None:
    assigner = CountSlidingWindowAssigner.of(size, slide)
    ctx = _Ctx()
    for n in range(20):
        got = [w.id for w in assigner.assign_windows(n, MIN_TIMESTAMP, ctx)]
        expected = [k for k in range(n + 1) if k * slide <= n <= k * slide + size - 1]
        assert sorted(got) == expected
        assert got == sorted(got, reverse=True)


# --- triggers and evictors -------------------------------------------------------------------


def test_trigger_result_flags() -> None:
    assert (TriggerResult.CONTINUE.is_fire(), TriggerResult.CONTINUE.is_purge()) == (False, False)
    assert (TriggerResult.FIRE.is_fire(), TriggerResult.FIRE.is_purge()) == (True, False)
    assert (TriggerResult.PURGE.is_fire(), TriggerResult.PURGE.is_purge()) == (False, True)
    assert TriggerResult.FIRE_AND_PURGE.is_fire() and TriggerResult.FIRE_AND_PURGE.is_purge()


def test_purging_trigger_wraps_fire() -> None:
    nested = ProcessingTimeTrigger.create()
    trigger = PurgingTrigger.of(nested)
    assert trigger.on_processing_time(9, TimeWindow(0, 10), None) is TriggerResult.FIRE_AND_PURGE  # type: ignore[arg-type]
    assert trigger.on_event_time(9, TimeWindow(0, 10), None) is TriggerResult.CONTINUE  # type: ignore[arg-type]
    assert trigger.can_merge()


def _tv(
    values: list[Any], timestamps: list[int | None] | None = None
) -> list[TimestampedValue[Any]]:
    ts = timestamps if timestamps is not None else [None] * len(values)
    return [TimestampedValue(v, t) for v, t in zip(values, ts)]


def test_count_evictor_keeps_the_last_n() -> None:
    before = CountEvictor.of(2)
    elements = _tv([1, 2, 3, 4])
    before.evict_before(elements, 4, GlobalWindow.get(), None)  # type: ignore[arg-type]
    assert [e.value for e in elements] == [3, 4]
    before.evict_after(elements, 2, GlobalWindow.get(), None)  # type: ignore[arg-type]
    assert [e.value for e in elements] == [3, 4]
    after = CountEvictor.of(1, do_evict_after=True)
    elements = _tv([1, 2, 3])
    after.evict_before(elements, 3, GlobalWindow.get(), None)  # type: ignore[arg-type]
    assert len(elements) == 3
    after.evict_after(elements, 3, GlobalWindow.get(), None)  # type: ignore[arg-type]
    assert [e.value for e in elements] == [3]


def test_time_evictor_keeps_recent_records() -> None:
    evictor = TimeEvictor.of(Time.milliseconds(10))
    elements = _tv(["a", "b", "c", "d"], [100, 91, 90, 95])
    evictor.evict_before(elements, 4, TimeWindow(0, 200), None)  # type: ignore[arg-type]
    assert [e.value for e in elements] == ["a", "b", "d"]  # cutoff 90 is evicted (<=)
    untimed = _tv(["a", "b"])
    evictor.evict_before(untimed, 2, TimeWindow(0, 200), None)  # type: ignore[arg-type]
    assert len(untimed) == 2


def test_delta_evictor() -> None:
    class Delta:
        def get_delta(self, old: int, new: int) -> float:
            return float(abs(new - old))

    for fn in (Delta(), lambda old, new: abs(new - old)):
        elements = _tv([1, 8, 10, 12])
        DeltaEvictor.of(3, fn).evict_before(elements, 4, GlobalWindow.get(), None)  # type: ignore[arg-type]
        assert [e.value for e in elements] == [10, 12]
    with pytest.raises(TypeError, match=r"DeltaEvictor needs a DeltaFunction .*, got 3\.5"):
        DeltaEvictor.of(3, 3.5)


def test_timestamped_value() -> None:
    assert (
        TimestampedValue("x", 5).get_timestamp() == 5 and TimestampedValue("x", 5).has_timestamp()
    )
    assert not TimestampedValue("x").has_timestamp()
    assert TimestampedValue("x").get_value() == "x"
