"""Restoring a snapshot, without the coordinator shell: read and verified from a path, then
claimed (CLAIM: retained as the job's own; NO_CLAIM: not retained, the first checkpoint full),
and where a failover restores from. Snapshots are made by a coordinator on the testing kit."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
import uuid

import pytest
from tests.runtime.checkpoint.job_graphs import two_sources_keyed_map

from undertow.common import Configuration
from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, encode_metadata
from undertow.runtime.checkpoint.metadata_model import VertexMetadata
from undertow.runtime.checkpoint.retention import CheckpointRetention
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.runtime.checkpoint.snapshot_restore import SnapshotRestore
from undertow.storage import FileHandle
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.keys import CheckpointKey
from undertow.testing.coordinator import in_memory_coordinator

INTERVAL = {"execution.checkpointing.interval": "100 ms"}


def job_graph() -> JobGraph:
    return two_sources_keyed_map("snapshot restore test")


async def checkpoint_path(count: int) -> str:
    """A job on the testing kit completes ``count`` checkpoints; the newest one's path."""
    kit = in_memory_coordinator(job_graph(), INTERVAL)
    kit.coordinator.start()
    for _ in range(count):
        kit.clock.advance(100)
        kit.acknowledge_all(max(kit.coordinator.pending))
        await kit.coordinator.finish_completing()
    kit.coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
    return kit.storage.checkpoint_pointer(count)


def restorer(options: dict[str, str]) -> SnapshotRestore:
    """A restore for a new job on its own in-memory storage (the kit's metadata key)."""
    config = Configuration({**INTERVAL, **options})
    storage = CheckpointStorage.in_memory("job-new")
    settings = CheckpointSettings.of(config)
    return SnapshotRestore("job-new", job_graph(), storage, CheckpointKey.of(b"k" * 32),
                           settings, CheckpointRetention("job-new", storage, 1))  # fmt: skip


def test_no_claim_retains_nothing_and_asks_for_a_full_checkpoint_once() -> None:
    async def scenario() -> None:
        restore = restorer({})
        plan, adopted = await restore.read_and_adopt(await checkpoint_path(2))
        assert plan.metadata.checkpoint_id == 2 and adopted == []
        assert restore.claim(plan, adopted, next_id=1) == 3
        assert restore.full_snapshot_due and len(restore.retention.store) == 0
        assert await restore.latest_plan() is None  # a failover restores the path again
        restore.checkpoint_completed()
        assert not restore.full_snapshot_due

    asyncio.run(scenario())


def test_claim_retains_the_snapshot_as_what_a_failover_restores() -> None:
    async def scenario() -> None:
        restore = restorer({"execution.state-recovery.claim-mode": "CLAIM"})
        path = await checkpoint_path(1)
        plan, adopted = await restore.read_and_adopt(path)
        assert restore.claim(plan, adopted, next_id=5) == 5  # ids never go back
        assert not restore.full_snapshot_due
        assert restore.retention.claimed == (1, plan) and plan.pointer == path
        assert await restore.latest_plan() is plan

    asyncio.run(scenario())


def test_claimed_shared_files_not_adopted_make_the_first_checkpoint_full() -> None:
    async def scenario() -> None:
        restore = restorer({"execution.state-recovery.claim-mode": "CLAIM"})
        plan, _ = await restore.read_and_adopt(await checkpoint_path(1))
        shared = (FileHandle("shared/sst-1", 1, "0" * 64),)
        meta = dataclasses.replace(plan.metadata, shared_files=shared)
        assert restore.claim(dataclasses.replace(plan, metadata=meta), [], next_id=1) == 2
        assert restore.full_snapshot_due

    asyncio.run(scenario())


def _savepoint(
    old: CheckpointStorage, checkpoint_id: int, *vertices: VertexMetadata,
    format_: str = "CANONICAL", **properties: str,
) -> str:  # fmt: skip
    """Savepoint ``checkpoint_id`` of job 'jobold' (its files in ``old``) with ``vertices``,
    exported to a fresh path; that path."""
    meta = CheckpointMetadata(
        job_id="jobold", checkpoint_id=checkpoint_id, trigger_timestamp=1,
        completion_timestamp=2, is_savepoint=True, vertices=vertices,
        properties={"savepoint_format": format_, **properties},
    )  # fmt: skip
    target = f"memory:///savepoints-{uuid.uuid4().hex}"
    return old.export_savepoint(checkpoint_id, target, encode_metadata(meta, b"k" * 32, 1 << 20))


def test_a_native_savepoint_of_another_state_backend_is_refused_naming_the_job() -> None:
    old = CheckpointStorage.in_memory("jobold")
    old.write_file(1, "v1-0.state", b"state")
    pointer = _savepoint(old, 1, format_="NATIVE", state_backend="hashmap")
    restore = restorer({"state.backend.type": "rocksdb"})
    with pytest.raises(RestoreError, match=r"job job-new: savepoint .* NATIVE .*'hashmap'"):
        restore.read(pointer)


