"""PendingCheckpoint: acknowledgement results, abort, finalization (reference §5.3)."""

from __future__ import annotations

import pytest

from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.pending_checkpoint import (
    AckResult,
    PendingCheckpoint,
    PendingCheckpointStatus,
)

TASKS = frozenset({(1, 0), (1, 1), (2, 0)})


def pending(tasks: frozenset[tuple[int, int]] = TASKS) -> PendingCheckpoint[str, None]:
    return PendingCheckpoint(7, 1_000, tasks, None)


def test_acknowledgements_until_fully_acknowledged() -> None:
    checkpoint = pending()
    assert checkpoint.num_tasks == 3
    assert checkpoint.acknowledge((1, 0), "a", {"sync_duration_ms": 3}) is AckResult.SUCCESS
    assert checkpoint.acknowledge((2, 0), "c") is AckResult.SUCCESS
    assert not checkpoint.is_fully_acknowledged
    assert checkpoint.not_yet_acknowledged == {(1, 1)}
    assert checkpoint.acknowledge((1, 1), "b") is AckResult.SUCCESS
    assert checkpoint.is_fully_acknowledged
    assert checkpoint.num_acknowledged == 3
    assert dict(checkpoint.acknowledged_states) == {(1, 0): "a", (1, 1): "b", (2, 0): "c"}
    assert checkpoint.acknowledged_metrics[(1, 0)] == {"sync_duration_ms": 3}
    assert checkpoint.acknowledged_metrics[(2, 0)] == {}


def test_duplicate_and_unknown_acknowledgements() -> None:
    checkpoint = pending()
    checkpoint.acknowledge((1, 0), "a")
    assert checkpoint.acknowledge((1, 0), "again") is AckResult.DUPLICATE
    assert checkpoint.acknowledge((9, 0), "x") is AckResult.UNKNOWN
    assert dict(checkpoint.acknowledged_states) == {(1, 0): "a"}


def test_abort_returns_the_states_to_discard_and_refuses_later_acks() -> None:
    checkpoint = pending()
    checkpoint.acknowledge((1, 0), "a")
    checkpoint.acknowledge((1, 1), "b")
    assert sorted(checkpoint.abort(CheckpointFailureReason.CHECKPOINT_EXPIRED)) == ["a", "b"]
    assert checkpoint.is_discarded and checkpoint.is_disposed
    assert checkpoint.status is PendingCheckpointStatus.DISCARDED
    assert checkpoint.failure_reason is CheckpointFailureReason.CHECKPOINT_EXPIRED
    assert checkpoint.acknowledge((2, 0), "c") is AckResult.DISCARDED
    assert checkpoint.acknowledge((1, 0), "a") is AckResult.DISCARDED
    assert not checkpoint.is_fully_acknowledged
    assert dict(checkpoint.acknowledged_states) == {}
    assert checkpoint.abort(CheckpointFailureReason.CHECKPOINT_DECLINED) == ()
    assert checkpoint.failure_reason is CheckpointFailureReason.CHECKPOINT_EXPIRED


def test_finalize_needs_every_acknowledgement() -> None:
    checkpoint = pending()
    checkpoint.acknowledge((1, 0), "a")
    with pytest.raises(CheckpointException, match=r"checkpoint 7 has 1 of 3") as err:
        checkpoint.finalize_checkpoint()
    assert err.value.reason is CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE
    checkpoint.acknowledge((1, 1), "b")
    checkpoint.acknowledge((2, 0), "c")
    assert dict(checkpoint.finalize_checkpoint()) == {(1, 0): "a", (1, 1): "b", (2, 0): "c"}
    assert checkpoint.status is PendingCheckpointStatus.COMPLETED
    assert not checkpoint.is_fully_acknowledged  # disposed
    assert checkpoint.acknowledge((1, 0), "late") is AckResult.DISCARDED
    assert checkpoint.abort(CheckpointFailureReason.CHECKPOINT_EXPIRED) == ()
    assert checkpoint.status is PendingCheckpointStatus.COMPLETED
    with pytest.raises(CheckpointException, match="already completed"):
        checkpoint.finalize_checkpoint()


def test_no_tasks_means_fully_acknowledged() -> None:
    checkpoint = pending(frozenset())
    assert checkpoint.is_fully_acknowledged
    assert dict(checkpoint.finalize_checkpoint()) == {}


def test_states_view_is_read_only() -> None:
    checkpoint = pending()
    checkpoint.acknowledge((1, 0), "a")
    with pytest.raises(TypeError):
        checkpoint.acknowledged_states[(1, 1)] = "b"  # type: ignore[index]


def test_duration_and_props() -> None:
    checkpoint: PendingCheckpoint[str, dict[str, int]] = PendingCheckpoint(
        3, 1_000, [(0, 0)], {"enumerators": 1}
    )
    assert checkpoint.duration(1_250) == 250
    assert checkpoint.duration(900) == 0
    assert checkpoint.props == {"enumerators": 1}
    assert checkpoint.tasks_to_ack == {(0, 0)}
    assert repr(checkpoint) == "PendingCheckpoint(3, pending, acknowledged 0/1)"
