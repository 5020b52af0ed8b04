"""A subtask's input processor on its own: real input gates and channels fed by hand (the
network test's :class:`Feeder`), the real event dispatcher (built as its own test builds it),
and a recording head.

A slice is cut by the output's availability (the mailbox checks it before a slice, the
processor after each chunk), by a slice shorter than one chunk, or by a head's bounded input
room, which also sizes the chunks.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runtime.task.test_event_dispatch import Checkpointer, Head, barrier, dispatcher, gate
from tests.runtime.task.test_periodic_work import FakeWriter
from tests.runtime.test_input_gate import Feeder, RecordingLink

from undertow.connectors.source import InputStatus
from undertow.core.errors import KeySelectorError, StateError
from undertow.runtime.checkpoint.channel_recovery import (
    EndOfChannelStateEvent,
    UpstreamRecoveryTracker,
)
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredInputStream
from undertow.runtime.checkpoint.channel_state_writer import (
    decode_chunk,
    encode_chunk,
    encode_recovered_chunk,
    is_recovered_chunk,
)
from undertow.runtime.network.buffer import BatchDeserializer, Buffer, serialize_batch
from undertow.runtime.network.input_gate import InputChannel, InputGate
from undertow.runtime.task.current_batch import CurrentBatch
from undertow.runtime.task.events import EndOfData
from undertow.runtime.task.input_processor import StreamInputProcessor
from undertow.runtime.task.pace import TaskPace


@dataclass
class RecordingHead(Head):
    """Records every chunk it is handed (with its timestamps); ``during`` runs after each
    chunk, to act in the middle of a slice."""

    chunks: list[list[Any]] = field(default_factory=list)
    stamps: list[list[Any] | None] = field(default_factory=list)
    during: Callable[[list[Any]], None] | None = None

    def process_batch(self, values: list[Any], timestamps: list[Any] | None) -> None:
        self.chunks.append(list(values))
        self.stamps.append(None if timestamps is None else list(timestamps))
        if self.during is not None:
            self.during(values)

    @property
    def records(self) -> list[Any]:
        return [value for chunk in self.chunks for value in chunk]


@dataclass
class BoundedHead(RecordingHead):
    """A head with room for ``room`` more records (a :class:`BoundedInput`, as async I/O with
    its capacity): each record it takes uses one; ``rooms`` records the room each chunk
    found."""

    room: int = 0
    rooms: list[int] = field(default_factory=list)

    def input_room(self) -> int:
        return self.room

    def has_pending_work(self) -> bool:
        return False

    def process_batch(self, values: list[Any], timestamps: list[Any] | None) -> None:
        self.rooms.append(self.room)
        self.room -= len(values)
        super().process_batch(values, timestamps)


@dataclass
class TwoInputHead(Head):
    """A two-input head: records which input each chunk went to."""

    chunks: list[tuple[int, list[Any]]] = field(default_factory=list)

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None) -> None:
        self.chunks.append((1, list(values)))

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None) -> None:
        self.chunks.append((2, list(values)))


def processor(
    gates: list[InputGate],
    head: Head,
    *,
    slice_ms: float = 1000.0,
    output_available: Callable[[], bool] = lambda: True,
    priority_events: bool = False,
    checkpointer: Checkpointer | None = None,
    on_restored_input_consumed: Callable[[], None] | None = None,
    two_input: bool = False,
    cut_batches: bool = False,
    call_later: Callable[[float, Callable[[], None]], object] = lambda delay, callback: None,
    key_selector: Callable[[Any], Any] | None = None,
    writers: tuple[Any, ...] = (),
) -> StreamInputProcessor:
    """A processor over ``gates`` feeding ``head``, with ``writers`` as outputs (none by
    default; ``call_later``: the loop's, for a source's back-off timer); buffer timeout
    100 ms."""
    events, _, _ = dispatcher(gates, two_input=two_input, checkpointer=checkpointer, head=head)
    return StreamInputProcessor(
        gates=gates, head=head, two_input=two_input, priority_events=priority_events,
        events=events, writers=writers, budget=None, pace=TaskPace(slice_ms, slice_ms),
        output_available=output_available, buffer_timeout_ms=100, debloated=False,
        loop_call_later=call_later, wake=lambda: None,
        on_restored_input_consumed=on_restored_input_consumed, cut_batches=cut_batches,
        key_selectors=(key_selector, None),
    )  # fmt: skip


def restore(
    inputs: StreamInputProcessor, g: InputGate, channel: InputChannel, values: list[Any],
    stamps: list[Any] | None = None, recovered: bool = False,
) -> None:  # fmt: skip
    """Hand ``inputs`` one batch of restored channel state for ``channel``, as a stream of one
    chunk (a recovered chunk for recovered input)."""
    batch = serialize_batch(values, stamps)
    chunk = encode_recovered_chunk(batch) if recovered else encode_chunk(Buffer(batch))
    inputs.add_restored_input(g, channel, RestoredInputStream([chunk]), recovered)


def contents(chunk: bytes) -> tuple[bool, list[Any], list[Any] | None]:
    """(recovered?, values, timestamps) of one channel-state chunk of a whole batch."""
    batch = BatchDeserializer().add(decode_chunk(chunk))
    assert batch is not None, "a chunk of the processor holds a whole batch"
    return is_recovered_chunk(chunk), batch[0], batch[1]


# -- restored input --------------------------------------------------------------------------------
def test_restored_input_goes_before_live_input_and_is_reported_consumed_once_after_it() -> None:
    g = gate("G", 1, credit=4)
    feeder = Feeder(g.channels[0])
    feeder.data([10, 11])  # live, queued before the task starts
    head = RecordingHead()
    reports: list[list[Any]] = []
    inputs = processor(
        [g], head, on_restored_input_consumed=lambda: reports.append(list(head.records))
    )
    restore(inputs, g, g.channels[0], [1, 2])
    restore(inputs, g, g.channels[0], [3])
    inputs.input_slice()
    assert head.records == [1, 2, 3, 10, 11]
    assert reports == [[1, 2, 3]], "reported before, or not right after, the restored input"
    feeder.data([12])
    inputs.input_slice()
    assert head.records[-1] == 12
    assert reports == [[1, 2, 3]], "reported more than once"


def test_with_nothing_restored_the_first_slice_reports_it_before_any_input() -> None:
    g = gate("G", 1)
    head = RecordingHead()
    reports: list[int] = []
    inputs = processor(
        [g], head, on_restored_input_consumed=lambda: reports.append(len(head.records))
    )
    assert inputs.ready(), "no input, but a slice is due to report"
    inputs.input_slice()
    assert reports == [0]
    assert not inputs.ready()
    Feeder(g.channels[0]).data([1])
    inputs.input_slice()
    assert (head.records, reports) == ([1], [0])


def test_re_emitted_batches_are_drained_unprocessed_as_recovered_input_ahead_of_live_data() -> None:
    """A gate still recovering after a rescale: what the producer re-emitted up to its
    ``EndOfChannelStateEvent`` moves into the restored input unprocessed (even while no slice
    runs); it is channel state as recovered chunks, and processed before the live data."""
    g = gate("G", 1, credit=4)
    channel = g.channels[0]
    link = RecordingLink()
    channel.connect(link)
    head = RecordingHead()
    reports: list[list[Any]] = []
    inputs = processor(
        [g], head, on_restored_input_consumed=lambda: reports.append(list(head.records))
    )
    recovered: list[str] = []
    inputs.events.recovery = UpstreamRecoveryTracker(frozenset({0}), lambda: recovered.append("G"))
    assert not inputs.ready()
    feeder = Feeder(channel)
    feeder.data([1, 2])
    feeder.data([3])
    feeder.event(EndOfChannelStateEvent(), blocks=True)
    inputs.process_priority_events()  # under backpressure: no slice, but the drain
    assert (head.records, recovered, link.resumes) == ([], ["G"], 1)
    assert [contents(c) for c in inputs.unprocessed_chunks(channel)] == [
        (True, [1, 2], None),
        (True, [3], None),
    ]
    feeder.data([40])
    inputs.input_slice()
    assert head.records == [1, 2, 3, 40]
    assert reports == [[1, 2, 3]]


# -- channel state of what the task holds ----------------------------------------------------------
def _sleep_past_the_slice(values: list[Any]) -> None:
    time.sleep(0.002)


@pytest.mark.parametrize("cut", ["time", "output"])
def test_the_rest_of_a_cut_batch_is_its_channel_state(cut: str) -> None:
    g = gate("G", 2)
    values, stamps = list(range(200)), [1000 + i for i in range(200)]
    Feeder(g.channels[0]).buffer(Buffer(serialize_batch(values, stamps)))
    head = RecordingHead()
    if cut == "time":  # every chunk takes longer than the 10 µs slice
        head.during = _sleep_past_the_slice
        inputs = processor([g], head, slice_ms=0.01)
    else:
        inputs = processor([g], head, output_available=lambda: False)
    inputs.input_slice()
    done = len(head.records)
    assert head.chunks == [values[:done]] and 0 < done < 200
    assert [contents(c) for c in inputs.unprocessed_chunks(g.channels[0])] == [
        (False, values[done:], stamps[done:])
    ]
    assert inputs.unprocessed_chunks(g.channels[1]) == []


ROW_S = 2e-6  # a batch function's time per row


def _slow_rows(values: list[Any]) -> None:
    time.sleep(sum(v.num_rows for v in values) * ROW_S)


class RowClock:
    """The input processor's clock (``time.perf_counter``), advanced by the head only: a
    function that takes exactly :data:`ROW_S` per row and nothing else. A real sleep under
    load also takes the time the scheduler gives others, which the row cutter (rightly) reads
    as the function's fixed cost, and then amortises with larger cuts."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def rows(self, values: list[Any]) -> None:
        self.now += sum(v.num_rows for v in values) * ROW_S


