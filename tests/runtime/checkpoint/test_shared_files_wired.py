"""The shared-state registry wired into the coordinator (FLIP-193), property-tested.

Hypothesis generates programs of checkpoint events for a real coordinator on the testing kit
(in-memory storage, manual clock): triggers, acknowledgements whose subtasks upload new files
into ``shared/`` and reuse the last completed checkpoint's files (as the RocksDB backend
does), declines (aborts), for several ``num-retained`` values; optionally the job first
restores another job's incremental checkpoint in CLAIM or NO_CLAIM. After every step, with the
executor drained:

* no file a retained checkpoint references is deleted or changed;
* no file of this job's ``shared/`` is left that neither a retained checkpoint nor a pending
  acknowledgement references (deleted once unreferenced: the job owns them);
* NO_CLAIM: every file of the restored job is unchanged (listing and bytes); CLAIM: once the
  claimed checkpoint left the store, its shared files are gone;
* after a NO_CLAIM restore the restored shared files are duplicated into this job's
  ``shared/`` (FLIP-193; the in-memory store copies them) and the first checkpoint may reuse
  them; the duplicates are held until the first checkpoint completed, then those it does not
  reference go. Where the storage cannot duplicate (``NO_CLAIM-reupload``: its
  ``duplicate_method`` says ``None``) the first checkpoint is FULL (reuses no restored file);
  after a CLAIM restore it may reuse the claimed files, adopted into this job's ``shared/``
  under their names (a backend restored in place reuses them); the adopted files stay while
  the claimed checkpoint or a newer one references them.
"""

from __future__ import annotations

import asyncio
import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.runtime.checkpoint.test_coordinator_restore import StubEnumerator, job_graph, source_id

from undertow.core.types import CheckpointId, SubtaskIndex, VertexId
from undertow.runtime.checkpoint.barrier import SnapshotType
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.shared_state_registry import Release
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.storage import FileHandle
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.testing.coordinator import CoordinatorUnderTest, in_memory_coordinator

_names = itertools.count()


def _contents(storage: CheckpointStorage) -> dict[str, bytes]:
    fs: Any = storage._fs  # the in-memory file system of the kit
    root = storage.job_uri.split("://", 1)[-1]
    found = fs.find(root) if fs.exists(root) else []
    return {path: bytes(fs.cat_file(path)) for path in found}


def _ack(
    kit: CoordinatorUnderTest, cid: int, reuse: list[FileHandle], new: int, one: bool = False
) -> None:
    """Every waiting subtask (``one``: the first only) acknowledges with a state file, ``reuse``
    and ``new`` new files."""
    pending = kit.coordinator.pending[cid]
    for vertex_id, subtask in sorted(pending.not_yet_acknowledged)[: 1 if one else None]:
        state = kit.storage.write_file(cid, f"v{vertex_id}-s{subtask}.state", b"state")
        uploaded = [
            kit.storage.write_shared_file(f"s{subtask}-{cid}-{next(_names)}.sst", b"sst %d" % cid)
            for _ in range(new)
        ]
        handle = SubtaskStateHandle(state, None, tuple(reuse + uploaded))
        kit.coordinator.receive_ack(
            VertexId(vertex_id), SubtaskIndex(subtask), CheckpointId(cid), handle, {}
        )


async def _drain() -> None:
    """Wait until the (single-threaded) executor ran every deletion submitted so far."""
    await asyncio.get_running_loop().run_in_executor(None, lambda: None)


async def _restored_snapshot(kit: CoordinatorUnderTest) -> tuple[str, CheckpointStorage]:
    """Another job completes an incremental checkpoint with shared files; its pointer."""
    kit.gateway.source_enumerators = {source_id(kit): StubEnumerator()}
    kit.coordinator.start()
    kit.clock.advance(100)
    cid = max(kit.coordinator.pending)
    _ack(kit, cid, [], 2)
    await kit.coordinator.finish_completing()
    kit.coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
    return kit.storage.checkpoint_pointer(cid), kit.storage


STEPS = st.lists(
    st.one_of(
        st.just(("trigger",)),
        st.tuples(st.just("ack"), st.integers(0, 2), st.booleans()),
        st.tuples(st.just("ack-newest"), st.integers(0, 2), st.booleans()),
        st.tuples(st.just("partial"), st.integers(1, 2), st.booleans()),
        st.just(("decline",)),
    ),
    max_size=25,
)


