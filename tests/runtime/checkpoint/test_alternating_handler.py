"""Alternating barrier handling: unaligned checkpoints and aligned ones that time out.

Unit tests per row of the state table (reference §1.5, :mod:`alternating_states`), then a
Hypothesis state machine: a model network (records, aligned barriers that block their upstream
and are announced, unaligned priority barriers, cancel markers, end of partition, a clock and
alignment timers) and a model task that executes every action, drive the handler; each action
list is compared with a flat reference model, and each completed checkpoint is checked for
exactly-once channel state: per channel, records processed before the snapshot + records
persisted as channel state + records after the barrier = all records, each exactly once.

The model, the network and the invariants are one piece (each invariant reads all three), hence
the length of this file.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from tests.runtime.checkpoint.barrier_ids import next_checkpoint_id

from undertow.runtime.checkpoint.alternating_states import (
    AlternatingCollectingBarriers,
    AlternatingCollectingBarriersUnaligned,
    AlternatingWaitingForFirstBarrier,
    AlternatingWaitingForFirstBarrierUnaligned,
)
from undertow.runtime.checkpoint.barrier import (
    AlignmentType,
    CancelCheckpointMarker,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.barrier_handler import (
    AbortCheckpoint,
    Action,
    BarrierHandler,
    BarrierProtocolViolation,
    ChannelBarrierReceived,
    ConvertToPriority,
    FinishInputsCheckpoint,
    InitInputsCheckpoint,
    ResumeChannels,
    ScheduleAlignmentTimer,
    TriggerCheckpoint,
    WaitingForFirstBarrier,
)
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

SUBSUMED = CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
ON_CANCEL = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
TIMEOUT = 50
T0 = 1_000


def tb(checkpoint_id: int, ts: int = T0) -> CheckpointBarrier:
    """A timeoutable aligned barrier (aligned checkpoint timeout 50 ms)."""
    options = CheckpointOptions(SnapshotType.CHECKPOINT, AlignmentType.ALIGNED, TIMEOUT)
    return CheckpointBarrier(checkpoint_id, ts, options)


def ub(checkpoint_id: int, ts: int = T0) -> CheckpointBarrier:
    """The unaligned barrier of the same checkpoint (an upstream switched, or pure UC)."""
    return tb(checkpoint_id, ts).as_unaligned()


def sp(checkpoint_id: int) -> CheckpointBarrier:
    """A savepoint barrier: aligned, never timeoutable."""
    return CheckpointBarrier(checkpoint_id, T0, CheckpointOptions(SnapshotType.SAVEPOINT))


def alternating(num_channels: int) -> BarrierHandler:
    return BarrierHandler.alternating(num_channels, "join (1/2)")


# -- factories ------------------------------------------------------------------------------------


def test_factories_choose_the_initial_state() -> None:
    assert isinstance(BarrierHandler(2, "t").state, WaitingForFirstBarrier)
    assert isinstance(BarrierHandler.aligned(2, "t").state, WaitingForFirstBarrier)
    assert not BarrierHandler.aligned(2, "t").is_alternating
    assert alternating(2).state == AlternatingWaitingForFirstBarrier()
    assert alternating(2).is_alternating
    assert BarrierHandler.unaligned(2, "t").state == AlternatingWaitingForFirstBarrierUnaligned()


# -- unaligned checkpoints ------------------------------------------------------------------------


def test_unaligned_checkpoint_triggers_on_the_first_barrier() -> None:
    handler = alternating(3)
    assert handler.on_barrier(1, ub(1), now_ms=T0) == [
        InitInputsCheckpoint(ub(1), (0, 1, 2)),
        ChannelBarrierReceived(1, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert isinstance(handler.state, AlternatingCollectingBarriersUnaligned)
    assert handler.capturing_channels == {0, 2}
    assert handler.blocked_channels == frozenset()
    assert handler.on_barrier(0, ub(1)) == [ChannelBarrierReceived(0, 1)]
    assert handler.on_barrier(2, ub(1)) == [
        ChannelBarrierReceived(2, 1),
        FinishInputsCheckpoint(1),
    ]
    assert handler.state == AlternatingWaitingForFirstBarrier()
    assert handler.pending_checkpoint_id is None


def test_single_channel_unaligned_checkpoint_finishes_at_once() -> None:
    assert alternating(1).on_barrier(0, ub(4)) == [
        InitInputsCheckpoint(ub(4), (0,)),
        ChannelBarrierReceived(0, 4),
        TriggerCheckpoint(ub(4)),
        FinishInputsCheckpoint(4),
    ]


def test_unaligned_barrier_while_aligning_switches_and_keeps_blocked_channels() -> None:
    handler = alternating(3)
    assert handler.on_barrier(0, tb(1), now_ms=T0 + 10) == [ScheduleAlignmentTimer(1, 40)]
    assert isinstance(handler.state, AlternatingCollectingBarriers)
    assert handler.on_barrier(1, ub(1), now_ms=T0 + 11) == [
        InitInputsCheckpoint(ub(1), (0, 1, 2)),
        ChannelBarrierReceived(0, 1),
        ChannelBarrierReceived(1, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.blocked_channels == {0}  # stays blocked until every barrier is in
    assert handler.on_barrier(2, ub(1)) == [
        ChannelBarrierReceived(2, 1),
        ResumeChannels((0,)),
        FinishInputsCheckpoint(1),
    ]


# -- aligned checkpoints with a timeout -----------------------------------------------------------


def test_aligned_checkpoint_in_time_triggers_on_the_last_barrier() -> None:
    handler = alternating(2)
    assert handler.on_barrier(1, tb(1), now_ms=T0) == [ScheduleAlignmentTimer(1, TIMEOUT)]
    assert handler.blocked_channels == {1}
    assert handler.on_barrier(0, tb(1), now_ms=T0 + TIMEOUT) == [
        InitInputsCheckpoint(tb(1), ()),
        TriggerCheckpoint(tb(1)),
        ResumeChannels((0, 1)),
        FinishInputsCheckpoint(1),
    ]
    assert handler.on_alignment_timeout(1, T0 + TIMEOUT) == []  # stale timer


@pytest.mark.parametrize(("now", "delay"), [(T0, 50), (T0 + 20, 30), (T0 + 80, 0)])
def test_timer_delay_counts_from_the_trigger_timestamp(now: int, delay: int) -> None:
    assert alternating(2).on_announcement(0, tb(1), 3, now_ms=now) == [
        ScheduleAlignmentTimer(1, delay)
    ]


def test_without_a_clock_nothing_is_late_and_timers_get_the_full_timeout() -> None:
    handler = alternating(2)
    assert handler.on_barrier(0, tb(1, ts=0)) == [ScheduleAlignmentTimer(1, TIMEOUT)]
    assert isinstance(handler.state, AlternatingCollectingBarriers)


def test_timeout_before_any_barrier_converts_the_announcements() -> None:
    handler = alternating(2)
    handler.on_announcement(1, tb(1), 7, now_ms=T0)
    assert handler.on_alignment_timeout(1, T0 + TIMEOUT) == [ConvertToPriority(1, 7)]
    assert handler.state == AlternatingWaitingForFirstBarrierUnaligned(True)
    assert handler.on_announcement(0, tb(1), 9) == [ConvertToPriority(0, 9)]
    assert handler.on_barrier(1, tb(1)) == [  # the converted barrier, still aligned
        InitInputsCheckpoint(ub(1), (0, 1)),
        ChannelBarrierReceived(1, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.blocked_channels == {1}  # its upstream blocked itself when sending it
    assert handler.on_barrier(0, tb(1)) == [
        ChannelBarrierReceived(0, 1),
        ResumeChannels((0, 1)),
        FinishInputsCheckpoint(1),
    ]
    assert handler.state == AlternatingWaitingForFirstBarrier()  # alternating again


def test_timeout_while_collecting_triggers_unaligned_at_once() -> None:
    handler = alternating(3)
    handler.on_barrier(0, tb(1), now_ms=T0)
    assert handler.on_announcement(1, tb(1), 4) == []
    assert handler.state.channel_state.announced == ((1, 4),)
    assert handler.on_alignment_timeout(1, T0 + TIMEOUT) == [
        ConvertToPriority(1, 4),
        InitInputsCheckpoint(ub(1), (0, 1, 2)),
        ChannelBarrierReceived(0, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.state == AlternatingCollectingBarriersUnaligned(
        True, handler.state.channel_state
    )
    assert handler.on_alignment_timeout(1, T0 + TIMEOUT) == []  # already unaligned
    assert handler.on_barrier(1, tb(1)) == [ChannelBarrierReceived(1, 1)]
    assert handler.on_announcement(2, tb(1), 9) == [ConvertToPriority(2, 9)]
    assert handler.on_barrier(2, tb(1)) == [
        ChannelBarrierReceived(2, 1),
        ResumeChannels((0, 1, 2)),
        FinishInputsCheckpoint(1),
    ]


def test_late_barrier_switches_to_unaligned_without_waiting_for_the_timer() -> None:
    handler = alternating(3)
    handler.on_barrier(0, tb(1), now_ms=T0 + 10)
    assert handler.on_barrier(1, tb(1), now_ms=T0 + TIMEOUT + 1) == [
        InitInputsCheckpoint(ub(1), (0, 1, 2)),
        ChannelBarrierReceived(0, 1),
        ChannelBarrierReceived(1, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.blocked_channels == {0, 1}


def test_late_first_barrier_triggers_unaligned() -> None:
    handler = alternating(2)
    assert handler.on_barrier(0, tb(1), now_ms=T0 + 80) == [
        ScheduleAlignmentTimer(1, 0),
        InitInputsCheckpoint(ub(1), (0, 1)),
        ChannelBarrierReceived(0, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.blocked_channels == {0}


def test_end_of_partition_completes_or_times_out_the_alignment() -> None:
    handler = alternating(2)
    handler.on_barrier(0, tb(1), now_ms=T0)
    assert handler.on_end_of_partition(1) == [
        InitInputsCheckpoint(tb(1), ()),
        TriggerCheckpoint(tb(1)),
        ResumeChannels((0,)),
        FinishInputsCheckpoint(1),
    ]
    handler = alternating(3)
    handler.on_barrier(0, tb(1), now_ms=T0)
    assert handler.on_end_of_partition(1, now_ms=T0 + TIMEOUT + 1) == [
        InitInputsCheckpoint(ub(1), (0, 2)),
        ChannelBarrierReceived(0, 1),
        TriggerCheckpoint(ub(1)),
    ]
    assert handler.on_end_of_partition(2) == [
        ChannelBarrierReceived(2, 1),
        ResumeChannels((0,)),
        FinishInputsCheckpoint(1),
    ]


def test_savepoints_align_without_a_timer() -> None:
    handler = alternating(2)
    assert handler.on_barrier(0, sp(5), now_ms=T0 + 10_000) == []
    assert handler.on_barrier(1, sp(5), now_ms=T0 + 10_000) == [
        InitInputsCheckpoint(sp(5), ()),
        TriggerCheckpoint(sp(5)),
        ResumeChannels((0, 1)),
        FinishInputsCheckpoint(5),
    ]


# -- abort and subsumption ------------------------------------------------------------------------


def test_cancel_marker_aborts_a_triggered_unaligned_checkpoint_and_resumes() -> None:
    handler = alternating(3)
    handler.on_barrier(0, tb(1), now_ms=T0)
    handler.on_alignment_timeout(1, T0 + TIMEOUT)
    assert handler.on_cancel_marker(1, CancelCheckpointMarker(1)) == [
        ResumeChannels((0,)),
        AbortCheckpoint(1, ON_CANCEL),
    ]
    assert handler.state == AlternatingWaitingForFirstBarrier()
    assert handler.capturing_channels == frozenset()
    assert handler.on_barrier(2, tb(1)) == [ResumeChannels((2,))]  # obsolete


def test_newer_barrier_subsumes_an_unaligned_checkpoint() -> None:
    handler = alternating(2)
    handler.on_barrier(0, tb(1), now_ms=T0)
    handler.on_alignment_timeout(1, T0 + TIMEOUT)
    assert handler.on_barrier(1, ub(2)) == [
        ResumeChannels((0,)),
        AbortCheckpoint(1, SUBSUMED),
        InitInputsCheckpoint(ub(2), (0, 1)),
        ChannelBarrierReceived(1, 2),
        TriggerCheckpoint(ub(2)),
    ]


def test_newer_announcement_subsumes_and_obsolete_ones_are_ignored() -> None:
    handler = alternating(2)
    handler.on_barrier(0, tb(1), now_ms=T0)
    assert handler.on_announcement(1, tb(2), 5, now_ms=T0) == [
        ResumeChannels((0,)),
        AbortCheckpoint(1, SUBSUMED),
        ScheduleAlignmentTimer(2, TIMEOUT),
    ]
    assert handler.state.channel_state.announced == ((1, 5),)
    assert handler.on_announcement(0, tb(1), 6) == []


# -- pure unaligned, mark_blocked, violations -----------------------------------------------------


def test_unaligned_factory_stays_unaligned_and_treats_aligned_barriers_as_unaligned() -> None:
    handler = BarrierHandler.unaligned(2, "t")
    assert handler.on_barrier(0, sp(3)) == [
        InitInputsCheckpoint(sp(3).as_unaligned(), (0, 1)),
        ChannelBarrierReceived(0, 3),
        TriggerCheckpoint(sp(3).as_unaligned()),
    ]
    assert handler.on_barrier(1, sp(3)) == [
        ChannelBarrierReceived(1, 3),
        ResumeChannels((0, 1)),
        FinishInputsCheckpoint(3),
    ]
    assert handler.state == AlternatingWaitingForFirstBarrierUnaligned(False)


def test_barriers_without_network_blocking_are_not_blocked_nor_resumed() -> None:
    handler = alternating(2)
    assert handler.on_barrier(0, sp(1), mark_blocked=False) == []
    assert handler.blocked_channels == frozenset()
    assert handler.on_barrier(1, sp(1), mark_blocked=False)[-1] == FinishInputsCheckpoint(1)
    assert handler.on_barrier(0, sp(1), mark_blocked=False) == []


def test_a_cancel_marker_overtaken_by_a_converted_barrier_is_ignored() -> None:
    handler = alternating(2)
    handler.on_cancel_marker(1, CancelCheckpointMarker(1))
    handler.on_announcement(0, tb(2), 5, now_ms=T0)  # queued behind cancel marker 1 on channel 0
    handler.on_alignment_timeout(2, T0 + TIMEOUT)  # converted: it overtakes the marker
    handler.on_barrier(0, tb(2))
    assert handler.blocked_channels == {0}
    assert handler.on_cancel_marker(0, CancelCheckpointMarker(1)) == []
    with pytest.raises(BarrierProtocolViolation, match="blocked"):
        handler.on_cancel_marker(0, CancelCheckpointMarker(2))


@pytest.mark.parametrize(
    ("events", "match"),
    [
        ([lambda h: h.on_barrier(0, ub(1)), lambda h: h.on_barrier(0, ub(1))], "second barrier"),
        ([lambda h: h.on_barrier(0, ub(1)), lambda h: h.on_announcement(0, tb(1), 1)], "after"),
        ([lambda h: h.on_announcement(0, ub(1), 1)], "not aligned"),
        ([lambda h: h.on_barrier(0, sp(1)), lambda h: h.on_alignment_timeout(1)], "without"),
        ([lambda h: h.on_barrier(0, tb(1)), lambda h: h.on_announcement(0, tb(2), 1)], "blocked"),
        (
            [
                lambda h: h.on_barrier(
                    0, CheckpointBarrier(1, T0, CheckpointOptions(alignment=AlignmentType(0)))
                )
            ],
            "AT_LEAST_ONCE",
        ),
    ],
)
def test_events_the_network_rules_out_are_violations(events: list, match: str) -> None:
    handler = alternating(3)
    *setup, event = events
    for step in setup:
        step(handler)
    with pytest.raises(BarrierProtocolViolation, match=match):
        event(handler)


# -- a reference model ----------------------------------------------------------------------------

ALIGNING, WAITING_UNALIGNED, UNALIGNED = "aligning", "waiting-unaligned", "unaligned"


class AlternatingModel:
    """The alternating rules written flat: one pending checkpoint in one of three modes.

    ``aligning``: barriers block their channel; an aligned checkpoint triggers on the last one.
    The checkpoint turns unaligned on an unaligned barrier, a late barrier or the timer: it
    triggers at once if a barrier is in (``unaligned``), else on the first barrier
    (``waiting-unaligned``). Channels capture input from the trigger until their barrier.
    """

    def __init__(self, num_channels: int) -> None:
        self.open = set(range(num_channels))
        self.current = self.done = -1
        self.aligned: set[int] = set()
        self.target = 0
        self.blocked: set[int] = set()
        self.announced: dict[int, int] = {}
        self.first: CheckpointBarrier | None = None
        self.mode = ALIGNING
        self.barrier_in = False
        self.capturing: set[int] = set()
        self.inputs: int | None = None

    @property
    def pending(self) -> bool:
        return self.current != self.done

    def _all_in(self) -> bool:
        return len(self.aligned) == self.target

    def _reset(self) -> list[Action]:
        actions: list[Action] = (
            [ResumeChannels(tuple(sorted(self.blocked)))] if self.blocked else []
        )
        self.blocked, self.aligned, self.announced, self.capturing = set(), set(), {}, set()
        self.mode, self.barrier_in, self.first = ALIGNING, False, None
        return actions

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> list[Action]:
        actions = self._reset()
        self.inputs = None
        self.current = max(self.current, checkpoint_id)
        self.done = max(self.done, checkpoint_id)
        self.target = 0
        return [*actions, AbortCheckpoint(checkpoint_id, reason)]

    def _complete(self) -> list[Action]:
        actions = self._reset()
        if self.inputs == self.current:
            actions.append(FinishInputsCheckpoint(self.current))
        self.inputs = None
        self.done = self.current
        return actions

    def _start(self, b: CheckpointBarrier, now: int) -> list[Action]:
        actions = self._abort(self.current, SUBSUMED) if self.pending else []
        self.current, self.first, self.target = b.checkpoint_id, b, len(self.open)
        if b.options.is_timeoutable:
            delay = max(TIMEOUT - (now - b.timestamp), 0)
            actions.append(ScheduleAlignmentTimer(b.checkpoint_id, delay))
        return actions

    def _is_obsolete(self, checkpoint_id: int) -> bool:
        return checkpoint_id < self.current or (checkpoint_id == self.current and not self.pending)

    def _trigger_aligned(self, b: CheckpointBarrier) -> list[Action]:
        self.inputs = self.current
        return [InitInputsCheckpoint(b, ()), TriggerCheckpoint(b), *self._complete()]

    def _trigger_unaligned(self, b: CheckpointBarrier) -> list[Action]:
        actions: list[Action] = [ConvertToPriority(c, s) for c, s in sorted(self.announced.items())]
        self.announced = {}
        unaligned = b.as_unaligned()
        channels = tuple(sorted(self.open))
        self.inputs, self.mode = self.current, UNALIGNED
        self.capturing = set(channels) - self.aligned
        received = [ChannelBarrierReceived(c, self.current) for c in channels if c in self.aligned]
        return [
            *actions,
            InitInputsCheckpoint(unaligned, channels),
            *received,
            TriggerCheckpoint(unaligned),
        ]

    def _channel_done(self, channel: int) -> list[Action]:
        if channel not in self.capturing:
            return []
        self.capturing.remove(channel)
        return [ChannelBarrierReceived(channel, self.current)]

    def barrier(self, channel: int, b: CheckpointBarrier, now: int) -> list[Action]:
        if self._is_obsolete(b.checkpoint_id):
            return [ResumeChannels((channel,))] if b.options.needs_alignment else []
        actions = self._start(b, now) if b.checkpoint_id > self.current else []
        self.aligned.add(channel)
        if b.options.needs_alignment:
            self.blocked.add(channel)
        if self.mode == ALIGNING and b.options.needs_alignment:
            self.announced.pop(channel, None)
            if self._all_in():
                return actions + self._trigger_aligned(b)
            if b.options.is_timeoutable and now - b.timestamp > TIMEOUT:
                return actions + self._trigger_unaligned(b)
            self.barrier_in = True
            return actions
        if self.mode != UNALIGNED:
            actions += self._trigger_unaligned(b)
        actions += self._channel_done(channel)
        return actions + (self._complete() if self._all_in() else [])

    def announcement(self, channel: int, b: CheckpointBarrier, seq: int, now: int) -> list[Action]:
        actions = self._start(b, now) if b.checkpoint_id > self.current else []
        if self._is_obsolete(b.checkpoint_id):
            return actions
        if self.mode == ALIGNING:
            self.announced[channel] = seq
            return actions
        return [*actions, ConvertToPriority(channel, seq)]

    def timeout(self, checkpoint_id: int) -> list[Action]:
        if not self.pending or checkpoint_id != self.current or self.mode != ALIGNING:
            return []
        assert self.first is not None
        if self.barrier_in:
            return self._trigger_unaligned(self.first)
        actions: list[Action] = [ConvertToPriority(c, s) for c, s in sorted(self.announced.items())]
        self.announced, self.mode = {}, WAITING_UNALIGNED
        return actions

    def cancel(self, checkpoint_id: int) -> list[Action]:
        if checkpoint_id > self.current:
            actions = self._abort(self.current, SUBSUMED) if self.pending else []
            return actions + self._abort(checkpoint_id, ON_CANCEL)
        if checkpoint_id == self.current and self.pending:
            return self._abort(checkpoint_id, ON_CANCEL)
        return []

    def end_of_partition(self, channel: int, now: int) -> list[Action]:
        self.open.discard(channel)
        self.announced.pop(channel, None)
        if not self.pending:
            return []
        self.aligned.add(channel)
        if self.mode == UNALIGNED:
            return self._channel_done(channel) + (self._complete() if self._all_in() else [])
        if self.mode == WAITING_UNALIGNED or not self.barrier_in:
            assert not self._all_in(), "an announced barrier precedes its channel's end"
            return []
        assert self.first is not None
        if self._all_in():
            return self._trigger_aligned(self.first)
        if self.first.options.is_timeoutable and now - self.first.timestamp > TIMEOUT:
            return self._trigger_unaligned(self.first)
        return []


# -- the state machine: a network, a task and the model ------------------------------------------


@dataclass
class Item:
    """An element of an input channel's queue, with its sequence number on the channel."""

    seq: int
    record: int | None = None
    barrier: CheckpointBarrier | None = None
    cancel: int | None = None  # checkpoint id of a cancellation marker
    # neither: end of partition