def test_a_large_record_batch_is_cut_by_rows_and_its_rest_is_its_channel_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One record batch of 100,000 rows behind a function that takes 0.2 s for it, 1 ms
    slices: a slice hands the head row ranges of it, never the whole batch, so a priority
    event waits a few ms, not 0.2 s; the rest of the batch (a row range, then the records
    after it) is the channel's state, and the slices that follow hand the head every row once
    and in order. The function's time is the processor's clock (:class:`RowClock`)."""
    from undertow.runtime.task import input_processor

    clock = RowClock()
    monkeypatch.setattr(input_processor, "time", clock)
    g = gate("G", 1)
    batch = pa.record_batch({"v": list(range(100_000))})
    after = pa.record_batch({"v": [-1, -2]})
    Feeder(g.channels[0]).buffer(Buffer(serialize_batch([batch, after], [7, 8])))
    head = RecordingHead(during=clock.rows)
    inputs = processor([g], head, slice_ms=1.0, cut_batches=True)
    inputs.input_slice()
    done = sum(v.num_rows for v in head.records)
    assert 0 < done < 100_000, "the batch was not cut"
    assert head.stamps == [[7]] * len(head.chunks)
    [(recovered, rest, stamps)] = [contents(c) for c in inputs.unprocessed_chunks(g.channels[0])]
    assert (recovered, stamps) == (False, [7, 8])
    assert rest[0].equals(batch.slice(done)) and rest[1].equals(after)
    while inputs.ready():
        inputs.input_slice()
    pieces = head.records
    whole = pa.Table.from_batches(pieces[:-1]).combine_chunks()
    assert whole.equals(pa.Table.from_batches([batch]))
    assert pieces[-1].equals(after), "a small batch goes whole"
    assert max(p.num_rows for p in pieces) * ROW_S <= 0.02, "a piece overran 20 ms"
    assert len(pieces) > 5


def test_without_row_cuts_a_record_batch_goes_whole() -> None:
    """A chain that does not take row ranges (``takes_row_ranges``) gets whole batches."""
    g = gate("G", 1)
    batch = pa.record_batch({"v": list(range(10_000))})
    Feeder(g.channels[0]).buffer(Buffer(serialize_batch([batch], None)))
    head = RecordingHead(during=_slow_rows)
    inputs = processor([g], head, slice_ms=1.0, cut_batches=False)
    inputs.input_slice()
    assert head.records == [batch] and inputs.unprocessed_chunks(g.channels[0]) == []


def test_a_keyed_heads_failing_key_selector_is_named_with_its_record() -> None:
    """A keyed operator runs its key selector itself (after a one-channel key_by, the
    partitioner does not): its failure names the selector and the record; another error of
    the chunk (here a ValueError of the function) goes out as it is."""
    g = gate("G", 1)

    def selector(value: Any) -> Any:
        return {"a": 1, "c": 3}[value]

    def keyed_head(values: list[Any]) -> None:
        for value in values:
            selector(value)
            if value == "c":
                raise ValueError("the function's own error")

    Feeder(g.channels[0]).data(["a", "b", "c"])
    inputs = processor([g], RecordingHead(during=keyed_head), key_selector=selector)
    with pytest.raises(KeySelectorError, match=r"raised KeyError: 'b' on the record 'b'") as err:
        inputs.input_slice()
    assert isinstance(err.value.__cause__, KeyError)
    other = gate("H", 1)
    Feeder(other.channels[0]).data(["c", "b"])  # the selector would fail too, on "b": later
    with pytest.raises(ValueError, match="the function's own error"):
        processor([other], RecordingHead(during=keyed_head), key_selector=selector).input_slice()


def test_the_restored_rest_follows_the_rest_of_the_batch_in_stream_order() -> None:
    """At a barrier a channel's state is the rest of the batch in hand (written), then what
    its restored streams hold undecoded, in stream order (referred to, or written again)."""
    g = gate("G", 2)
    a, b = g.channels
    head = BoundedHead(room=2)  # takes two records, then the slice ends
    inputs = processor([g], head)
    restore(inputs, g, a, [1, 2, 3, 4, 5], [11, 12, 13, 14, 15])
    restore(inputs, g, b, [20])
    restore(inputs, g, a, [6, 7], recovered=True)
    restore(inputs, g, a, [8], [18])
    inputs.input_slice()
    assert head.records == [1, 2]
    assert [contents(c) for c in inputs.unprocessed_chunks(a)] == [(False, [3, 4, 5], [13, 14, 15])]
    assert [contents(c) for c in inputs.restored_rest(a)] == [  # type: ignore[arg-type]
        (True, [6, 7], None),
        (False, [8], [18]),
    ]
    assert inputs.unprocessed_chunks(b) == []
    assert [contents(c) for c in inputs.restored_rest(b)] == [(False, [20], None)]  # type: ignore[arg-type]


def test_take_unprocessed_hands_back_the_batch_in_hand_and_counts_pending_restored_records() -> (
    None
):
    g = gate("G", 1)
    a = g.channels[0]
    head = BoundedHead(room=2)
    inputs = processor([g], head)
    restore(inputs, g, a, [1, 2, 3, 4, 5])
    restore(inputs, g, a, [6, 7])
    restore(inputs, g, a, [8], recovered=True)
    inputs.input_slice()
    current, pending = inputs.take_unprocessed()
    assert isinstance(current, CurrentBatch)
    assert (current.values, current.position, current.restored) == ([1, 2, 3, 4, 5], 2, True)
    assert pending == 3
    head.room = 10
    assert inputs.unprocessed_chunks(a) == [] and not inputs.ready()
    assert inputs.take_unprocessed() == (None, 0)


# -- what a slice takes and in which order ---------------------------------------------------------
def test_a_priority_event_is_taken_between_two_chunks_ahead_of_queued_data() -> None:
    g = gate("G", 1, credit=4)
    feeder = Feeder(g.channels[0])
    feeder.data([0, 1, 2, 3, 4, 5])
    feeder.data([6, 7])
    checkpointer = Checkpointer()
    barriers_seen: list[int] = []
    head = BoundedHead(room=2)

    def during(values: list[Any]) -> None:
        barriers_seen.append(len(checkpointer.calls))
        head.room = 2  # chunks of two, one slice for everything
        if values == [0]:  # an unaligned barrier overtakes the rest
            feeder.event(barrier(7), priority=True)

    head.during = during
    inputs = processor([g], head, priority_events=True, checkpointer=checkpointer)
    inputs.input_slice()
    # the first chunk is one record (its cost is unknown), then chunks as the room allows
    assert head.chunks == [[0], [1, 2], [3, 4], [5], [6, 7]]
    assert checkpointer.calls == [("barrier", "G/0", 7)]
    assert barriers_seen == [0, 1, 1, 1, 1], "the barrier waited behind data"


def test_gates_are_polled_round_robin() -> None:
    left, right = gate("L", 1, credit=4), gate("R", 1, credit=4)
    for g in (left, right):
        feeder = Feeder(g.channels[0])
        feeder.data([f"{g.name}1"])
        feeder.data([f"{g.name}2"])
    head = RecordingHead()
    processor([left, right], head).input_slice()
    assert head.chunks == [["L1"], ["R1"], ["L2"], ["R2"]]


def test_a_head_with_bounded_room_gets_chunks_within_its_room_and_no_input_without_room() -> None:
    g = gate("G", 1)
    Feeder(g.channels[0]).data(list(range(8)))
    head = BoundedHead(room=3)
    inputs = processor([g], head)
    inputs.input_slice()
    assert head.chunks == [[0], [1, 2]]  # the first chunk is one record, then within the room
    assert not inputs.ready(), "a head without room was offered input"
    head.room = 2
    assert inputs.ready()
    inputs.input_slice()
    head.room = 10
    inputs.input_slice()
    assert head.chunks == [[0], [1, 2], [3, 4], [5, 6, 7]]


def test_a_two_input_head_gets_each_gates_chunks_on_the_gates_input() -> None:
    first, second = gate("A", 1, input_index=1), gate("B", 1, input_index=2)
    Feeder(first.channels[0]).data(["a"])
    Feeder(second.channels[0]).data(["b"])
    head = TwoInputHead()
    processor([second, first], head, two_input=True).input_slice()
    assert head.chunks == [(2, ["b"]), (1, ["a"])]


def test_live_batches_are_counted_and_released_to_their_gate_restored_ones_are_not() -> None:
    """Restored channel state holds no buffer of the gate: only a live batch returns credit
    and counts as processed (buffer debloating's throughput)."""
    g = gate("G", 1)
    link = RecordingLink()
    g.channels[0].connect(link)
    Feeder(g.channels[0]).data([10, 11, 12])
    inputs = processor([g], RecordingHead())
    restore(inputs, g, g.channels[0], [1, 2])
    inputs.input_slice()
    assert link.credits == [2, 1], "the live buffer's credit, once"
    assert g.records_processed == 3


def test_records_after_a_channels_end_of_data_fail_naming_operator_and_channel() -> None:
    g = gate("G", 2)
    feeder = Feeder(g.channels[1])
    feeder.event(EndOfData(drain=True))
    feeder.data([1])
    inputs = processor([g], RecordingHead())
    with pytest.raises(StateError, match=r"operator 'Map' received records on G/1 after EndOfData"):
        inputs.input_slice()


# -- the whole promise -----------------------------------------------------------------------------
#: Per gate, per channel: the sizes of its restored batches and of its live batches.
_LAYOUTS = st.lists(
    st.lists(
        st.tuples(st.lists(st.integers(1, 5), max_size=3), st.lists(st.integers(1, 5), max_size=3)),
        min_size=1,
        max_size=2,
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    layout=_LAYOUTS,
    rooms=st.lists(st.integers(1, 6), min_size=1, max_size=6),
    unavailable=st.lists(st.booleans(), max_size=30),
)
def test_the_head_gets_exactly_the_gates_records_each_channel_in_order_restored_first(
    layout: list[list[tuple[list[int], list[int]]]], rooms: list[int], unavailable: list[bool]
) -> None:
    """Any split of batches into chunks (the head's room) and slices (the output unavailable
    after a chunk or an event): every record once, each channel's in order, every restored
    record before every live one, and the report of the restored input right after it."""
    gates = [gate(f"G{i}", len(channels), credit=8) for i, channels in enumerate(layout)]
    next_room = itertools.cycle(rooms)
    head = BoundedHead(room=next(next_room))
    head.during = lambda values: setattr(head, "room", next(next_room))
    cuts = iter(unavailable)
    reports: list[int] = []
    inputs = processor(
        gates, head, output_available=lambda: not next(cuts, False),
        on_restored_input_consumed=lambda: reports.append(len(head.records)),
    )  # fmt: skip
    expected: dict[tuple[int, int], list[Any]] = {}
    restored_count = 0
    for gi, (g, channels) in enumerate(zip(gates, layout)):
        for ci, (restored, live) in enumerate(channels):
            seq = itertools.count()
            records = expected.setdefault((gi, ci), [])
            for size in restored:
                batch = [(gi, ci, next(seq), "restored") for _ in range(size)]
                restore(inputs, g, g.channels[ci], batch, [r[2] for r in batch])
                records += batch
                restored_count += size
            feeder = Feeder(g.channels[ci])
            for size in live:
                batch = [(gi, ci, next(seq), "live") for _ in range(size)]
                feeder.buffer(Buffer(serialize_batch(batch, [r[2] for r in batch])))
                records += batch
    for _ in range(1000):
        if not inputs.ready():
            break
        inputs.input_slice()
    got = head.records
    assert sorted(got) == sorted(r for records in expected.values() for r in records)
    for (gi, ci), records in expected.items():
        assert [r for r in got if r[:2] == (gi, ci)] == records
    kinds = [r[3] for r in got]
    assert kinds == sorted(kinds, key=lambda kind: kind != "restored")
    assert reports == [restored_count]
    assert all(len(chunk) <= room for chunk, room in zip(head.chunks, head.rooms, strict=True))
    assert all(s == [r[2] for r in c] for c, s in zip(head.chunks, head.stamps, strict=True))


# -- a source's back-off ---------------------------------------------------------------------------
@dataclass
class IdleSource(Head):
    """A source head whose reader has nothing (``NOTHING_AVAILABLE``) on every call."""

    calls: int = 0
    #: the reader's wait before it is asked again without a notice
    wait_s: float = 0.005

    def has_pending(self) -> bool:
        return False

    def emit_next(self) -> InputStatus:
        self.calls += 1
        return InputStatus.NOTHING_AVAILABLE

    def poll_again_after_s(self) -> float:
        return self.wait_s


def test_a_source_with_nothing_has_one_back_off_timer_at_a_time() -> None:
    # the reader's wake-ups (one per fetch) find nothing more each time: one timer, not a
    # chain of 5 ms polls per wake-up
    timers: list[Callable[[], None]] = []
    source = IdleSource()
    inputs = processor([], source, call_later=lambda delay, callback: timers.append(callback))
    inputs.source_slice()
    assert len(timers) == 1 and not inputs.source_ready()
    for _ in range(3):
        inputs.source_available()  # the reader notified
        assert inputs.source_ready()
        inputs.source_slice()
    assert source.calls == 4 and len(timers) == 1
    timers.pop()()  # the back-off passed: the reader is asked again, and backs off again
    assert inputs.source_ready()
    inputs.source_slice()
    assert source.calls == 5 and len(timers) == 1


def test_a_source_backs_off_for_as_long_as_its_reader_asks() -> None:
    # a reader that notifies whenever records arrive (Kafka's) is not polled every 5 ms
    delays: list[float] = []
    source = IdleSource(wait_s=0.25)
    inputs = processor([], source, call_later=lambda delay, callback: delays.append(delay))
    inputs.source_slice()
    assert delays == [0.25]


def test_a_slow_head_holds_the_first_slice_for_one_record_not_a_chunk_of_many() -> None:
    """The first chunk is one record: a function of unknown cost (a 100 ms model call) holds
    the task for one call, not for 64 of them, before results flow and a cancel or barrier is
    seen; later chunks follow the measured cost."""
    g = gate("G", 1)
    Feeder(g.channels[0]).data(list(range(100)))
    head = RecordingHead(during=lambda values: time.sleep(0.02 * len(values)))
    processor([g], head, slice_ms=10).input_slice()
    assert head.records == [0]


def test_slow_records_among_fast_ones_are_taken_about_one_a_chunk() -> None:
    """Every 50th record sleeps 5 ms (a slow key), the rest are fast; slice 1 ms. A chunk after
    a slow one regrows by doubling (:mod:`~undertow.runtime.task.chunk_size`), so no chunk
    holds two slow records: a barrier or a cancel waits for one. The rule before jumped back
    to what fits at the fast records' cost after one fast chunk: hundreds of records, several
    slow ones. Timing only ever makes chunks smaller, so the bound holds on a loaded machine."""
    g = gate("G", 1)
    Feeder(g.channels[0]).data(list(range(500)))

    def during(values: list[Any]) -> None:
        time.sleep(0.005 * sum(1 for v in values if v % 50 == 49))

    head = RecordingHead(during=during)
    inputs = processor([g], head, slice_ms=1)
    while len(head.records) < 500:
        inputs.input_slice()
    assert head.records == list(range(500))
    slow = [sum(1 for v in chunk if v % 50 == 49) for chunk in head.chunks]
    assert max(slow) == 1, [len(chunk) for chunk in head.chunks]


@pytest.mark.parametrize(("sleep_s", "flushed"), [(0.15, True), (0.0, False)])
def test_a_chunk_slower_than_the_buffer_timeout_flushes_the_outputs_at_the_slices_end(
    sleep_s: float, flushed: bool
) -> None:
    """Flink's output flusher sends what a map emitted before it blocked on a slow record
    within the buffer timeout (100 ms here); our flush is a mail, which waits for the slice. A
    chunk that alone took the timeout flushes when its slice ends (corpus program
    allowed_lateness_late_firing: a downstream watermark overtook records held back this way).
    Fast chunks leave the flush to the timeout's mail."""
    g = gate("G", 1)
    Feeder(g.channels[0]).data([1])
    writer = FakeWriter(pending=True)
    head = RecordingHead(during=lambda values: time.sleep(sleep_s))
    processor([g], head, slice_ms=1000, writers=(writer,)).input_slice()
    assert head.records == [1]
    assert writer.flushes == (1 if flushed else 0)
