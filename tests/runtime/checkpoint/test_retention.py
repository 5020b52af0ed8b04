"""Retention and cleanup on in-memory storage: what the store keeps, which directories a
completion, a savepoint, a sweep and the end of the job delete, and a claimed snapshot's own
directory going once subsumed. Deletes run on the loop's executor: each scenario runs in
``asyncio.run``, which waits for them before the assertions after it."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from dataclasses import replace
from types import SimpleNamespace
from typing import cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    ChannelStateReference,
    build_handle,
)
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.completed_store import CompletedCheckpoint
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, VertexMetadata
from undertow.runtime.checkpoint.orphan_sweep import SweepFacts
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.checkpoint.retention import CheckpointRetention
from undertow.runtime.checkpoint.shared_files import SharedFiles
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle


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


def test_settled_returns_once_the_deletes_started_on_the_executor_ended() -> None:
    """The JobMaster reports the job ended after this: a subsumed checkpoint whose (slow)
    delete is still running is not listed any more once it returns, and neither is the
    directory of an aborted one nor a shared file released meanwhile."""
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=1)
    discard = storage.discard

    def slow_discard(cid: int, keep: frozenset[str] = frozenset()) -> None:
        time.sleep(0.2)  # an object store's round trips
        discard(cid, keep)

    storage.discard = slow_discard  # type: ignore[method-assign]

    async def main() -> None:
        retention.completed(write(storage, 1, True), meta(1), ())
        retention.completed(write(storage, 2, True), meta(2), ())
        write(storage, 3, commit=False)
        retention.discard(3)  # an aborted checkpoint
        assert storage.completed_checkpoint_ids() == [1, 2], "the delete is not slow"
        await retention.settled()
        assert [d.checkpoint_id for d in storage.checkpoint_directories()] == [2]

    asyncio.run(main())


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


# -- channel-state files that checkpoints during recovery refer to (FLIP-76) --------------------

USER_SNAPSHOT = "user-snapshot/chk-9/channel-state-user"


def channel_state_meta(cid: int, own: FileHandle, refs: list[FileHandle]) -> CheckpointMetadata:
    """Checkpoint ``cid``: one subtask's input state written to ``own`` and referring to a
    run of each of ``refs`` (older checkpoints' channel-state files)."""
    data = b"\x00" + bytes(own.size - 1)
    references = [
        ChannelStateReference(
            (0, 0), 1, f, 0, f.size, hashlib.sha256(data).hexdigest(), 0, (f.size,)
        )
        for f in refs
    ]
    handle = build_handle("map (1/1)", cid, ChannelStateDirection.INPUT, {(0, 0): [data]}, 0,
                          hashlib.sha256(data).hexdigest(), file=own,
                          references=references)  # fmt: skip
    vertex = VertexMetadata(1, "map", ("map",), 1, 128, False, {},
                            {0: ChannelStateHandles(input=handle)})  # fmt: skip
    return replace(meta(cid), vertices=(vertex,))


def exists(storage: CheckpointStorage, uri: str) -> bool:
    fs, path = storage._open_uri(uri)
    return bool(fs.exists(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    retained=st.integers(1, 3),
    steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 7)), min_size=1, max_size=7),
    keep_at_end=st.booleans(),
)
def test_referenced_channel_state_survives_subsumption_and_goes_once_unreferenced(
    retained: int, steps: list[tuple[int, int]], keep_at_end: bool
) -> None:
    """Each checkpoint writes its channel-state file and refers to some of the files the
    checkpoint it restored from (a retained one) holds: its own file and those it refers to
    itself, as a checkpoint during recovery does. After every completion a file that a
    retained checkpoint holds exists, a file of this job nobody holds is gone, and the files of
    a NO_CLAIM snapshot (another job's directory) are never deleted, whatever happens."""
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=retained)
    user = storage._uri(f"{storage.root_uri.split('://', 1)[-1].rstrip('/')}/{USER_SNAPSHOT}")
    fs, user_path = storage._open_uri(user)
    fs.pipe_file(user_path, b"\x00user")
    holds: dict[int, set[str]] = {}  # checkpoint id -> paths it holds (own and referenced)
    files: dict[str, FileHandle] = {}
    for index, (source, mask) in enumerate(steps):
        cid = index + 1
        own = storage.write_file(cid, "channel-state-own", b"\x00" + bytes(cid))
        files[own.path] = own
        kept = [e.checkpoint_id for e in retention.store.all()]
        candidates = sorted(holds[kept[source % len(kept)]]) if kept else []
        refs = [files[p] for bit, p in enumerate(candidates) if mask >> bit & 1]
        holds[cid] = {own.path, *(f.path for f in refs)}
        storage.commit_metadata(cid, b"metadata")
        entry = CompletedCheckpoint(cid, cid, cid + 1, False, storage.checkpoint_pointer(cid), 8)

        async def complete(
            entry: CompletedCheckpoint = entry,
            cid: int = cid,
            refs: list[FileHandle] = refs,
            own: FileHandle = own,
        ) -> None:
            retention.completed(entry, channel_state_meta(cid, own, refs), ())  # fmt: skip

        asyncio.run(complete())  # waits for the deletes on the executor
        alive = [e.checkpoint_id for e in retention.store.all()]
        held = set().union(*(holds[c] for c in alive))
        for path in files:
            assert exists(storage, storage.job_file_uri(path)) == (path in held), (
                path, alive, holds,
            )  # fmt: skip
        assert exists(storage, user), "a NO_CLAIM snapshot's file was deleted"
    kept_ids = [e.checkpoint_id for e in retention.store.all()]
    retention.shutdown(keep_at_end, len(steps) + 1)
    held = set().union(*(holds[c] for c in kept_ids)) if keep_at_end else set()
    for path in files:
        assert exists(storage, storage.job_file_uri(path)) == (path in held), (path, held)
    assert exists(storage, user)