#: A run that subsumes checkpoints whose files later ones reuse, then one that reuses none.
REUSE_THEN_FRESH = [("trigger",), ("ack", 2, True)] * 3 + [("trigger",), ("ack", 1, False)]
#: A checkpoint reusing a file completes after a later one that does not (kept, retained 2).
OUT_OF_ORDER = [("trigger",), ("ack", 1, False), ("trigger",), ("trigger",), ("partial", 1, True),
                ("ack-newest", 1, False), ("ack", 1, True)]  # fmt: skip
#: Checkpoints that are aborted after some subtasks uploaded files.
ABORTS = [("trigger",), ("partial", 2, True), ("decline",), ("ack", 1, True)] * 3


@settings(max_examples=200, deadline=None)
@given(
    steps=STEPS,
    retained=st.integers(1, 3),
    restore=st.sampled_from([None, "CLAIM", "NO_CLAIM", "NO_CLAIM-reupload"]),
)
@example(steps=REUSE_THEN_FRESH, retained=1, restore=None)
@example(steps=REUSE_THEN_FRESH, retained=2, restore="CLAIM")
@example(steps=REUSE_THEN_FRESH, retained=1, restore="NO_CLAIM")
@example(steps=REUSE_THEN_FRESH, retained=1, restore="NO_CLAIM-reupload")
@example(steps=ABORTS, retained=1, restore="NO_CLAIM")
@example(steps=ABORTS, retained=1, restore=None)
@example(steps=OUT_OF_ORDER, retained=1, restore=None)
def test_wired_registry_never_deletes_a_referenced_file_and_leaves_no_orphan(
    steps: list[tuple[Any, ...]], retained: int, restore: str | None
) -> None:
    async def scenario() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        config = {
            "execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.timeout": "1 h",
            "execution.checkpointing.num-retained": str(retained),
            "execution.checkpointing.max-concurrent-checkpoints": "2",
            "execution.checkpointing.tolerable-failed-checkpoints": "1000",
        }
        old_storage: CheckpointStorage | None = None
        old_before: dict[str, bytes] = {}
        claimed: list[str] = []
        if restore is not None:
            old = in_memory_coordinator(job_graph(), config)
            pointer, old_storage = await _restored_snapshot(old)
            old_before = _contents(old_storage)
            claimed = [p for p in old_before if "/shared/" in p]
            config["execution.state-recovery.claim-mode"] = restore.split("-")[0]
        kit = in_memory_coordinator(job_graph(), config)
        coordinator = kit.coordinator
        kit.gateway.source_enumerators = {source_id(kit): StubEnumerator()}
        if restore == "NO_CLAIM-reupload":  # a storage that cannot duplicate
            kit.storage.duplicate_method = lambda uri: None  # type: ignore[method-assign]
        restored: list[FileHandle] = []
        if restore is not None:
            plan, _ = await coordinator.restore(pointer)
            if restore == "NO_CLAIM":  # duplicated: the backend reuses them, restored in place
                restored = list(plan.metadata.shared_files)
        coordinator.start()
        full_next = restore == "NO_CLAIM-reupload"
        # what a backend reuses: the newest completed checkpoint's files when the barrier came
        # (a CLAIM restore's included: restored in place), but only those that every earlier
        # checkpoint still pending then holds too (the RocksDB backend's rule, FLINK-29913: an
        # earlier one may complete, subsume the base and take its other files with it)
        bases: dict[int, list[FileHandle]] = {}
        earlier: dict[int, set[int]] = {}  # per checkpoint, those pending when it was taken
        files_of: dict[int, set[FileHandle]] = {}  # per completed checkpoint, its files
        deletions = _count_deletions(kit)
        for step in steps:
            if step[0] == "trigger":
                before = set(coordinator.pending)
                kit.clock.advance(100)
                for cid in set(coordinator.pending) - before:
                    barrier = kit.gateway.triggered[-1][2]
                    assert barrier.checkpoint_id == cid
                    kind = barrier.options.snapshot_type
                    if full_next:
                        assert kind is SnapshotType.FULL_CHECKPOINT, "first after a restore"
                    elif restored:
                        assert kind is SnapshotType.CHECKPOINT, "duplicated: incremental"
            for cid in set(coordinator.pending) - set(bases):  # also triggered by a completion
                bases[cid] = _newest_completed_files(coordinator, cid) or restored
                earlier[cid] = {c for c in coordinator.pending if c < cid}
            if step[0] in ("ack", "ack-newest", "partial") and coordinator.pending:
                cid = (max if step[0] == "ack-newest" else min)(coordinator.pending)
                kind = coordinator.pending[cid].props.barrier.options.snapshot_type
                full = kind is SnapshotType.FULL_CHECKPOINT or not step[2]
                # an earlier one not completed (yet): its files are unknown here, reuse none
                reuse = (
                    []
                    if full
                    else [
                        f for f in bases[cid] if all(f in files_of.get(c, ()) for c in earlier[cid])
                    ]
                )
                _ack(kit, cid, reuse, step[1], one=step[0] == "partial")
                await coordinator.finish_completing()
                if cid in coordinator.metadata:
                    files_of[cid] = set(coordinator.metadata[cid].shared_files)
                    full_next = False
                    restored = []
            elif step[0] == "decline" and coordinator.pending:
                cid = min(coordinator.pending)
                vertex_id, subtask = sorted(coordinator.pending[cid].not_yet_acknowledged)[0]
                declined = CheckpointFailureReason.CHECKPOINT_DECLINED
                coordinator.receive_decline(
                    VertexId(vertex_id), SubtaskIndex(subtask), CheckpointId(cid), declined, "t"
                )
            await _drain()
            _check(kit, old_storage, old_before, claimed, restore)
            twice = sorted(uri for uri, n in deletions.items() if n > 1)
            assert not twice, f"shared files deleted twice: {twice}"
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    asyncio.run(scenario())


