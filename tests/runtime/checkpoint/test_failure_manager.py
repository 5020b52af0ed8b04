"""CheckpointFailureManager: which failures count, and when the job fails (reference §5.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.failure import CheckpointFailureReason as Reason
from undertow.runtime.checkpoint.failure_manager import (
    CheckpointFailureManager,
    FailJob,
    Tolerated,
)


def test_zero_tolerable_fails_on_the_first_counted_failure() -> None:
    manager = CheckpointFailureManager(0)
    decision = manager.on_failure(4, Reason.CHECKPOINT_EXPIRED)
    assert isinstance(decision, FailJob)
    assert decision.reason is Reason.CHECKPOINT_EXPIRED
    assert "checkpoint 4" in decision.message
    assert "CHECKPOINT_EXPIRED" in decision.message
    assert "execution.checkpointing.tolerable-failed-checkpoints=0" in decision.message
    assert manager.continuous_failures == 0  # reset once the job is failed


def test_reasons_that_do_not_count_are_tolerated() -> None:
    manager = CheckpointFailureManager(0)
    for reason in Reason:
        if not reason.counts_as_failure:
            assert manager.on_failure(1, reason) == Tolerated(False, 0)


def test_counting_reasons_are_the_ones_of_the_reference() -> None:
    counted = {r for r in Reason if r.counts_as_failure}
    assert counted == {
        Reason.IO_EXCEPTION,
        Reason.CHECKPOINT_ASYNC_EXCEPTION,
        Reason.CHECKPOINT_DECLINED,
        Reason.CHECKPOINT_EXPIRED,
        Reason.FINALIZE_CHECKPOINT_FAILURE,
    }


def test_each_checkpoint_counts_once() -> None:
    manager = CheckpointFailureManager(1)
    assert manager.on_failure(5, Reason.CHECKPOINT_DECLINED) == Tolerated(True, 1)
    assert manager.on_failure(5, Reason.CHECKPOINT_EXPIRED) == Tolerated(False, 1)
    decision = manager.on_failure(6, Reason.IO_EXCEPTION)
    assert isinstance(decision, FailJob)
    assert "checkpoint 6" in decision.message and "2 consecutive" in decision.message


def test_only_ids_above_the_last_success_count() -> None:
    manager = CheckpointFailureManager(0)
    manager.on_success(10)
    assert manager.on_failure(9, Reason.CHECKPOINT_EXPIRED) == Tolerated(False, 0)
    assert manager.on_failure(10, Reason.CHECKPOINT_EXPIRED) == Tolerated(False, 0)
    assert isinstance(manager.on_failure(11, Reason.CHECKPOINT_EXPIRED), FailJob)


def test_success_resets_only_when_newer() -> None:
    manager = CheckpointFailureManager(2)
    manager.on_success(5)
    manager.on_failure(6, Reason.CHECKPOINT_DECLINED)
    manager.on_failure(7, Reason.CHECKPOINT_DECLINED)
    manager.on_success(4)  # late success of an old checkpoint
    assert manager.continuous_failures == 2
    manager.on_success(8)
    assert manager.continuous_failures == 0
    assert manager.last_succeeded_checkpoint_id == 8


def test_failures_without_id_count_every_time() -> None:
    manager = CheckpointFailureManager(1)
    assert manager.on_failure(None, Reason.IO_EXCEPTION) == Tolerated(True, 1)
    decision = manager.on_failure(None, Reason.IO_EXCEPTION)
    assert isinstance(decision, FailJob)
    assert "a checkpoint failed" in decision.message


def test_negative_tolerance_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="tolerable-failed-checkpoints"):
        CheckpointFailureManager(-1)


events = st.lists(
    st.tuples(
        st.sampled_from(["fail", "success"]),
        st.integers(1, 12),
        st.sampled_from(list(Reason)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(0, 3), events)
def test_matches_a_direct_model(tolerable: int, steps: list[tuple[str, int, Reason]]) -> None:
    manager = CheckpointFailureManager(tolerable)
    last_success = -1
    counted: set[int] = set()
    for kind, checkpoint_id, reason in steps:
        if kind == "success":
            manager.on_success(checkpoint_id)
            if checkpoint_id > last_success:
                last_success, counted = checkpoint_id, set()
            continue
        decision = manager.on_failure(checkpoint_id, reason)
        counts = (
            reason.counts_as_failure
            and checkpoint_id > last_success
            and checkpoint_id not in counted
        )
        if counts:
            counted.add(checkpoint_id)
        if len(counted) > tolerable:
            assert (
                isinstance(decision, FailJob) and f"checkpoint {checkpoint_id}" in decision.message
            )
            counted = set()
        else:
            assert decision == Tolerated(counts, len(counted))
        assert manager.continuous_failures == len(counted) <= tolerable
