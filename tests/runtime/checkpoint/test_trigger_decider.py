"""Trigger decisions: priorities, max concurrent, min pause, queue limits (reference §5.2)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.trigger_decider import (
    CheckpointTriggerRequest as Request,
)
from undertow.runtime.checkpoint.trigger_decider import (
    Skip,
    SkipReason,
    TriggerNow,
    TriggerState,
    WaitUntil,
    decide,
    enqueue,
    remove,
)

MIN_PAUSE = CheckpointFailureReason.MINIMUM_TIME_BETWEEN_CHECKPOINTS


def state(
    queue: Sequence[Request],
    *,
    min_pause_ms: int = 0,
    max_concurrent: int = 1,
    num_pending: int = 0,
    last_completion_ms: int | None = None,
    is_triggering: bool = False,
    num_cleaning: int = 0,
) -> TriggerState:
    return TriggerState(
        min_pause_ms, max_concurrent, num_pending, last_completion_ms, is_triggering,
        tuple(queue), num_cleaning,
    )  # fmt: skip


def test_nothing_queued_or_trigger_in_progress() -> None:
    assert decide(0, state([])) == Skip(SkipReason.NO_QUEUED_REQUEST)
    periodic = Request.periodic(1, 0)
    assert decide(0, state([periodic], is_triggering=True)) == Skip(SkipReason.TRIGGER_IN_PROGRESS)
    assert decide(0, state([periodic], num_cleaning=2)) == Skip(
        SkipReason.TOO_MANY_CLEANING_CHECKPOINTS
    )
    assert decide(0, state([periodic])) == TriggerNow(periodic)


def test_savepoints_run_before_forced_before_manual_before_periodic() -> None:
    periodic = Request.periodic(1, 0)
    manual = Request.manual(2, 5)
    forced = Request.manual(3, 9, forced=True)
    savepoint = Request.savepoint(4, 10, forced=False)
    queue = [periodic, manual, forced, savepoint]
    assert decide(20, state(queue)) == TriggerNow(savepoint)
    assert decide(20, state(queue[:3])) == TriggerNow(forced)
    assert decide(20, state(queue[:2])) == TriggerNow(manual)
    older = Request.manual(5, 1)
    assert decide(20, state([manual, older])) == TriggerNow(older)


def test_max_concurrent_lets_only_forced_requests_through() -> None:
    periodic = Request.periodic(1, 0)
    savepoint = Request.savepoint(2, 0)  # forced by default, as in Flink without UC
    assert decide(0, state([periodic], num_pending=1)) == Skip(
        SkipReason.TOO_MANY_CONCURRENT_CHECKPOINTS
    )
    assert decide(0, state([periodic, savepoint], num_pending=1)) == TriggerNow(savepoint)
    assert decide(0, state([periodic], num_pending=1, max_concurrent=2)) == TriggerNow(periodic)


def test_min_pause_holds_back_periodic_requests_only() -> None:
    periodic = Request.periodic(1, 0)
    assert decide(1_100, state([periodic], min_pause_ms=500, last_completion_ms=1_000)) == (
        WaitUntil(1_500, MIN_PAUSE)
    )
    assert decide(1_500, state([periodic], min_pause_ms=500, last_completion_ms=1_000)) == (
        TriggerNow(periodic)
    )
    assert decide(0, state([periodic], min_pause_ms=500)) == TriggerNow(periodic)  # none completed
    manual = Request.manual(2, 0)
    assert decide(1_100, state([periodic, manual], min_pause_ms=500, last_completion_ms=1_000)) == (
        TriggerNow(manual)
    )
    forced = Request(3, 0, is_periodic=True, is_forced=True)
    assert decide(1_100, state([forced], min_pause_ms=500, last_completion_ms=1_000)) == (
        TriggerNow(forced)
    )


def test_enqueue_orders_and_coalesces_periodic_requests() -> None:
    first = enqueue((), Request.periodic(1, 0))
    assert first.queue == (Request.periodic(1, 0),) and not first.coalesced
    second = enqueue(first.queue, Request.periodic(2, 10))
    assert second.coalesced and second.queue == first.queue and second.rejected == ()
    third = enqueue(second.queue, Request.savepoint(3, 20))
    assert third.queue == (Request.savepoint(3, 20), Request.periodic(1, 0))
    assert remove(third.queue, Request.savepoint(3, 20)) == (Request.periodic(1, 0),)


def test_full_queue_drops_the_lowest_priority_request() -> None:
    queue = enqueue((), Request.periodic(1, 0)).queue
    queue = enqueue(queue, Request.manual(2, 1), max_queued=2).queue
    result = enqueue(queue, Request.savepoint(3, 2), max_queued=2)
    assert result.queue == (Request.savepoint(3, 2), Request.manual(2, 1))
    assert result.rejected == (Request.periodic(1, 0),)
    # only non-periodic requests queued: the new one is rejected
    again = enqueue(result.queue, Request.savepoint(4, 3), max_queued=2)
    assert again.queue == result.queue and again.rejected == (Request.savepoint(4, 3),)


def test_a_savepoint_is_never_periodic() -> None:
    with pytest.raises(ValueError, match="never periodic"):
        Request(1, 0, is_savepoint=True, is_periodic=True)


def test_enqueue_needs_room() -> None:
    with pytest.raises(ValueError, match="max_queued"):
        enqueue((), Request.periodic(1, 0), max_queued=0)


kinds = st.sampled_from(
    [  # (is_savepoint, is_periodic, is_forced); savepoints are never periodic
        (True, False, True),
        (True, False, False),
        (False, True, False),
        (False, True, True),
        (False, False, False),
        (False, False, True),
    ]
)
requests = st.builds(
    lambda request_id, timestamp, kind: Request(request_id, timestamp, *kind),
    st.integers(0, 10_000),
    st.integers(0, 1_000),
    kinds,
)
trigger_states = st.builds(
    TriggerState,
    min_pause_ms=st.integers(0, 500),
    max_concurrent=st.integers(1, 3),
    num_pending=st.integers(0, 4),
    last_completion_ms=st.none() | st.integers(0, 1_000),
    is_triggering=st.sampled_from([False, False, False, True]),
    queue=st.one_of(
        st.lists(requests, max_size=6, unique_by=lambda r: r.request_id),
        st.builds(lambda t: [Request.periodic(0, t)], st.integers(0, 1_000)),  # min pause cases
    ).map(tuple),
    num_cleaning=st.sampled_from([0, 0, 0, 1, 2, 4]),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(0, 1_500), trigger_states)
def test_decisions_respect_the_gates(now: int, facts: TriggerState) -> None:
    decision = decide(now, facts)
    if isinstance(decision, TriggerNow):
        request = decision.request
        assert not facts.is_triggering and facts.num_cleaning <= facts.max_concurrent
        assert request in facts.queue
        assert request.priority == min(r.priority for r in facts.queue)
        if any(r.is_savepoint for r in facts.queue):
            assert request.is_savepoint
        if not request.is_forced:
            assert facts.num_pending < facts.max_concurrent
        if request.is_periodic and not request.is_forced and facts.last_completion_ms is not None:
            assert now >= facts.last_completion_ms + facts.min_pause_ms
    elif isinstance(decision, WaitUntil):
        assert decision.time_ms > now
        assert all(r.is_periodic and not r.is_forced for r in facts.queue)
    else:
        assert (
            facts.is_triggering
            or not facts.queue
            or facts.num_cleaning > facts.max_concurrent
            or (facts.num_pending >= facts.max_concurrent)
        )


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(requests, max_size=30, unique_by=lambda r: r.request_id), st.integers(1, 5))
def test_enqueue_keeps_the_queue_bounded_and_ordered(
    arrivals: list[Request], max_queued: int
) -> None:
    queue: tuple[Request, ...] = ()
    for request in arrivals:
        result = enqueue(queue, request, max_queued)
        queue = result.queue
        assert len(queue) <= max_queued
        assert list(queue) == sorted(queue, key=lambda r: r.priority)
        assert sum(r.is_periodic for r in queue) <= 1
        assert len(result.rejected) <= 1
        assert (request in queue) + (request in result.rejected) + result.coalesced == 1