KINDS = st.sampled_from(["timeoutable", "timeoutable", "unaligned", "savepoint"])
ID_CHOICES = st.sampled_from(["current"] * 5 + ["next", "lagging", "skip"])
PICK = st.integers(0, 3)


class AlternatingBarrierHandling(RuleBasedStateMachine):
    """Upstreams send records, barriers (aligned ones block the upstream and are announced if
    timeoutable; unaligned ones are priority events, handled on arrival), cancel markers and end
    of partition; the task takes queue heads, fires alignment timers and executes the actions."""

    @initialize(num_channels=st.sampled_from([3, 4, 2, 1]))
    def start(self, num_channels: int) -> None:
        self.n = num_channels
        self.now = T0
        self.handler = BarrierHandler.alternating(num_channels, "model (1/1)")
        self.model = AlternatingModel(num_channels)
        self.queues: list[deque[Item]] = [deque() for _ in range(num_channels)]
        self.next_seq = [0] * num_channels
        self.up_blocked: set[int] = set()  # upstreams stopped after sending an aligned barrier
        self.up_finished: set[int] = set()  # upstreams that sent their end of partition
        self.ended: set[int] = set()  # channels whose end of partition the task processed
        self.last_id = [0] * num_channels  # ids strictly increase per channel
        self.max_id = 0
        self.checkpoints: dict[int, CheckpointBarrier] = {}
        self.sent: list[dict[int, int]] = [{} for _ in range(num_channels)]  # record -> seq
        self.next_record = 0
        self.barrier_seq: dict[int, dict[int, int]] = {}  # checkpoint -> channel -> seq
        self.barrier_taken: dict[int, set[int]] = {}  # checkpoint -> channels handled
        self.processed: set[int] = set()
        self.timers: list[tuple[int, int]] = []  # (due, checkpoint id)
        self.triggered: dict[int, CheckpointBarrier] = {}
        self.snapshot: dict[int, frozenset[int]] = {}
        self.aborted: set[int] = set()
        self.completed: set[int] = set()
        self.inputs: int | None = None  # checkpoint between InitInputs... and Finish/Abort
        self.capture: int | None = None  # unaligned checkpoint whose input is captured
        self.capturing: set[int] = set()
        self.persisted: dict[int, dict[int, set[int]]] = {}  # checkpoint -> channel -> records

    # -- the network -----------------------------------------------------------------------------

    def sending(self) -> list[int]:
        return [c for c in range(self.n) if c not in self.up_finished | self.up_blocked]

    def enqueue(self, channel: int, item: Item) -> None:
        self.queues[channel].append(item)

    def seq(self, channel: int) -> int:
        self.next_seq[channel] += 1
        return self.next_seq[channel]

    def next_id(self, channel: int, how: str) -> int:
        checkpoint_id = next_checkpoint_id(self.last_id[channel], self.max_id, how)
        self.last_id[channel] = checkpoint_id
        self.max_id = max(self.max_id, checkpoint_id)
        return checkpoint_id

    def checkpoint(self, checkpoint_id: int, kind: str) -> CheckpointBarrier:
        if checkpoint_id not in self.checkpoints:
            if kind == "savepoint":
                options = CheckpointOptions(SnapshotType.SAVEPOINT)
            elif kind == "unaligned":
                options = CheckpointOptions(alignment=AlignmentType.UNALIGNED)
            else:
                options = CheckpointOptions(aligned_checkpoint_timeout=TIMEOUT)
            self.checkpoints[checkpoint_id] = CheckpointBarrier(checkpoint_id, self.now, options)
        return self.checkpoints[checkpoint_id]

    def send_barrier(self, channel: int, b: CheckpointBarrier) -> None:
        seq = self.seq(channel)
        self.barrier_seq.setdefault(b.checkpoint_id, {})[channel] = seq
        if b.options.is_unaligned:  # a priority event: the task handles it at once
            self.take_barrier(channel, b)
            return
        self.enqueue(channel, Item(seq, barrier=b))
        self.up_blocked.add(channel)
        if b.options.is_timeoutable:  # the announcement is a priority event
            actions = self.handler.on_announcement(channel, b, seq, now_ms=self.now)
            self.execute(actions, self.model.announcement(channel, b, seq, self.now))

    # -- the task --------------------------------------------------------------------------------

    def take_barrier(self, channel: int, b: CheckpointBarrier) -> None:
        self.barrier_taken.setdefault(b.checkpoint_id, set()).add(channel)
        actions = self.handler.on_barrier(channel, b, now_ms=self.now)
        self.execute(actions, self.model.barrier(channel, b, self.now))

    def take_head(self, channel: int) -> None:
        item = self.queues[channel].popleft()
        if item.record is not None:
            if channel in self.handler.blocked_channels:
                # only an unaligned checkpoint lets a blocked channel's records pass, and only
                # the in-flight ones before the barrier, which are its channel state
                assert isinstance(self.handler.state, AlternatingCollectingBarriersUnaligned)
                assert self.capture is not None
                assert item.record in self.persisted[self.capture][channel]
            self.processed.add(item.record)
        elif item.barrier is not None:
            self.take_barrier(channel, item.barrier)
        elif item.cancel is not None:
            actions = self.handler.on_cancel_marker(channel, CancelCheckpointMarker(item.cancel))
            self.execute(actions, self.model.cancel(item.cancel))
        else:
            self.ended.add(channel)
            actions = self.handler.on_end_of_partition(channel, now_ms=self.now)
            self.execute(actions, self.model.end_of_partition(channel, self.now))

    def drain(self) -> None:
        while busy := [c for c in range(self.n) if self.queues[c]]:
            self.take_head(busy[0])

    def execute(self, actions: list[Action], expected: list[Action]) -> None:
        assert actions == expected, f"{self.handler!r}: got {actions}, model says {expected}"
        for action in actions:
            if isinstance(action, ResumeChannels):
                for channel in action.channels:
                    assert channel in self.up_blocked, f"channel {channel} resumed twice"
                    assert all(item.barrier is None for item in self.queues[channel])
                    self.up_blocked.remove(channel)
            elif isinstance(action, ScheduleAlignmentTimer):
                b = self.checkpoints[action.checkpoint_id]
                due = self.now + action.delay_ms
                assert due == max(b.timestamp + TIMEOUT, self.now)
                self.timers.append((due, action.checkpoint_id))
            elif isinstance(action, InitInputsCheckpoint):
                self.init_inputs(action)
            elif isinstance(action, ChannelBarrierReceived):
                assert self.capture == action.checkpoint_id
                assert action.channel in self.capturing, "a channel stopped capturing twice"
                assert action.channel in self.barrier_taken.get(self.capture, set()) | self.ended
                self.capturing.remove(action.channel)
            elif isinstance(action, ConvertToPriority):
                queue = self.queues[action.channel]
                (item,) = [i for i in queue if i.barrier and i.seq == action.sequence_number]
                queue.remove(item)
                queue.appendleft(item)
            elif isinstance(action, TriggerCheckpoint):
                checkpoint_id = action.barrier.checkpoint_id
                assert checkpoint_id not in self.triggered, "triggered twice"
                assert checkpoint_id not in self.aborted, "an aborted checkpoint triggered"
                assert self.inputs == checkpoint_id, "triggered without InitInputsCheckpoint"
                self.triggered[checkpoint_id] = action.barrier
                self.snapshot[checkpoint_id] = frozenset(self.processed)
            elif isinstance(action, FinishInputsCheckpoint):
                assert self.inputs == action.checkpoint_id
                assert action.checkpoint_id in self.triggered, "finished without a trigger"
                assert not (self.capture == action.checkpoint_id and self.capturing)
                self.inputs = self.capture = None
                self.check_exactly_once(action.checkpoint_id)
                self.completed.add(action.checkpoint_id)
            else:
                assert isinstance(action, AbortCheckpoint)
                triggered = self.triggered.get(action.checkpoint_id)
                assert triggered is None or triggered.options.is_unaligned, "an AC aborted"
                self.aborted.add(action.checkpoint_id)
                if self.inputs is not None and self.inputs <= action.checkpoint_id:
                    self.inputs = self.capture = None
                    self.capturing = set()

    def init_inputs(self, action: InitInputsCheckpoint) -> None:
        assert self.inputs is None, "InitInputsCheckpoint twice"
        checkpoint_id = self.inputs = action.checkpoint_id
        if not action.barrier.options.is_unaligned:
            assert action.channels == ()
            return
        assert action.channels == tuple(c for c in range(self.n) if c not in self.ended)
        self.capture, self.capturing = checkpoint_id, set(action.channels)
        barrier_seq = self.barrier_seq.get(checkpoint_id, {})
        persisted = self.persisted.setdefault(checkpoint_id, {})
        for channel in action.channels:  # the queued records before the channel's barrier
            before = barrier_seq.get(channel, self.next_seq[channel] + 1)
            persisted[channel] = {
                i.record for i in self.queues[channel] if i.record is not None and i.seq < before
            }

    def check_exactly_once(self, checkpoint_id: int) -> None:
        """Per channel: processed before the snapshot + persisted + after the barrier = all."""
        snapshot = self.snapshot[checkpoint_id]
        persisted = self.persisted.get(checkpoint_id, {})
        in_flight: set[int] = set()
        for channel in range(self.n):
            seqs = self.sent[channel]
            barrier_seq = self.barrier_seq.get(checkpoint_id, {}).get(channel)
            if barrier_seq is None:
                assert channel in self.ended, f"channel {channel} sent no barrier {checkpoint_id}"
                barrier_seq = self.next_seq[channel] + 1
            before = {r for r, s in seqs.items() if s < barrier_seq}
            done = snapshot & seqs.keys()
            state = persisted.get(channel, set())
            assert not done & state, f"records both processed and persisted: {done & state}"
            assert done | state == before, f"channel {channel}: {done}+{state} != {before}"
            if before - done:
                in_flight.add(channel)
        assert {c for c, records in persisted.items() if records} == in_flight
        if not self.triggered[checkpoint_id].options.is_unaligned:
            assert not in_flight, "an aligned checkpoint with in-flight data"

    # -- rules -----------------------------------------------------------------------------------

    @precondition(lambda self: self.sending())
    @rule(counts=st.lists(st.integers(0, 3), min_size=4, max_size=4))
    def records_arrive(self, counts: list[int]) -> None:
        for channel in self.sending():
            for _ in range(counts[channel]):
                record, self.next_record = self.next_record, self.next_record + 1
                seq = self.seq(channel)
                self.sent[channel][record] = seq
                self.enqueue(channel, Item(seq, record=record))
                if channel in self.capturing:  # the task persists it as channel state
                    assert self.capture is not None
                    assert channel not in self.barrier_seq.get(self.capture, {})
                    self.persisted[self.capture][channel].add(record)

    @precondition(lambda self: any(self.queues))
    @rule(pick=PICK, ms=st.sampled_from([0, 0, 20]))
    def task_takes_an_element(self, pick: int, ms: int) -> None:
        self.now += ms  # processing takes time
        channels = [c for c in range(self.n) if self.queues[c]]
        self.take_head(channels[pick % len(channels)])

    @precondition(lambda self: self.sending())
    @rule(pick=PICK, how=ID_CHOICES, kind=KINDS, switched=st.booleans())
    def barrier_arrives(self, pick: int, how: str, kind: str, switched: bool) -> None:
        channels = self.sending()
        channel = channels[pick % len(channels)]
        b = self.checkpoint(self.next_id(channel, how), kind)
        if switched and b.options.is_timeoutable:  # the upstream's output timer fired (§1.9)
            b = b.as_unaligned()
        self.send_barrier(channel, b)

    @precondition(lambda self: self.sending())
    @rule(pick=PICK, savepoint=st.booleans())
    def an_aligned_checkpoint_starts_aligning(self, pick: int, savepoint: bool) -> None:
        """A new aligned checkpoint, whose first barrier the task takes at once."""
        channels = self.sending()
        channel = channels[pick % len(channels)]
        self.max_id += 1
        self.last_id[channel] = self.max_id
        kind = "savepoint" if savepoint else "timeoutable"
        self.send_barrier(channel, self.checkpoint(self.max_id, kind))
        while self.queues[channel][0].barrier is None:
            self.take_head(channel)
        self.take_head(channel)

    @precondition(lambda self: self.sending())
    @rule(pick=PICK, how=ID_CHOICES)
    def cancel_marker_arrives(self, pick: int, how: str) -> None:
        channels = self.sending()
        channel = channels[pick % len(channels)]
        checkpoint_id = self.next_id(channel, how)
        self.enqueue(channel, Item(self.seq(channel), cancel=checkpoint_id))

    @precondition(lambda self: self.sending())
    @rule(pick=PICK, really=st.integers(0, 2))
    def end_of_partition_arrives(self, pick: int, really: int) -> None:
        if really:
            return
        channels = self.sending()
        channel = channels[pick % len(channels)]
        self.up_finished.add(channel)
        self.enqueue(channel, Item(self.seq(channel)))

    @rule(ms=st.sampled_from([5, 20, 60]), punctual=st.booleans())
    def time_passes(self, ms: int, punctual: bool) -> None:
        """The clock advances; a punctual mailbox runs the timers that came due at once."""
        self.now += ms
        while punctual and any(due <= self.now for due, _ in self.timers):
            self.alignment_timer_fires()

    def aligning(self) -> bool:
        """Some but not all barriers of an aligned checkpoint are in."""
        return self.model.pending and self.model.mode == ALIGNING and self.model.barrier_in

    @precondition(
        lambda self: self.aligning() and any(c == self.model.current for _, c in self.timers)
    )
    @rule()
    def alignment_stalls_until_its_timer_fires(self) -> None:
        (due,) = [due for due, c in self.timers if c == self.model.current]
        self.now = max(self.now, due)
        self.time_passes(0, punctual=True)

    def late_channels(self) -> list[int]:
        """Channels that queued, or can still send, the barrier of the aligning checkpoint."""
        if not self.aligning():
            return []
        current = self.model.current
        return [
            c
            for c in range(self.n)
            if any(i.barrier and i.barrier.checkpoint_id == current for i in self.queues[c])
            or (c in self.sending() and self.last_id[c] < current)
        ]

    @precondition(lambda self: self.late_channels())
    @rule(pick=PICK)
    def a_barrier_is_taken_late(self, pick: int) -> None:
        """The task is slow: the timeout passes (its timer not run yet) before a barrier."""
        channels = self.late_channels()
        channel = channels[pick % len(channels)]
        b = self.checkpoints[self.model.current]
        if self.last_id[channel] < b.checkpoint_id:
            self.last_id[channel] = b.checkpoint_id
            self.send_barrier(channel, b)
        self.now = max(self.now, b.timestamp + TIMEOUT + 1)
        while self.queues[channel][0].barrier is None:
            self.take_head(channel)
        self.take_head(channel)

    @precondition(lambda self: any(due <= self.now for due, _ in self.timers))
    @rule()
    def alignment_timer_fires(self) -> None:
        timer = min(self.timers)
        self.timers.remove(timer)
        actions = self.handler.on_alignment_timeout(timer[1], self.now)
        self.execute(actions, self.model.timeout(timer[1]))

    @rule(kind=KINDS, really=st.integers(0, 5))
    def a_fresh_checkpoint_completes(self, kind: str, really: int) -> None:
        """Liveness: a new checkpoint whose barrier reaches every open channel completes, with
        whatever data is in flight; the task takes queued elements when no upstream can send."""
        if really:
            return
        open_channels = set(range(self.n)) - self.up_finished
        self.max_id += 1
        b = self.checkpoint(self.max_id, kind)
        sent: set[int] = set()
        while sent != open_channels:
            ready = sorted(open_channels - sent - self.up_blocked)
            if not ready:
                busy = [c for c in range(self.n) if self.queues[c]]
                assert busy, f"deadlock: every open channel is blocked in {self.handler!r}"
                self.take_head(busy[0])
                continue
            self.last_id[ready[0]] = b.checkpoint_id
            self.send_barrier(ready[0], b)
            sent.add(ready[0])
        self.drain()
        assert not open_channels or b.checkpoint_id in self.completed
        assert not self.up_blocked

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def handler_knows_exactly_the_blocked_channels(self) -> None:
        if hasattr(self, "handler"):
            processed_barrier = {
                c for c in self.up_blocked if all(i.barrier is None for i in self.queues[c])
            }
            assert self.handler.blocked_channels == processed_barrier
            open_channels = set(range(self.n)) - self.ended
            assert not open_channels or not open_channels <= self.handler.blocked_channels

    @invariant()
    def handler_matches_the_model(self) -> None:
        if hasattr(self, "handler"):
            handler, model = self.handler, self.model
            assert handler.pending_checkpoint_id == (model.current if model.pending else None)
            assert handler.capturing_channels == self.capturing == model.capturing
            modes = {
                AlternatingWaitingForFirstBarrier: ALIGNING,
                AlternatingCollectingBarriers: ALIGNING,
                AlternatingWaitingForFirstBarrierUnaligned: WAITING_UNALIGNED,
                AlternatingCollectingBarriersUnaligned: UNALIGNED,
            }
            assert modes[type(handler.state)] == model.mode
            channels = handler.state.channel_state
            assert dict(channels.announced) == model.announced
            if isinstance(handler.state, AlternatingCollectingBarriersUnaligned):
                assert not channels.announced
            else:
                assert not self.capturing
            if isinstance(
                handler.state,
                AlternatingWaitingForFirstBarrier | AlternatingWaitingForFirstBarrierUnaligned,
            ):
                assert not channels.blocked


AlternatingBarrierHandling.TestCase.settings = settings(
    max_examples=250, stateful_step_count=60, deadline=None, derandomize=True
)
test_alternating_barrier_handling = AlternatingBarrierHandling.TestCase
