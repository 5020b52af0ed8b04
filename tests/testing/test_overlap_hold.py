"""OverlapHold's map without a job: when it holds a checkpoint, until what, and when the hold
counts as two checkpoints in flight at once (the job:
tests/e2e/test_concurrent_unaligned_checkpoints.py). The map runs in the harness as its
operator runs it in a task."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from undertow.runtime.task.operators import StreamMap
from undertow.testing.harness import OneInputOperatorTestHarness
from undertow.testing.overlap_hold import OverlapHold


@contextmanager
def held_map(hold: OverlapHold, subtask: int = 2) -> Iterator[StreamMap]:
    """The hold's map as subtask ``subtask`` of 3 (the last holds), opened."""
    function = hold.function()
    harness = OneInputOperatorTestHarness(StreamMap(function, function.map))
    harness.setup_context.subtask_index = subtask
    harness.setup_context.parallelism = 3
    with harness:
        yield harness.operator  # type: ignore[misc]


def test_a_hold_lasts_until_the_next_checkpoint_was_triggered(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path)
    with held_map(hold) as op:
        hold.completed(2, in_flight_bytes=100)
        op.notify_checkpoint_complete(2)
        released = threading.Timer(0.05, hold.triggered, (4,))
        released.start()
        op.prepare_snapshot_pre_barrier(3)  # blocks until checkpoint 4 was triggered
        assert hold.is_triggered(4)
        assert hold.holds() == ["3 until 4 triggered"]
        op.prepare_snapshot_pre_barrier(4)  # one hold at a time
        assert len(hold.holds()) == 1
        assert hold.overlapped() is None
        op.notify_checkpoint_complete(3)
        op.notify_checkpoint_complete(4)
    assert hold.overlapped() == (3, 4)
    assert hold.holds() == ["3 until 4 triggered: overlapped"]


def test_no_hold_before_in_flight_data_or_while_the_previous_checkpoint_is_open(
    tmp_path: Path,
) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01)
    with held_map(hold) as op:
        hold.completed(1, in_flight_bytes=0)  # before records flowed
        op.notify_checkpoint_complete(1)
        op.prepare_snapshot_pre_barrier(2)
        hold.completed(2, in_flight_bytes=100)
        op.prepare_snapshot_pre_barrier(4)  # 3 is not told completed
        assert hold.holds() == []
    with held_map(hold, subtask=1) as other:  # not the last subtask
        other.notify_checkpoint_complete(4)
        other.prepare_snapshot_pre_barrier(5)
    assert hold.holds() == []


def test_a_hold_that_came_to_nothing_is_tried_again(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01, max_holds=4)
    for checkpoint_id in (3, 7, 10):
        hold.triggered(checkpoint_id)
    with held_map(hold) as op:
        for held, then in ((2, lambda: op.notify_checkpoint_aborted(2)),  # subsumed somewhere
                           (4, lambda: None),  # timed out: 5 is never triggered
                           (6, lambda: op.notify_checkpoint_complete(7)),  # 6 not told done
                           (9, lambda: (op.notify_checkpoint_complete(9),
                                        op.notify_checkpoint_complete(10)))):  # fmt: skip
            hold.completed(held - 1, in_flight_bytes=100)
            op.notify_checkpoint_complete(held - 1)
            op.prepare_snapshot_pre_barrier(held)
            then()
        assert hold.overlapped() == (9, 10)
        op.prepare_snapshot_pre_barrier(11)  # done: no more holds
    assert hold.holds() == [
        "2 until 3 triggered: 2 aborted",
        "4 timed out",
        "6 until 7 triggered: told 7 completed first",
        "9 until 10 triggered: overlapped",
    ]


def test_holds_stop_at_max_holds(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01, max_holds=2)
    with held_map(hold) as op:
        for checkpoint_id in range(2, 6):
            hold.completed(checkpoint_id - 1, in_flight_bytes=100)
            op.notify_checkpoint_complete(checkpoint_id - 1)
            op.prepare_snapshot_pre_barrier(checkpoint_id)
    assert hold.holds() == ["2 timed out", "3 timed out"]
    with pytest.raises(ValueError):
        OverlapHold(tmp_path, max_holds=0)