@pytest.mark.parametrize("ignore", [False, True])
def test_state_of_an_operator_the_job_lost_fails_unless_ignored(ignore: bool) -> None:
    old = CheckpointStorage.in_memory("jobold")
    handle = old.write_file(1, "v9-0.state", b"state")
    gone = VertexMetadata(vertex_id=9, name="gone", uids=("gone-uid",), parallelism=1,
                          max_parallelism=128, finished=False, subtasks={0: handle})  # fmt: skip
    pointer = _savepoint(old, 1, gone)
    restore = restorer({"execution.state-recovery.ignore-unclaimed-state": str(ignore)})
    if ignore:
        assert restore.read(pointer).subtask_files == {}  # the old state is dropped
    else:
        with pytest.raises(RestoreError, match="gone-uid"):
            restore.read(pointer)


def _savepoint_of_the_map(max_parallelism: int, with_state: bool = True) -> str:
    """A savepoint of the test job whose keyed map vertex was taken with ``max_parallelism``
    (``with_state``: one subtask wrote a state file); its path."""
    old = CheckpointStorage.in_memory("jobold")
    vertex = next(v for v in job_graph().vertices if "double" in v.name)
    handle = old.write_file(1, "v2-0.state", b"state")
    mapped = VertexMetadata(
        vertex_id=vertex.id, name=vertex.name, uids=tuple(op.uid for op in vertex.operators),
        parallelism=2, max_parallelism=max_parallelism,
        subtasks={0: handle} if with_state else {},
    )  # fmt: skip
    return _savepoint(old, 1, mapped)


def test_a_changed_max_parallelism_is_refused_naming_path_operator_and_both_values() -> None:
    """Key groups place each key's state: the number of them cannot change across a restore
    (Flink refuses it too). The job's max parallelism is 128; the savepoint's map had 256."""
    pointer = _savepoint_of_the_map(256)
    with pytest.raises(RestoreError) as caught:
        restorer({}).read(pointer)
    message = str(caught.value)
    assert f"cannot restore from {pointer}: operator 'double' (uid " in message
    assert "checkpointed with max parallelism 256" in message
    assert "this job gives it max parallelism 128" in message
    assert "set it back to 256" in message


def test_the_same_max_parallelism_or_an_operator_without_state_restores() -> None:
    assert restorer({}).read(_savepoint_of_the_map(128)).subtask_files
    restorer({}).read(_savepoint_of_the_map(256, with_state=False))  # nothing to misplace


def test_state_of_an_operator_whose_generated_uid_changed_says_what_to_do() -> None:
    """The map has no uid(): its id is generated from the topology, and the savepoint's (an
    operator added upstream, say) differs from this job's. The refusal names the operator,
    says why its id changed and what to do: uid() on stateful operators, or start without
    the state (the option and the CLI flag)."""
    old = CheckpointStorage.in_memory("jobold")
    handle = old.write_file(1, "v9-0.state", b"state")
    gone = VertexMetadata(vertex_id=9, name="double", uids=("double-0123456789abcdef",),
                          parallelism=2, max_parallelism=128, subtasks={0: handle})  # fmt: skip
    pointer = _savepoint(old, 4, gone)
    now = next(op.uid for v in job_graph().vertices for op in v.operators if op.name == "double")
    with pytest.raises(RestoreError) as caught:
        restorer({}).read(pointer)
    message = str(caught.value)
    assert "checkpoint 4 has state of operators this job does not have: " in message
    assert "'double-0123456789abcdef' (operator 'double', which had no uid())" in message
    assert "gets an id generated from the topology" in message
    assert f"(this job generated {now!r})" in message
    assert "Set .uid(...) on stateful operators" in message
    assert "execution.state-recovery.ignore-unclaimed-state: true (undertow run -n" in message


def test_unclaimed_state_names_only_the_operators_that_hold_it() -> None:
    """A chain the job no longer has: a stateless map chained before a keyed sum. Only the
    sum's state would be lost, so the refusal names the sum, not the map."""
    old = CheckpointStorage.in_memory("jobold")
    snapshot = SubtaskSnapshot(operators={"gone-sum": OperatorSnapshot(keyed={3: b"sums"})})
    handles = {i: old.write_file(1, f"v9-{i}.state", pickle.dumps(snapshot)) for i in (0, 1)}
    gone = VertexMetadata(vertex_id=9, name="parse -> sum", uids=("gone-parse", "gone-sum"),
                          parallelism=2, max_parallelism=128, subtasks=handles)  # fmt: skip
    pointer = _savepoint(old, 1, gone)
    with pytest.raises(RestoreError) as caught:
        restorer({}).read(pointer)
    message = str(caught.value)
    assert "checkpoint 1 has state of operators this job does not have: 'gone-sum'. " in message
    assert "gone-parse" not in message
