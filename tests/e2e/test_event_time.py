"""Event time end to end: timestamps and watermarks, windows, lateness, timers.

Records of ``from_collection`` reach downstream operators before any periodic watermark (every
200 ms), and the end of input fires every window with the MAX watermark; tests of the happy
path give a bound on out-of-orderness larger than the input's time span, so nothing can be late
whenever a watermark arrives. Lateness tests use :class:`PhasedSource`, which emits its batches
with a pause between them long enough for a periodic watermark to go out after each batch: what
is late is then decided by the data alone.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from undertow.common import Duration, WatermarkStrategy
from undertow.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessWindowFunction,
    RuntimeContext,
    RuntimeExecutionMode,
    TimeDomain,
)
from undertow.datastream.connectors import (
    Boundedness,
    InputStatus,
    Source,
    SourceReader,
    SourceReaderContext,
    SourceSplit,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.number_seq import NumberSequenceSource
from undertow.datastream.state import ValueStateDescriptor
from undertow.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

from .conftest import EnvFactory

# (key, value, timestamp ms), out of order
EVENTS = [
    ("a", 1, 100),
    ("b", 2, 250),
    ("a", 3, 1_700),
    ("a", 4, 900),
    ("b", 5, 3_100),
    ("a", 6, 2_050),
    ("b", 7, 2_999),
    ("a", 8, 6_000),
    ("b", 9, 3_000),
    ("a", 10, 6_400),
    ("b", 11, 9_100),
    ("a", 12, 5_000),
]
SPAN_MS = max(t for _, _, t in EVENTS) + 1


def timestamped(env: Any, events: list[Any] = EVENTS) -> Any:
    """``events`` with their timestamps; the out-of-orderness bound exceeds their time span."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(SPAN_MS)
    ).with_timestamp_assigner(lambda event, _: event[2])
    return env.from_collection(events).assign_timestamps_and_watermarks(strategy)


def tumbling(events: list[Any], size: int) -> dict[tuple[str, int], list[Any]]:
    windows: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for event in events:
        windows[(event[0], event[2] - event[2] % size)].append(event)
    return dict(windows)


class WithWindow(ProcessWindowFunction):
    """Tags the reduced value with its key and window."""

    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Any) -> Any:
        window = context.window()
        for value in elements:
            yield (key, window.start, window.end, value)


def test_tumbling_event_time_windows_with_reduce(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    sums = (
        timestamped(env)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])), WithWindow())
    )
    result = sorted(sums.execute_and_collect())

    expected = sorted(
        (key, start, start + 1000, (key, sum(e[1] for e in events), max(e[2] for e in events)))
        for (key, start), events in tumbling(EVENTS, 1000).items()
    )
    assert result == expected


class CountAndSum(AggregateFunction):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Any, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + 1, accumulator[1] + value[1])

    def get_result(self, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_sliding_event_time_windows_with_aggregate(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    size, slide = 2_000, 500
    aggregates = (
        timestamped(env)
        .key_by(lambda e: e[0])
        .window(SlidingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(slide)))
        .aggregate(CountAndSum(), WithWindow())
    )
    result = sorted(aggregates.execute_and_collect())

    expected = []
    for key in {e[0] for e in EVENTS}:
        starts = {
            start
            for _, _, t in (e for e in EVENTS if e[0] == key)
            for start in range(t - t % slide - size + slide, t + 1, slide)
        }
        for start in starts:
            inside = [e for e in EVENTS if e[0] == key and start <= e[2] < start + size]
            expected.append((key, start, start + size, (len(inside), sum(e[1] for e in inside))))
    assert result == sorted(expected)


class SessionSummary(ProcessWindowFunction):
    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Any) -> Any:
        window = context.window()
        values = sorted(e[1] for e in elements)
        yield (key, window.start, window.end, values)


