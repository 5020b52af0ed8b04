"""Retention and cleanup on in-memory storage: what the store keeps, which directories a
completion, a savepoint, a sweep and the end of the job delete, and a claimed snapshot's own
directory going once subsumed. Deletes run on the loop's executor: each scenario runs in
``asyncio.run``, which waits for them before the assertions after it."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from types import SimpleNamespace
from typing import cast

from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.completed_store import CompletedCheckpoint
from undertow.runtime.checkpoint.metadata import CheckpointMetadata
from undertow.runtime.checkpoint.orphan_sweep import SweepFacts
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.retention import CheckpointRetention
from undertow.storage.checkpoint_storage import CheckpointStorage


def meta(cid: int) -> CheckpointMetadata:
    return CheckpointMetadata(
        job_id="job-r", checkpoint_id=cid, trigger_timestamp=cid,
        completion_timestamp=cid + 1, is_savepoint=False, vertices=(),
    )  # fmt: skip


def write(storage: CheckpointStorage, cid: int, commit: bool) -> CompletedCheckpoint:
    """A ``chk-<cid>`` with a state file, committed (with ``_metadata``) or not."""
    storage.write_file(cid, "v1-0.state", b"state")
    if commit:
        storage.commit_metadata(cid, b"metadata")
    return CompletedCheckpoint(cid, cid, cid + 1, False, storage.checkpoint_pointer(cid), 8)


def test_a_completion_subsumes_the_older_checkpoint_and_deletes_its_directory() -> None:
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=1)

    async def main() -> None:
        assert retention.completed(write(storage, 1, True), meta(1), ()) == (1,)
        assert retention.completed(write(storage, 2, True), meta(2), ()) == (2,)

    asyncio.run(main())
    assert storage.completed_checkpoint_ids() == [2]
    assert set(retention.metadata) == {2} and retention.newest_completed_id() == 2


def test_a_savepoint_leaves_no_job_directory_and_counts_as_newest() -> None:
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=2)

    async def main() -> None:
        retention.completed(write(storage, 1, True), meta(1), ())
        write(storage, 2, False)
        retention.savepoint_taken(2)

    asyncio.run(main())
    assert [d.checkpoint_id for d in storage.checkpoint_directories()] == [1]
    assert retention.newest_completed_id() == 2 and retention.savepoint_ids == {2}


def test_a_sweep_deletes_uncommitted_directories_below_the_newest_but_protected_ones() -> None:
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=1)
    for cid in (1, 2, 3, 5):
        write(storage, cid, commit=False)

    async def main() -> None:
        retention.completed(write(storage, 4, True), meta(4), in_flight=())

    asyncio.run(main())  # the first completion also starts a sweep: due, none ran yet
    left = [d.checkpoint_id for d in storage.checkpoint_directories()]
    assert left == [4, 5]  # 5 is not below the newest completed one
    for cid in (1, 2):
        write(storage, cid, commit=False)
    facts = retention.sweep_facts(5, in_flight=(2,))
    assert facts == SweepFacts(below=5, protected=frozenset({2, 4}))
    assert retention.sweep(facts, bounded=True) == 1  # chk-1; chk-2 is pending
    assert [d.checkpoint_id for d in storage.checkpoint_directories()] == [2, 4, 5]


def test_at_the_end_retained_checkpoints_stay_or_go_with_every_orphan() -> None:
    for keep in (True, False):
        storage = CheckpointStorage.in_memory("job-r")
        retention = CheckpointRetention("job-r", storage, num_retained=1)

        async def main(retention: CheckpointRetention, storage: CheckpointStorage) -> None:
            retention.completed(write(storage, 3, True), meta(3), ())

        asyncio.run(main(retention, storage))
        write(storage, 4, commit=False)  # e.g. a late file of an aborted checkpoint
        kept = retention.shutdown(keep, next_id=5)
        assert storage.completed_checkpoint_ids() == ([3] if keep else [])
        assert [d.checkpoint_id for d in storage.checkpoint_directories()] == ([3] if keep else [])
        assert (kept.checkpoint_id if kept is not None else None) == (3 if keep else None)


def test_a_claimed_snapshot_goes_from_its_own_directory_once_subsumed() -> None:
    other = CheckpointStorage(f"memory:///claimed-{uuid.uuid4().hex}", "old-job")
    snapshot = write(other, 7, commit=True)
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=1)
    plan = cast(RestorePlan, SimpleNamespace(pointer=snapshot.external_path))
    retention.claim(replace(meta(7), job_id="old-job"), plan, snapshot, RecoveryClaimMode.CLAIM,
                    ())  # fmt: skip
    assert retention.claimed == (7, plan) and set(retention.metadata) == {7}

    async def main() -> None:
        retention.completed(write(storage, 8, True), meta(8), ())

    asyncio.run(main())
    assert retention.claimed is None and other.completed_checkpoint_ids() == []
    assert storage.completed_checkpoint_ids() == [8]
