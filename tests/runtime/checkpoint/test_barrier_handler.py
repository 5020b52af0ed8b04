"""Barrier handler (aligned, exactly once) and barrier tracker (at least once).

Unit tests per rule of reference §1.3-1.5, then a Hypothesis state machine that drives the
handler with a model of the network (a channel that delivered an aligned barrier delivers
nothing until it is resumed) and compares every action list with a flat reference model.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from tests.runtime.checkpoint.barrier_ids import next_checkpoint_id

from undertow.runtime.checkpoint.barrier import (
    AlignmentType,
    CancelCheckpointMarker,
    CheckpointBarrier,
    CheckpointOptions,
    SnapshotType,
)
from undertow.runtime.checkpoint.barrier_actions import BarrierHandling
from undertow.runtime.checkpoint.barrier_handler import (
    MAX_CHECKPOINTS_TO_TRACK,
    AbortCheckpoint,
    Action,
    BarrierHandler,
    BarrierProtocolViolation,
    CollectingBarriers,
    ResumeChannels,
    TriggerCheckpoint,
    WaitingForFirstBarrier,
)
from undertow.runtime.checkpoint.barrier_tracker import BarrierTracker
from undertow.runtime.checkpoint.failure import CheckpointFailureReason

SUBSUMED = CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
ON_CANCEL = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER


def barrier(
    checkpoint_id: int, alignment: AlignmentType = AlignmentType.ALIGNED
) -> CheckpointBarrier:
    """The one barrier of a checkpoint id (every channel sees the same one)."""
    snapshot = SnapshotType.SAVEPOINT if checkpoint_id % 5 == 0 else SnapshotType.CHECKPOINT
    return CheckpointBarrier(
        checkpoint_id, 1_000 + checkpoint_id, CheckpointOptions(snapshot, alignment)
    )


def cancel(checkpoint_id: int) -> CancelCheckpointMarker:
    return CancelCheckpointMarker(checkpoint_id)


# -- BarrierHandler: unit tests -------------------------------------------------------------------


def test_single_channel_triggers_then_resumes() -> None:
    handler = BarrierHandler(1, "map (1/1)")
    assert handler.on_barrier(0, barrier(1)) == [
        TriggerCheckpoint(barrier(1)),
        ResumeChannels((0,)),
    ]
    assert handler.pending_checkpoint_id is None
    assert handler.last_completed_or_cancelled == 1
    assert isinstance(handler.state, WaitingForFirstBarrier)


def test_aligned_checkpoint_triggers_on_the_last_barrier() -> None:
    handler = BarrierHandler(3, "map (1/2)")
    assert handler.on_barrier(2, barrier(1)) == []
    assert handler.on_barrier(0, barrier(1)) == []
    assert isinstance(handler.state, CollectingBarriers)
    assert handler.pending_checkpoint_id == 1
    assert handler.blocked_channels == {0, 2}
    assert handler.aligned_channels == {0, 2}
    assert handler.target_channel_count == 3
    actions = handler.on_barrier(1, barrier(1))
    assert actions == [TriggerCheckpoint(barrier(1)), ResumeChannels((0, 1, 2))]
    assert handler.blocked_channels == frozenset()
    assert handler.pending_checkpoint_id is None


def test_savepoint_barriers_align_like_checkpoints() -> None:
    handler = BarrierHandler(2, "t")
    handler.on_barrier(0, barrier(5))
    assert handler.on_barrier(1, barrier(5)) == [
        TriggerCheckpoint(barrier(5)),
        ResumeChannels((0, 1)),
    ]


def test_newer_barrier_subsumes_the_pending_checkpoint() -> None:
    handler = BarrierHandler(3, "t")
    handler.on_barrier(0, barrier(1))
    handler.on_barrier(2, barrier(1))
    assert handler.on_barrier(1, barrier(2)) == [
        ResumeChannels((0, 2)),
        AbortCheckpoint(1, SUBSUMED),
    ]
    assert handler.pending_checkpoint_id == 2
    assert handler.blocked_channels == {1}


def test_obsolete_barrier_is_dropped_and_its_channel_resumed_at_once() -> None:
    handler = BarrierHandler(3, "t")
    handler.on_barrier(0, barrier(1))
    handler.on_barrier(1, barrier(2))  # subsumes 1; channel 0 resumed
    assert handler.on_barrier(2, barrier(1)) == [ResumeChannels((2,))]
    assert handler.pending_checkpoint_id == 2
    assert handler.blocked_channels == {1}  # still collecting 2


def test_barrier_of_a_completed_or_cancelled_id_is_obsolete() -> None:
    handler = BarrierHandler(2, "t")
    assert handler.on_cancel_marker(0, cancel(3)) == [AbortCheckpoint(3, ON_CANCEL)]
    assert handler.on_barrier(1, barrier(3)) == [ResumeChannels((1,))]
    assert handler.pending_checkpoint_id is None


def test_unaligned_obsolete_barrier_needs_no_resume() -> None:
    handler = BarrierHandler(2, "t")
    handler.on_cancel_marker(0, cancel(3))
    assert handler.on_barrier(1, barrier(2, AlignmentType.UNALIGNED)) == []


def test_cancel_marker_of_the_pending_checkpoint_aborts_and_resumes() -> None:
    handler = BarrierHandler(3, "t")
    handler.on_barrier(0, barrier(4))
    assert handler.on_cancel_marker(1, cancel(4)) == [
        ResumeChannels((0,)),
        AbortCheckpoint(4, ON_CANCEL),
    ]
    assert handler.on_cancel_marker(2, cancel(4)) == []  # already aborted
    assert handler.on_barrier(2, barrier(4)) == [ResumeChannels((2,))]


def test_newer_cancel_marker_declines_it_and_aborts_the_pending_one() -> None:
    handler = BarrierHandler(2, "t")
    handler.on_barrier(0, barrier(1))
    assert handler.on_cancel_marker(1, cancel(2)) == [
        ResumeChannels((0,)),
        AbortCheckpoint(1, SUBSUMED),
        AbortCheckpoint(2, ON_CANCEL),
    ]
    assert handler.current_checkpoint_id == 2
    assert handler.pending_checkpoint_id is None


def test_old_cancel_markers_are_ignored() -> None:
    handler = BarrierHandler(2, "t")
    handler.on_barrier(0, barrier(1))
    handler.on_barrier(1, barrier(1))
    assert handler.on_cancel_marker(0, cancel(1)) == []  # completed
    handler.on_barrier(0, barrier(3))
    assert handler.on_cancel_marker(1, cancel(2)) == []  # older than the pending one
    assert handler.pending_checkpoint_id == 3


def test_end_of_partition_counts_as_the_barrier_of_the_pending_checkpoint() -> None:
    handler = BarrierHandler(3, "t")
    handler.on_barrier(0, barrier(1))
    handler.on_barrier(1, barrier(1))
    assert handler.on_end_of_partition(2) == [TriggerCheckpoint(barrier(1)), ResumeChannels((0, 1))]
    assert handler.num_open_channels == 2
    handler.on_barrier(0, barrier(2))
    assert handler.target_channel_count == 2
    assert handler.on_barrier(1, barrier(2)) == [
        TriggerCheckpoint(barrier(2)),
        ResumeChannels((0, 1)),
    ]


def test_end_of_partition_without_pending_checkpoint_only_closes_the_channel() -> None:
    handler = BarrierHandler(2, "t")
    assert handler.on_end_of_partition(1) == []
    assert handler.on_barrier(0, barrier(1)) == [
        TriggerCheckpoint(barrier(1)),
        ResumeChannels((0,)),
    ]


def test_end_of_partition_before_the_last_barrier_keeps_collecting() -> None:
    handler = BarrierHandler(3, "t")
    handler.on_barrier(0, barrier(1))
    assert handler.on_end_of_partition(1) == []
    assert handler.aligned_channels == {0, 1}
    assert handler.on_barrier(2, barrier(1)) == [
        TriggerCheckpoint(barrier(1)),
        ResumeChannels((0, 2)),
    ]


@pytest.mark.parametrize(
    ("setup", "event", "match"),
    [
        (lambda h: None, lambda h: h.on_barrier(3, barrier(1)), "does not exist"),
        (
            lambda h: h.on_end_of_partition(0),
            lambda h: h.on_barrier(0, barrier(1)),
            "end of partition",
        ),
        (
            lambda h: h.on_end_of_partition(0),
            lambda h: h.on_end_of_partition(0),
            "end of partition",
        ),
        (lambda h: h.on_barrier(0, barrier(1)), lambda h: h.on_barrier(0, barrier(1)), "blocked"),
        (
            lambda h: h.on_barrier(0, barrier(1)),
            lambda h: h.on_cancel_marker(0, cancel(2)),
            "blocked",
        ),
        (
            lambda h: None,
            lambda h: h.on_barrier(0, barrier(1, AlignmentType.UNALIGNED)),
            "UNALIGNED",
        ),
    ],
)
def test_events_the_network_rules_out_are_violations(
    setup: Callable[[BarrierHandler], object], event: Callable[[BarrierHandler], object], match: str
) -> None:
    handler = BarrierHandler(3, "sink (2/4)")
    setup(handler)
    with pytest.raises(BarrierProtocolViolation, match=match):
        event(handler)


def test_a_task_without_inputs_gets_no_events() -> None:
    handler = BarrierHandler(0, "source (1/1)")  # sources are triggered by the coordinator
    assert handler.num_open_channels == 0
    with pytest.raises(BarrierProtocolViolation, match="does not exist"):
        handler.on_barrier(0, barrier(1))
    with pytest.raises(ValueError, match="negative"):
        BarrierHandler(-1, "t")


def test_repr_names_task_and_state() -> None:
    handler = BarrierHandler(2, "map (1/2)")
    handler.on_barrier(0, barrier(1))
    assert repr(handler) == (
        "BarrierHandler('map (1/2)', CollectingBarriers, pending=1, aligned=[0]/2, open=2)"
    )


def test_aligned_handler_ignores_announcements_and_rejects_timeouts() -> None:
    handler = BarrierHandler(2, "t")
    timeoutable = CheckpointBarrier(1, 1_000, CheckpointOptions(aligned_checkpoint_timeout=50))
    assert handler.on_announcement(0, timeoutable, 3, now_ms=1_000) == []  # and no timer
    assert handler.pending_checkpoint_id == 1
    with pytest.raises(BarrierProtocolViolation, match="aligned-only"):
        handler.on_alignment_timeout(1, 2_000)


def test_barrier_without_network_blocking_is_neither_blocked_nor_resumed() -> None:
    handler = BarrierHandler(2, "t")
    assert handler.on_barrier(0, barrier(1), mark_blocked=False) == []
    assert handler.blocked_channels == frozenset()
    assert handler.on_barrier(1, barrier(1)) == [
        TriggerCheckpoint(barrier(1)),
        ResumeChannels((1,)),
    ]
    assert handler.on_barrier(0, barrier(1), mark_blocked=False) == []  # obsolete, not blocked


# -- BarrierHandler: a state machine against a reference model ------------------------------------


class ReferenceModel:
    """The rules of reference §1.4 written flat, as an oracle for the action lists."""

    def __init__(self, num_channels: int) -> None:
        self.open = set(range(num_channels))
        self.current = -1
        self.done = -1
        self.aligned: set[int] = set()
        self.blocked: set[int] = set()
        self.target = 0
        self.first_barrier: CheckpointBarrier | None = None

    @property
    def pending(self) -> bool:
        return self.current != self.done

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> list[Action]:
        actions: list[Action] = (
            [ResumeChannels(tuple(sorted(self.blocked)))] if self.blocked else []
        )
        self.blocked.clear()
        self.aligned.clear()
        self.current = max(self.current, checkpoint_id)
        self.done = max(self.done, checkpoint_id)
        return [*actions, AbortCheckpoint(checkpoint_id, reason)]

    def _aligned(self, channel: int, trigger_with: CheckpointBarrier) -> list[Action]:
        self.aligned.add(channel)
        if len(self.aligned) < self.target:
            return []
        actions: list[Action] = [TriggerCheckpoint(trigger_with)]
        if self.blocked:
            actions.append(ResumeChannels(tuple(sorted(self.blocked))))
        self.blocked.clear()
        self.aligned.clear()
        self.done = self.current
        return actions

    def barrier(self, channel: int, b: CheckpointBarrier) -> list[Action]:
        if b.checkpoint_id < self.current or (b.checkpoint_id == self.current and not self.pending):
            return [ResumeChannels((channel,))]
        actions: list[Action] = []
        if b.checkpoint_id > self.current:
            if self.pending:
                actions += self._abort(self.current, SUBSUMED)
            self.current = b.checkpoint_id
            self.target = len(self.open)
            self.first_barrier = b
        self.blocked.add(channel)
        return actions + self._aligned(channel, b)

    def cancel(self, m: CancelCheckpointMarker) -> list[Action]:
        if m.checkpoint_id > self.current:
            actions = self._abort(self.current, SUBSUMED) if self.pending else []
            return actions + self._abort(m.checkpoint_id, ON_CANCEL)
        if m.checkpoint_id == self.current and self.pending:
            return self._abort(m.checkpoint_id, ON_CANCEL)
        return []

    def end_of_partition(self, channel: int) -> list[Action]:
        self.open.discard(channel)
        if not self.pending:
            return []
        assert self.first_barrier is not None
        return self._aligned(channel, self.first_barrier)


ID_CHOICES = st.sampled_from(["current", "next", "lagging", "skip"])


class AlignedBarrierHandling(RuleBasedStateMachine):
    """Upstreams send barriers and cancel markers in id order per channel, ids jump and lag."""

    @initialize(num_channels=st.integers(1, 4))
    def start(self, num_channels: int) -> None:
        self.n = num_channels
        self.handler = BarrierHandler(num_channels, "model (1/1)")
        self.model = ReferenceModel(num_channels)
        self.net_blocked: set[int] = set()  # upstreams stopped after an aligned barrier
        self.finished: set[int] = set()
        self.last_id = [0] * num_channels  # ids strictly increase per channel
        self.max_id = 0
        self.triggered: list[int] = []
        self.aborted: set[int] = set()
        self.delivered: dict[int, set[int]] = {}  # checkpoint id -> channels that sent its barrier
        self.expected: dict[int, set[int]] = {}  # checkpoint id -> channels open at its start

    # -- helpers ---------------------------------------------------------------------------------

    def deliverable(self) -> list[int]:
        return [c for c in range(self.n) if c not in self.finished and c not in self.net_blocked]

    def next_id(self, channel: int, how: str) -> int:
        checkpoint_id = next_checkpoint_id(self.last_id[channel], self.max_id, how)
        self.last_id[channel] = checkpoint_id
        self.max_id = max(self.max_id, checkpoint_id)
        return checkpoint_id

    def execute(self, actions: list[Action], expected: list[Action]) -> None:
        assert actions == expected, f"{self.handler!r}: got {actions}, model says {expected}"
        for action in actions:
            if isinstance(action, ResumeChannels):
                assert action.channels == tuple(sorted(set(action.channels)))
                for channel in action.channels:
                    assert channel in self.net_blocked, f"channel {channel} resumed twice"
                    self.net_blocked.remove(channel)
            elif isinstance(action, TriggerCheckpoint):
                checkpoint_id = action.barrier.checkpoint_id
                assert checkpoint_id not in self.triggered, "triggered twice"
                assert checkpoint_id not in self.aborted, "an aborted checkpoint triggered"
                missing = (
                    self.expected[checkpoint_id] - self.delivered[checkpoint_id] - self.finished
                )
                assert not missing, f"triggered {checkpoint_id} without barriers of {missing}"
                assert not self.triggered or checkpoint_id > self.triggered[-1]
                self.triggered.append(checkpoint_id)
            else:
                assert action.checkpoint_id not in self.triggered, "a triggered checkpoint aborted"
                self.aborted.add(action.checkpoint_id)

    def send_barrier(self, channel: int, checkpoint_id: int) -> None:
        pending_before = self.handler.pending_checkpoint_id
        if checkpoint_id > self.handler.current_checkpoint_id:
            self.expected[checkpoint_id] = set(range(self.n)) - self.finished
        self.delivered.setdefault(checkpoint_id, set()).add(channel)
        b = barrier(checkpoint_id)
        expected = self.model.barrier(channel, b)
        self.net_blocked.add(channel)  # the upstream blocked itself when it sent the barrier
        actions = self.handler.on_barrier(channel, b)
        if any(isinstance(a, ResumeChannels) for a in actions) and not any(
            isinstance(a, TriggerCheckpoint | AbortCheckpoint) for a in actions
        ):
            # only an obsolete barrier resumes while a checkpoint is still collecting
            assert actions == [ResumeChannels((channel,))]
            assert self.handler.pending_checkpoint_id == pending_before
        self.execute(actions, expected)

    # -- rules -----------------------------------------------------------------------------------

    @precondition(lambda self: self.deliverable())
    @rule(pick=st.integers(0, 3), how=ID_CHOICES)
    def barrier_arrives(self, pick: int, how: str) -> None:
        channels = self.deliverable()
        channel = channels[pick % len(channels)]
        self.send_barrier(channel, self.next_id(channel, how))

    @precondition(lambda self: self.deliverable())
    @rule(pick=st.integers(0, 3), how=ID_CHOICES)
    def cancel_marker_arrives(self, pick: int, how: str) -> None:
        channels = self.deliverable()
        channel = channels[pick % len(channels)]
        marker = cancel(self.next_id(channel, how))
        expected = self.model.cancel(marker)
        self.execute(self.handler.on_cancel_marker(channel, marker), expected)

    @precondition(lambda self: self.deliverable())
    @rule(pick=st.integers(0, 3))
    def end_of_partition_arrives(self, pick: int) -> None:
        channels = self.deliverable()
        channel = channels[pick % len(channels)]
        self.finished.add(channel)
        expected = self.model.end_of_partition(channel)
        self.execute(self.handler.on_end_of_partition(channel), expected)

    @rule()
    def a_fresh_checkpoint_completes(self) -> None:
        """Liveness: a new checkpoint whose barriers reach every open channel completes."""
        open_channels = set(range(self.n)) - self.finished
        if not open_channels:
            return
        checkpoint_id = self.max_id + 1
        self.max_id = checkpoint_id
        sent: set[int] = set()
        while sent != open_channels:
            ready = sorted(open_channels - sent - self.net_blocked)
            assert ready, f"deadlock: every open channel is blocked in {self.handler!r}"
            self.last_id[ready[0]] = checkpoint_id
            self.send_barrier(ready[0], checkpoint_id)
            sent.add(ready[0])
        assert self.triggered[-1] == checkpoint_id
        assert not self.net_blocked

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def handler_knows_exactly_the_blocked_channels(self) -> None:
        if hasattr(self, "handler"):
            assert self.handler.blocked_channels == self.net_blocked

    @invariant()
    def never_every_open_channel_blocked(self) -> None:
        if hasattr(self, "handler"):
            open_channels = set(range(self.n)) - self.finished
            assert not open_channels or not open_channels <= self.net_blocked

    @invariant()
    def pending_matches_the_model(self) -> None:
        if hasattr(self, "handler"):
            model_pending = self.model.current if self.model.pending else None
            assert self.handler.pending_checkpoint_id == model_pending
            assert self.handler.num_open_channels == len(self.model.open)
            assert self.handler.last_completed_or_cancelled <= self.handler.current_checkpoint_id


AlignedBarrierHandling.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None, derandomize=True
)
test_aligned_barrier_handling = AlignedBarrierHandling.TestCase


# -- BarrierTracker -------------------------------------------------------------------------------


def test_tracker_triggers_when_every_channel_delivered_and_never_blocks() -> None:
    tracker = BarrierTracker(2)
    assert tracker.on_barrier(0, barrier(1)) == []
    assert tracker.pending_checkpoint_ids == (1,)
    assert tracker.on_barrier(1, barrier(1)) == [TriggerCheckpoint(barrier(1))]
    assert tracker.pending_checkpoint_ids == ()


def test_tracker_single_channel_triggers_at_once() -> None:
    assert BarrierTracker(1).on_barrier(0, barrier(3)) == [TriggerCheckpoint(barrier(3))]


def test_tracker_newer_completion_aborts_older_ones() -> None:
    tracker = BarrierTracker(2)
    tracker.on_barrier(0, barrier(1))
    tracker.on_barrier(0, barrier(2))
    assert tracker.on_barrier(1, barrier(2)) == [
        AbortCheckpoint(1, SUBSUMED),
        TriggerCheckpoint(barrier(2)),
    ]
    assert tracker.on_barrier(1, barrier(1)) == []  # too old to complete


def test_tracker_cancel_marker_aborts_once_and_counts_as_that_channel() -> None:
    tracker = BarrierTracker(3)
    tracker.on_barrier(0, barrier(1))
    assert tracker.on_cancel_marker(1, cancel(1)) == [AbortCheckpoint(1, ON_CANCEL)]
    assert tracker.on_barrier(2, barrier(1)) == []  # all in, but aborted
    assert tracker.pending_checkpoint_ids == ()


def test_tracker_cancel_marker_of_a_new_id() -> None:
    tracker = BarrierTracker(2)
    assert tracker.on_cancel_marker(0, cancel(5)) == [AbortCheckpoint(5, ON_CANCEL)]
    assert tracker.latest_pending_checkpoint_id == 5
    assert tracker.on_barrier(1, barrier(4)) == []
    assert tracker.on_barrier(1, barrier(5)) == []
    assert tracker.pending_checkpoint_ids == ()


def test_tracker_cancel_marker_aborts_older_tracked_checkpoints() -> None:
    tracker = BarrierTracker(2)
    tracker.on_barrier(0, barrier(1))
    tracker.on_barrier(0, barrier(2))
    assert tracker.on_cancel_marker(1, cancel(3)) == [
        AbortCheckpoint(1, ON_CANCEL),
        AbortCheckpoint(2, ON_CANCEL),
        AbortCheckpoint(3, ON_CANCEL),
    ]


def test_tracker_end_of_partition_completes_the_newest_waiting_checkpoint() -> None:
    tracker = BarrierTracker(3)
    tracker.on_barrier(0, barrier(1))
    tracker.on_barrier(1, barrier(1))
    tracker.on_barrier(0, barrier(2))
    tracker.on_barrier(1, barrier(2))
    assert tracker.on_end_of_partition(2) == [
        AbortCheckpoint(1, SUBSUMED),
        TriggerCheckpoint(barrier(2)),
    ]
    assert tracker.num_open_channels == 2
    tracker.on_barrier(0, barrier(3))
    assert tracker.on_barrier(1, barrier(3)) == [TriggerCheckpoint(barrier(3))]


def test_tracker_tracks_at_most_50_checkpoints() -> None:
    tracker = BarrierTracker(2)
    for checkpoint_id in range(1, MAX_CHECKPOINTS_TO_TRACK + 1):
        assert tracker.on_barrier(0, barrier(checkpoint_id)) == []
    assert tracker.on_barrier(0, barrier(51)) == [AbortCheckpoint(1, SUBSUMED)]
    assert tracker.pending_checkpoint_ids == tuple(range(2, 52))


def test_tracker_accepts_the_handler_keywords() -> None:
    tracker = BarrierTracker(1)
    assert tracker.on_barrier(0, barrier(1), mark_blocked=False, now_ms=5) == [
        TriggerCheckpoint(barrier(1))
    ]
    assert tracker.on_end_of_partition(0, now_ms=5) == []


def test_tracker_takes_every_call_of_barrier_handling_and_ignores_announcements() -> None:
    """The tracker is a ``BarrierHandling`` too: an announcement and an alignment timeout
    change nothing (at-least-once never aligns), so the barrier itself still triggers."""
    handling: BarrierHandling = BarrierTracker(2)
    assert handling.on_barrier(0, barrier(1), now_ms=5) == []
    assert handling.on_announcement(1, barrier(1), 0, now_ms=5) == []
    assert handling.on_alignment_timeout(1, 5) == []
    assert handling.on_barrier(1, barrier(1), now_ms=6) == [TriggerCheckpoint(barrier(1))]


def test_tracker_rejects_events_on_finished_channels() -> None:
    tracker = BarrierTracker(2, "sink (1/1)")
    tracker.on_end_of_partition(0)
    with pytest.raises(BarrierProtocolViolation, match="sink"):
        tracker.on_barrier(0, barrier(1))


@st.composite
def tracker_events(draw: st.DrawFn) -> tuple[int, list[tuple[str, int, int]]]:
    """(channels, [(kind, channel, id)]) with ids increasing per channel."""
    n = draw(st.integers(1, 4))
    last = [0] * n
    finished: set[int] = set()
    events: list[tuple[str, int, int]] = []
    for _ in range(draw(st.integers(0, 40))):
        open_channels = [c for c in range(n) if c not in finished]
        if not open_channels:
            break
        channel = draw(st.sampled_from(open_channels))
        kind = draw(st.sampled_from(["barrier"] * 6 + ["cancel", "end"]))
        if kind == "end":
            finished.add(channel)
            events.append((kind, channel, 0))
            continue
        newest = max(last)
        if newest > last[channel] and draw(st.booleans()):
            last[channel] = newest  # catch up with the newest checkpoint
        else:
            last[channel] += draw(st.integers(1, 2))  # the next one, or skip one
        events.append((kind, channel, last[channel]))
    return n, events


@settings(max_examples=300, deadline=None, derandomize=True)
@given(tracker_events())
def test_tracker_triggers_each_id_once_after_all_open_channels(
    case: tuple[int, list[tuple[str, int, int]]],
) -> None:
    n, events = case
    tracker = BarrierTracker(n)
    finished: set[int] = set()
    spoke: dict[int, set[int]] = {}  # id -> channels that sent its barrier
    started_with: dict[int, set[int]] = {}  # id -> channels open at its first event
    cancelled: set[int] = set()
    triggered: list[int] = []
    for kind, channel, checkpoint_id in events:
        if kind == "end":
            finished.add(channel)
            actions = tracker.on_end_of_partition(channel)
        else:
            started_with.setdefault(checkpoint_id, set(range(n)) - finished)
            if kind == "cancel":
                cancelled.add(checkpoint_id)
                actions = tracker.on_cancel_marker(channel, cancel(checkpoint_id))
            else:
                spoke.setdefault(checkpoint_id, set()).add(channel)
                actions = tracker.on_barrier(channel, barrier(checkpoint_id))
        for action in actions:
            assert not isinstance(action, ResumeChannels)
            if isinstance(action, TriggerCheckpoint):
                done = action.barrier.checkpoint_id
                assert done not in cancelled
                assert not triggered or done > triggered[-1]
                assert started_with[done] <= spoke[done] | finished
                triggered.append(done)
        assert len(tracker.pending_checkpoint_ids) <= MAX_CHECKPOINTS_TO_TRACK
        assert list(tracker.pending_checkpoint_ids) == sorted(tracker.pending_checkpoint_ids)
