"""RecoveryHold's marker, without a job: which barrier ends a hold, and the failure that makes
the marked checkpoint the one restored (the job: tests/e2e/test_restored_output_references.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing._oracle_records import TracedRecord, make_record
from undertow.testing.oracle import InjectedFailure
from undertow.testing.recovery_hold import BarrierMarker, RecoveryHold

MAXP = 128


class Runtime:
    """The parts of a RuntimeContext the marker reads."""

    def __init__(self, attempt: int, index: int = 1) -> None:
        self.attempt, self.index = attempt, index

    def get_attempt_number(self) -> int:
        return self.attempt

    def get_index_of_this_subtask(self) -> int:
        return self.index


def held_sink_blocked(hold: RecoveryHold, processed: dict[str, int]) -> None:
    """What held sink subtask 0 of 2 publishes when it blocks (it gives up at once here)."""
    groups = key_group_range_for_subtask(MAXP, 2, 0)
    hold.wait(0, 0, {"groups": [groups.start, groups.stop], "max_parallelism": MAXP,
                     "processed": processed})  # fmt: skip


def marker(hold: RecoveryHold, attempt: int) -> BarrierMarker:
    m = hold.marker()
    m.open(Runtime(attempt))  # type: ignore[arg-type]
    return m


def test_in_attempt_0_only_a_barrier_behind_a_record_the_held_sink_did_not_take_ends_the_hold(
    tmp_path: Path,
) -> None:
    key = 0
    assert assign_to_key_group(key, MAXP) in key_group_range_for_subtask(MAXP, 2, 0)
    hold = RecoveryHold(tmp_path, subtasks=[0], producers=[1], hold_max_s=0.0)
    first = marker(hold, 0)
    first.map(TracedRecord(make_record(key, 3), ()))
    first.prepare_snapshot_pre_barrier(4)  # the sink has not blocked yet
    held_sink_blocked(hold, {str(key): 3})
    assert hold.held() == {(0, 0): "timed out"}
    first.prepare_snapshot_pre_barrier(5)  # its last record, seq 3, was taken by the sink
    assert hold.barrier(0) is None
    first.map(make_record(key, 4))
    first.prepare_snapshot_pre_barrier(6)  # seq 4 is queued for the sink: this one
    assert hold.barrier(0) == 6
    other = marker(hold, 0)
    other.map(make_record(key, 9))
    other.prepare_snapshot_pre_barrier(7)  # marked already: not this subtask's
    other.notify_checkpoint_complete(7)
    first.notify_checkpoint_complete(5)
    with pytest.raises(InjectedFailure, match="restores 6"):
        first.notify_checkpoint_complete(6)
    # the next barrier may come first: the marker fails before its subtask takes it
    with pytest.raises(InjectedFailure, match="checkpoint 8 reached after checkpoint 6"):
        first.prepare_snapshot_pre_barrier(8)


def test_a_record_for_a_subtask_that_is_not_held_does_not_end_the_hold(tmp_path: Path) -> None:
    key = next(k for k in range(20) if assign_to_key_group(k, MAXP)
               in key_group_range_for_subtask(MAXP, 2, 1))  # fmt: skip
    hold = RecoveryHold(tmp_path, subtasks=[0], producers=[1], hold_max_s=0.0)
    held_sink_blocked(hold, {})
    m = marker(hold, 0)
    m.map(make_record(key, 1))
    m.prepare_snapshot_pre_barrier(3)
    assert hold.barrier(0) is None


def test_in_the_restored_attempt_the_first_barrier_ends_the_hold_and_nothing_fails(
    tmp_path: Path,
) -> None:
    hold = RecoveryHold(tmp_path, subtasks=[0], producers=[1])
    not_a_producer = hold.marker()
    not_a_producer.open(Runtime(1, index=0))  # type: ignore[arg-type]
    not_a_producer.map(make_record(0, 1))
    not_a_producer.prepare_snapshot_pre_barrier(7)
    assert hold.barrier(1) is None and hold.producer_keys() == frozenset()
    m = marker(hold, 1)
    m.map(make_record(0, 1))
    assert hold.producer_keys() == {"0"}
    m.prepare_snapshot_pre_barrier(8)
    m.prepare_snapshot_pre_barrier(9)
    m.notify_checkpoint_complete(8)
    assert hold.barrier(1) == 8
    later = marker(hold, 2)
    later.map(make_record(0, 1))
    later.prepare_snapshot_pre_barrier(12)
    assert hold.barrier(2) is None