def _newest_completed_files(coordinator: Any, cid: int) -> list[FileHandle]:
    """The shared files of the newest retained checkpoint before ``cid`` (none: empty)."""
    older = [c for c in coordinator.metadata if c < cid]
    return list(coordinator.metadata[max(older)].shared_files) if older else []


def _count_deletions(kit: CoordinatorUnderTest) -> dict[str, int]:
    """Count, per file, how often the coordinator decides to delete it (once is right)."""
    counts: dict[str, int] = {}
    shared_files = kit.coordinator.shared_files
    delete = shared_files.delete

    def counting(release: Release) -> None:
        for uri in release.delete:
            counts[uri] = counts.get(uri, 0) + 1
        delete(release)

    shared_files.delete = counting  # type: ignore[method-assign]
    return counts


def _check(
    kit: CoordinatorUnderTest,
    old_storage: CheckpointStorage | None,
    old_before: dict[str, bytes],
    claimed: list[str],
    restore: str | None,
) -> None:
    coordinator = kit.coordinator
    files = _contents(kit.storage)
    root = kit.storage.job_uri.split("://", 1)[-1]
    referenced: set[str] = set()
    for entry in coordinator.store.all():
        meta = coordinator.metadata.get(entry.checkpoint_id)
        if meta is None:
            continue
        # the claimed snapshot's own files are checked below; its adopted links are here
        for handle in meta.shared_files:
            path = f"{root}/{handle.path}"
            assert path in files, f"{path} of retained checkpoint {entry.checkpoint_id} deleted"
            referenced.add(path)
    for pending in coordinator.pending.values():
        for state in pending.acknowledged_states.values():
            referenced.update(f"{root}/{h.path}" for h in state.shared)
    held = coordinator.retention.duplicates_held  # a NO_CLAIM restore's, until a completion
    if held is not None:
        referenced.update(u.split("://", 1)[-1] for u in coordinator.shared_files.registry
                          .files_of(held))  # fmt: skip
    orphans = sorted(p for p in files if "/shared/" in p and p not in referenced)
    assert not orphans, f"owned, unreferenced shared files left: {orphans}"
    if old_storage is None:
        return
    now = _contents(old_storage)
    held = {e.checkpoint_id for e in coordinator.store.all()}
    restored_id = 1  # the other job's first checkpoint
    if restore in ("NO_CLAIM", "NO_CLAIM-reupload"):
        assert now == old_before, "NO_CLAIM: a restored file changed or went"
    elif claimed and restored_id not in held:
        left = [p for p in claimed if p in now]
        assert not left, f"CLAIM: the claimed checkpoint left the store, its files stay: {left}"
    else:
        assert all(now.get(p) == old_before[p] for p in claimed), "CLAIM: deleted while held"