def sessions(events: list[Any], gap: int) -> list[Any]:
    out = []
    for key in sorted({e[0] for e in events}):
        mine = sorted((e for e in events if e[0] == key), key=lambda e: e[2])
        current = [mine[0]]
        for event in mine[1:]:
            if event[2] <= current[-1][2] + gap:  # touching windows merge, as in Flink
                current.append(event)
            else:
                out.append(current)
                current = [event]
        out.append(current)
    return [
        (s[0][0], s[0][2], s[-1][2] + gap, sorted(e[1] for e in s))
        for s in out
    ]  # fmt: skip


def test_event_time_session_windows_with_process(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    gap = 1_000
    summaries = (
        timestamped(env)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(Duration.of_millis(gap)))
        .process(SessionSummary())
    )
    assert sorted(summaries.execute_and_collect()) == sorted(sessions(EVENTS, gap))


def test_window_all_counts_every_record_once(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    counts = (
        timestamped(env)
        .map(lambda e: (e[0], 1, e[2]))
        .window_all(TumblingEventTimeWindows.of(Duration.of_seconds(2)))
        .reduce(lambda a, b: ("all", a[1] + b[1], max(a[2], b[2])))
    )
    result = sorted((r[2] - r[2] % 2000, r[1]) for r in counts.execute_and_collect())
    expected: dict[int, int] = defaultdict(int)
    for _, _, t in EVENTS:
        expected[t - t % 2000] += 1
    assert result == sorted(expected.items())


def test_windows_over_a_parallel_source_with_watermarks_from_every_reader(
    make_env: EnvFactory,
) -> None:
    # each reader's numbers ascend, so with monotonous timestamps nothing is ever late: the
    # window operator must combine the watermarks of both source subtasks (their minimum)
    env = make_env(parallelism=2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda n, _: n)
    numbers = env.from_source(NumberSequenceSource(1, 5_000), strategy, "numbers")
    counts = (
        numbers.map(lambda n: (n % 3, n))
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(1_000)))
        .aggregate(CountAndSum(), WithWindow())
    )
    result = sorted(counts.execute_and_collect())

    windows: dict[tuple[int, int], list[int]] = defaultdict(list)
    for n in range(1, 5_001):
        windows[(n % 3, n - n % 1_000)].append(n)
    expected = sorted(
        (key, start, start + 1_000, (len(ns), sum(ns))) for (key, start), ns in windows.items()
    )
    assert result == expected


class RemindLater(KeyedProcessFunction):
    """Sets an event-time timer 10 s after each record; on firing, reports the records seen."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        self.seen.update((self.seen.value() or 0) + 1)
        assert ctx.timestamp() == value[2]
        ctx.timer_service().register_event_time_timer(value[2] + 10_000)
        return None

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield (ctx.get_current_key(), timestamp, ctx.timestamp(), ctx.time_domain(),
               self.seen.value())  # fmt: skip


def test_event_time_timers_fire_at_end_of_input(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    fired = timestamped(env).key_by(lambda e: e[0]).process(RemindLater())
    result = sorted(fired.execute_and_collect(), key=lambda r: (r[0], r[1]))

    counts = {key: sum(1 for e in EVENTS if e[0] == key) for key in {e[0] for e in EVENTS}}
    expected = sorted(
        {(k, t + 10_000, t + 10_000, TimeDomain.EVENT_TIME, counts[k]) for k, _, t in EVENTS},
        key=lambda r: (r[0], r[1]),
    )
    assert result == expected


class Heartbeat(KeyedProcessFunction):
    """On a key's first record, sets a processing-time timer 30 ms ahead."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.due = runtime_context.get_state(ValueStateDescriptor("due"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        if self.due.value() is None:
            due = ctx.timer_service().current_processing_time() + 30
            self.due.update(due)
            ctx.timer_service().register_processing_time_timer(due)
        return None

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        now = ctx.timer_service().current_processing_time()
        yield (ctx.get_current_key(), timestamp == self.due.value(), now >= timestamp,
               ctx.time_domain())  # fmt: skip


