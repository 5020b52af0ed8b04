"""The task-side wait of a FLIP-147 trigger until its inputs ended, against a reference model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from undertow.runtime.checkpoint.barrier import CheckpointBarrier, CheckpointOptions
from undertow.runtime.checkpoint.deferred_trigger import (
    DeclineSubsumedTrigger,
    DeferredTrigger,
    PerformTriggered,
)


def barrier(checkpoint_id: int) -> CheckpointBarrier:
    return CheckpointBarrier(checkpoint_id, 0, CheckpointOptions())


def test_a_trigger_with_ended_inputs_performs_at_once() -> None:
    trigger = DeferredTrigger()
    assert trigger.on_trigger(barrier(3), inputs_ended=True) == [PerformTriggered(barrier(3))]
    assert trigger.waiting is None


def test_a_waiting_trigger_performs_when_the_inputs_end_and_only_once() -> None:
    trigger = DeferredTrigger()
    assert trigger.on_trigger(barrier(3), inputs_ended=False) == []
    assert trigger.on_inputs_ended() == [PerformTriggered(barrier(3))]
    assert trigger.on_inputs_ended() == []


def test_a_newer_trigger_declines_the_waiting_one_as_subsumed() -> None:
    trigger = DeferredTrigger()
    trigger.on_trigger(barrier(3), inputs_ended=False)
    assert trigger.on_trigger(barrier(5), inputs_ended=False) == [
        DeclineSubsumedTrigger(barrier(3), 5)
    ]
    assert trigger.on_inputs_ended() == [PerformTriggered(barrier(5))]


def test_an_aborted_waiting_trigger_never_performs() -> None:
    trigger = DeferredTrigger()
    trigger.on_trigger(barrier(3), inputs_ended=False)
    trigger.on_aborted(4)
    assert trigger.waiting == barrier(3)
    trigger.on_aborted(3)
    assert trigger.on_inputs_ended() == []


#: (kind, ended): the JobMaster triggers checkpoints 1, 2, 3, ... in order
EVENTS = st.lists(
    st.tuples(st.sampled_from(["trigger", "ended", "abort-waiting"]), st.booleans()),
    max_size=40,
)


@given(EVENTS)
def test_triggers_perform_once_in_order_and_never_after_being_declined_or_aborted(
    events: list[tuple[str, bool]],
) -> None:
    trigger = DeferredTrigger()
    next_id = 1
    performed: list[int] = []
    declined: set[int] = set()
    aborted: set[int] = set()
    for kind, ended in events:
        decisions = []
        if kind == "trigger":
            decisions = trigger.on_trigger(barrier(next_id), inputs_ended=ended)
            next_id += 1
        elif kind == "ended":
            decisions = trigger.on_inputs_ended()
        elif kind == "abort-waiting" and trigger.waiting is not None:
            aborted.add(trigger.waiting.checkpoint_id)
            trigger.on_aborted(trigger.waiting.checkpoint_id)
        for decision in decisions:
            if isinstance(decision, PerformTriggered):
                performed.append(decision.barrier.checkpoint_id)
            else:
                assert decision.older.checkpoint_id < decision.newer_id
                declined.add(decision.older.checkpoint_id)
    assert performed == sorted(set(performed)), "performed twice or out of order"
    assert not set(performed) & (declined | aborted)
