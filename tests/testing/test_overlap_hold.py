"""OverlapHold's sink without a job: when it holds a checkpoint, until what, and when the hold
counts as two checkpoints in flight at once (the job:
tests/e2e/test_concurrent_unaligned_checkpoints.py). The sink runs in the keyed harness, as
its operator (a keyed process operator) runs it in a task."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from undertow.runtime.task.keyed_operators import KeyedProcessOperator
from undertow.testing._oracle_records import make_record, oracle_key
from undertow.testing.harness import KeyedOneInputOperatorTestHarness
from undertow.testing.overlap_hold import OverlapHold


@contextmanager
def held_sink(
    hold: OverlapHold, subtask: int = 0, record: bool = True
) -> Iterator[KeyedProcessOperator]:
    """The hold's sink as subtask ``subtask`` of 2, opened, with a record processed."""
    op = KeyedProcessOperator(hold.sink(records_per_key=10))
    harness = KeyedOneInputOperatorTestHarness(op, key_selector=oracle_key)
    harness.setup_context.subtask_index = subtask
    harness.setup_context.parallelism = 2
    with harness:
        if record:
            harness.process_element(make_record(0, 1))
        yield op


def test_a_hold_lasts_until_the_next_checkpoint_was_triggered(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path)
    with held_sink(hold) as sink:
        sink.notify_checkpoint_complete(2)
        released = threading.Timer(0.05, hold.triggered, (4,))
        released.start()
        sink.prepare_snapshot_pre_barrier(3)  # blocks until checkpoint 4 was triggered
        assert hold.is_triggered(4)
        assert hold.holds() == ["3 until 4 triggered"]
        sink.prepare_snapshot_pre_barrier(4)  # one hold at a time
        assert len(hold.holds()) == 1
        assert hold.overlapped() is None
        sink.notify_checkpoint_complete(3)
        sink.notify_checkpoint_complete(4)
    assert hold.overlapped() == (3, 4)
    assert hold.holds() == ["3 until 4 triggered: overlapped"]


def test_no_hold_before_the_previous_checkpoint_completed_or_a_record(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01)
    with held_sink(hold) as sink:
        sink.prepare_snapshot_pre_barrier(2)  # checkpoint 1 is not told completed
        sink.notify_checkpoint_complete(1)
        sink.prepare_snapshot_pre_barrier(3)  # 2 is not told completed either
        assert hold.holds() == []
    with held_sink(hold, subtask=1) as other:  # not the hold's subtask
        other.notify_checkpoint_complete(1)
        other.prepare_snapshot_pre_barrier(2)
    with held_sink(hold, record=False) as idle:  # a checkpoint with no record before it
        idle.notify_checkpoint_complete(1)
        idle.prepare_snapshot_pre_barrier(2)
    assert hold.holds() == []


def test_a_hold_that_came_to_nothing_is_tried_again(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01, max_holds=4)
    for checkpoint_id in (3, 4, 6):
        hold.triggered(checkpoint_id)
    with held_sink(hold) as sink:
        sink.prepare_snapshot_pre_barrier(1)  # timed out: 2 is never triggered
        sink.notify_checkpoint_complete(1)
        sink.prepare_snapshot_pre_barrier(2)
        sink.notify_checkpoint_aborted(2)  # subsumed somewhere
        sink.prepare_snapshot_pre_barrier(3)  # 2 is resolved: aborted
        sink.notify_checkpoint_complete(4)  # 3 did not complete (or was not told)
        sink.prepare_snapshot_pre_barrier(5)
        sink.notify_checkpoint_complete(5)
        sink.notify_checkpoint_complete(6)
        assert hold.overlapped() == (5, 6)
        sink.notify_checkpoint_complete(6)
        sink.prepare_snapshot_pre_barrier(7)  # done: no more holds
    assert hold.holds() == [
        "1 timed out",
        "2 until 3 triggered: 2 aborted",
        "3 until 4 triggered: told 4 completed first",
        "5 until 6 triggered: overlapped",
    ]


def test_holds_stop_at_max_holds(tmp_path: Path) -> None:
    hold = OverlapHold(tmp_path, hold_max_s=0.01, max_holds=2)
    with held_sink(hold) as sink:
        for checkpoint_id in range(1, 5):
            sink.prepare_snapshot_pre_barrier(checkpoint_id)
            sink.notify_checkpoint_complete(checkpoint_id)
    assert hold.holds() == ["1 timed out", "2 timed out"]
    with pytest.raises(ValueError):
        OverlapHold(tmp_path, max_holds=0)