def claimed_with_referred_file(
    mode: RecoveryClaimMode,
) -> tuple[CheckpointStorage, CheckpointStorage, CheckpointRetention, str]:
    """Job ``old-job``'s chk-7 refers to a channel-state file of its chk-5 (a checkpoint during
    recovery wrote it); job-r restores chk-7 in ``mode``. Returns both storages, job-r's
    retention and the referred file's location."""
    other = CheckpointStorage(f"memory:///claimed-{uuid.uuid4().hex}", "old-job")
    older = other.write_file(5, "channel-state-a", b"\x00older")
    other.commit_metadata(5, b"metadata")
    own = other.write_file(7, "channel-state-b", b"\x00own")
    snapshot = write(other, 7, commit=True)
    other.discard(5, keep=frozenset({"channel-state-a"}))  # old-job subsumed chk-5, kept it
    referred = other.job_file_uri(older.path)
    assert exists(other, referred)
    storage = CheckpointStorage.in_memory("job-r")
    retention = CheckpointRetention("job-r", storage, num_retained=1)
    plan = cast(RestorePlan, SimpleNamespace(pointer=snapshot.external_path))
    claimed = replace(channel_state_meta(7, own, [older]), job_id="old-job")
    retention.claim(claimed, plan, snapshot, mode, ())
    return other, storage, retention, referred


def test_claim_takes_the_files_the_claimed_checkpoint_refers_to_and_deletes_them_with_it() -> None:
    """The leak of issue 29: a claimed checkpoint's referred files (of its job's older
    checkpoints) went with nothing. Under CLAIM they are the job's, held by the claimed
    checkpoint: they stay while it is retained and go once it is subsumed."""
    other, storage, retention, referred = claimed_with_referred_file(RecoveryClaimMode.CLAIM)
    assert retention.shared_files.registry.holders(referred) == {7}

    async def main() -> None:
        retention.completed(write(storage, 8, True), meta(8), ())

    asyncio.run(main())
    assert other.completed_checkpoint_ids() == []
    assert not exists(other, referred), "a claimed checkpoint's referred file leaked"
    assert [d.checkpoint_id for d in other.checkpoint_directories()] == []


def test_claimed_referred_files_stay_or_go_with_the_job_and_never_under_no_claim() -> None:
    for keep in (True, False):
        other, _, retention, referred = claimed_with_referred_file(RecoveryClaimMode.CLAIM)
        retention.shutdown(keep, next_id=8)
        assert exists(other, referred) == keep
    # NO_CLAIM: the snapshot is never the job's (no claim, nothing registered)
    storage = CheckpointStorage.in_memory("job-r")
    files = SharedFiles(storage)
    referred_file = FileHandle("chk-5/channel-state-a", 6, "0" * 64)
    files.restored(7, "memory:///u/old-job/chk-7", (), RecoveryClaimMode.NO_CLAIM, (),
                   [referred_file])  # fmt: skip
    assert len(files.registry) == 0
    files.restored(7, "memory:///u/old-job/chk-7", (), RecoveryClaimMode.CLAIM, (),
                   [referred_file])  # fmt: skip
    assert files.registry.files_of(7) == {"memory:///u/old-job/chk-5/channel-state-a"}
    try:
        files.restored(8, "memory:///u/old-job/chk-8", (), RecoveryClaimMode.CLAIM, (),
                       [FileHandle("shared/x", 1, "0" * 64)])  # fmt: skip
    except ValueError as err:
        assert "chk-8" in str(err) and "shared/x" in str(err)
    else:
        raise AssertionError("a referred file outside chk-<n>/ was accepted")