def test_processing_time_timers_fire_while_the_job_runs(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    ticks = env.from_source(
        DataGeneratorSource(lambda i: i % 3, count=None, records_per_second=200),
        WatermarkStrategy.no_watermarks(),
        "ticks",
    )
    fired = ticks.key_by(lambda k: k).process(Heartbeat())
    result = fired.execute_and_collect(limit=3)
    assert sorted(result) == [(k, True, True, TimeDomain.PROCESSING_TIME) for k in range(3)]


# --- lateness ------------------------------------------------------------------------------

PAUSE_S = 0.5  # > 200 ms, the periodic watermark interval


class PhasedSplit(SourceSplit):
    def __init__(self, phases: list[list[Any]]) -> None:
        self.phases = phases

    def split_id(self) -> str:
        return "phases"


class PhasedReader(SourceReader[PhasedSplit]):
    """Emits one phase per poll, waiting ``PAUSE_S`` between phases (without blocking)."""

    def __init__(self, context: SourceReaderContext) -> None:
        self.context = context
        self.phases: list[list[Any]] | None = None
        self.no_more_splits = False
        self.next_phase_at = 0.0

    def start(self) -> None:
        self.context.send_split_request()

    def add_splits(self, splits: list[PhasedSplit]) -> None:
        self.phases = [list(p) for split in splits for p in split.phases]
        self.context.notify_available()

    def notify_no_more_splits(self) -> None:
        self.no_more_splits = True
        self.context.notify_available()

    def poll_next(self, output: Any) -> InputStatus:
        if self.phases is None:
            return (
                InputStatus.END_OF_INPUT if self.no_more_splits else InputStatus.NOTHING_AVAILABLE
            )
        if not self.phases:
            return InputStatus.END_OF_INPUT
        if time.monotonic() < self.next_phase_at:
            return InputStatus.NOTHING_AVAILABLE
        output.collect_batch(self.phases.pop(0), None)
        self.next_phase_at = time.monotonic() + PAUSE_S
        return InputStatus.MORE_AVAILABLE


class OneSplitEnumerator(SplitEnumerator[PhasedSplit]):
    def __init__(self, context: SplitEnumeratorContext[PhasedSplit], split: PhasedSplit) -> None:
        self.context = context
        self.split: PhasedSplit | None = split

    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None:
        if self.split is not None:
            self.context.assign_split(self.split, subtask_id)
            self.split = None
        self.context.signal_no_more_splits(subtask_id)

    def add_splits_back(self, splits: list[PhasedSplit], subtask_id: int) -> None:
        self.split = splits[0]


class PhasedSource(Source[PhasedSplit]):
    """A bounded source emitting ``phases`` one after the other, with pauses between them."""

    def __init__(self, phases: list[list[Any]]) -> None:
        self.phases = phases

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> PhasedReader:
        return PhasedReader(context)

    def create_enumerator(
        self, context: SplitEnumeratorContext[PhasedSplit]
    ) -> SplitEnumerator[PhasedSplit]:
        return OneSplitEnumerator(context, PhasedSplit(self.phases))

    def restore_enumerator(
        self, context: SplitEnumeratorContext[PhasedSplit], checkpoint: Any
    ) -> SplitEnumerator[PhasedSplit]:
        raise NotImplementedError("this test source runs without checkpoints")


OUT_OF_ORDERNESS_MS = 100
# after phase 1 the watermark is 2_700 - 100 - 1 = 2_599
PHASES = [
    [("k", 1, 100), ("k", 2, 1_100), ("k", 3, 2_700)],
    [("k", 10, 500), ("k", 20, 1_500), ("k", 30, 2_800)],
]
LATE_WINDOW = OutputTag("late-window")
LATE_RECORD = OutputTag("late-record")


class LateRecords(KeyedProcessFunction):
    """Sends records behind the current watermark to ``LATE_RECORD``."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        watermark = ctx.timer_service().current_watermark()
        timestamp = ctx.timestamp()
        assert timestamp is not None
        if timestamp <= watermark:
            ctx.output(LATE_RECORD, (value, watermark))
        else:
            yield value


def phased(env: Any) -> Any:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(OUT_OF_ORDERNESS_MS)
    ).with_timestamp_assigner(lambda event, _: event[2])
    return env.from_source(PhasedSource(PHASES), strategy, "phases").set_parallelism(1)


def test_allowed_lateness_and_late_data_side_output(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    events = phased(env)
    windows = (
        events.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .allowed_lateness(1_000)
        .side_output_late_data(LATE_WINDOW)
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])), WithWindow())
    )
    checked = events.key_by(lambda e: e[0]).process(LateRecords())
    outputs = [
        windows.map(lambda r: ("window", r[1], r[3][1])),
        windows.get_side_output(LATE_WINDOW).map(lambda e: ("late-window", e)),
        checked.map(lambda e: ("on-time", e)),
        checked.get_side_output(LATE_RECORD).map(lambda r: ("late-record", r)),
    ]
    result = list(outputs[0].union(*outputs[1:]).execute_and_collect())

    grouped: dict[str, list[Any]] = defaultdict(list)
    for kind, *rest in result:
        grouped[kind].append(tuple(rest) if len(rest) > 1 else rest[0])
    # [0, 1000) fired at watermark 2_599 and was purged at 999 + 1_000: ("k", 10, 500) is
    # dropped to the side output. [1000, 2000) is kept until 2_999: ("k", 20, 1_500) fires it
    # again with the updated sum. [2000, 3000) fires at the end of input.
    assert grouped["window"] == [(0, 1), (1_000, 2), (1_000, 22), (2_000, 33)]
    assert grouped["late-window"] == [("k", 10, 500)]
    assert grouped["on-time"] == [*PHASES[0], ("k", 30, 2_800)]
    assert grouped["late-record"] == [(("k", 10, 500), 2_599), (("k", 20, 1_500), 2_599)]


def test_without_periodic_watermarks_nothing_is_late(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1)
    env.get_config().set_auto_watermark_interval(0)
    checked = phased(env).key_by(lambda e: e[0]).process(LateRecords())
    late = checked.get_side_output(LATE_RECORD).map(lambda r: ("late", r))
    result = list(checked.map(lambda e: ("on-time", e)).union(late).execute_and_collect())
    assert result == [("on-time", e) for phase in PHASES for e in phase]


def test_in_batch_mode_nothing_is_late(make_env: EnvFactory) -> None:
    env = make_env(parallelism=1, mode=RuntimeExecutionMode.BATCH)
    checked = phased(env).key_by(lambda e: e[0]).process(LateRecords())
    late = checked.get_side_output(LATE_RECORD).map(lambda r: ("late", r))
    result = list(checked.map(lambda e: ("on-time", e)).union(late).execute_and_collect())
    assert result == [("on-time", e) for phase in PHASES for e in phase]


class RemindInAnHour(KeyedProcessFunction):
    """Sets one processing-time timer per key, an hour ahead."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.due = runtime_context.get_state(ValueStateDescriptor("due"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        if self.due.value() is None:
            self.due.update(ctx.timer_service().current_processing_time() + 3_600_000)
            ctx.timer_service().register_processing_time_timer(self.due.value())
        return None

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield (ctx.get_current_key(), ctx.time_domain())


def test_in_batch_mode_processing_time_timers_fire_at_end_of_input(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2, mode=RuntimeExecutionMode.BATCH)
    fired = env.from_collection(["x", "y", "x", "z"]).key_by(lambda k: k).process(RemindInAnHour())
    result = sorted(fired.execute_and_collect())
    assert result == [(k, TimeDomain.PROCESSING_TIME) for k in ("x", "y", "z")]
