"""The coordinator shell's restore path with the testing kit (fake gateway, in-memory storage,
manual clock): what a failover and a start from ``execution.state-recovery.path`` restore, how
the claim mode is applied, and that every file is read on the executor, never on the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.runtime.checkpoint.job_graphs import two_sources_keyed_map

from undertow.core.types import SubtaskIndex, VertexId
from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import SnapshotType
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.storage.checkpoint_storage import CheckpointStorage
from undertow.storage.errors import CheckpointNotFoundError
from undertow.testing.coordinator import CoordinatorUnderTest, in_memory_coordinator

INTERVAL = {"execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.timeout": "1 s"}  # fmt: skip


def job_graph() -> JobGraph:
    return two_sources_keyed_map("restore test")


class StubEnumerator:
    """An enumerator whose state names the checkpoint it was taken for."""

    def snapshot_state(self, checkpoint_id: int) -> dict[str, int]:
        return {"checkpoint": checkpoint_id}


def source_id(kit: CoordinatorUnderTest) -> int:
    [source] = [v.id for v in kit.coordinator.graph.vertices if v.is_source]
    return source


async def complete_checkpoints(kit: CoordinatorUnderTest, count: int) -> None:
    """Start the coordinator and complete ``count`` periodic checkpoints; then stop it."""
    kit.gateway.source_enumerators = {source_id(kit): StubEnumerator()}
    kit.coordinator.start()
    for _ in range(count):
        kit.clock.advance(100)
        kit.acknowledge_all(max(kit.coordinator.pending))
        await kit.coordinator.finish_completing()
    kit.coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(method, thread id) of every metadata or state file read, by any storage."""
    seen: list[tuple[str, int]] = []
    for name in ("read_file", "read_metadata"):
        original = getattr(CheckpointStorage, name)

        def recording(self: CheckpointStorage, *args: Any, _o: Any = original,
                      _n: str = name) -> Any:  # fmt: skip
            seen.append((_n, threading.get_ident()))
            return _o(self, *args)

        monkeypatch.setattr(CheckpointStorage, name, recording)
    return seen


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


def test_a_failover_plans_from_the_newest_checkpoint_reading_on_the_executor(
    reads: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph(), INTERVAL)
        assert await kit.coordinator.latest_restore_plan() is None  # nothing completed yet
        await complete_checkpoints(kit, 2)
        reads.clear()
        plan = await kit.coordinator.latest_restore_plan()
        assert plan is not None and plan.metadata.checkpoint_id == 2
        assert plan.enumerator_states == {source_id(kit): {"checkpoint": 2}}
        assert plan.checkpoint_dir == kit.storage.root_uri and plan.job_id == kit.storage.job_id
        assert [name for name, _ in reads] == ["read_file"]  # the enumerator's state
        assert threading.get_ident() not in {thread for _, thread in reads}

    run(scenario)


def test_a_start_from_a_path_without_claim_reads_off_the_loop_and_forces_a_full_checkpoint(
    reads: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        old = in_memory_coordinator(job_graph(), INTERVAL)
        await complete_checkpoints(old, 3)
        path = old.storage.checkpoint_pointer(3)
        kit = in_memory_coordinator(job_graph(), INTERVAL)
        reads.clear()
        plan, mode = await kit.coordinator.restore(path)
        assert mode is RecoveryClaimMode.NO_CLAIM
        assert plan.metadata.checkpoint_id == 3 and plan.pointer == path
        assert plan.enumerator_states == {source_id(kit): {"checkpoint": 3}}
        assert sorted(name for name, _ in reads) == ["read_file", "read_metadata"]
        assert threading.get_ident() not in {thread for _, thread in reads}
        # not claimed: a failover before the first checkpoint restores the path again
        assert await kit.coordinator.latest_restore_plan() is None
        kit.coordinator.start()
        kit.clock.advance(100)
        [(_, _, barrier), *_] = kit.gateway.triggered
        assert barrier.checkpoint_id == 4  # ids go on after the restored one
        assert barrier.options.snapshot_type is SnapshotType.FULL_CHECKPOINT
        kit.coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario)


def test_a_claimed_snapshot_is_what_a_failover_restores_without_reading_again(
    reads: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        old = in_memory_coordinator(job_graph(), INTERVAL)
        await complete_checkpoints(old, 1)
        path = old.storage.checkpoint_pointer(1)
        claim = {**INTERVAL, "execution.state-recovery.claim-mode": "CLAIM"}
        kit = in_memory_coordinator(job_graph(), claim)
        plan, mode = await kit.coordinator.restore(path)
        assert mode is RecoveryClaimMode.CLAIM
        reads.clear()
        assert await kit.coordinator.latest_restore_plan() is plan
        assert reads == []

    run(scenario)


def test_a_missing_path_fails_the_restore_naming_it() -> None:
    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph(), INTERVAL)
        missing = kit.storage.checkpoint_pointer(9)
        with pytest.raises(CheckpointNotFoundError, match="chk-9"):
            await kit.coordinator.restore(missing)
        assert kit.coordinator.next_id == 1  # nothing was claimed

    run(scenario)


def test_subtasks_finishing_while_pending_are_recorded_and_trigger_their_successors() -> None:
    """FLIP-147 on the pending checkpoint's record: both source subtasks finish after the
    trigger; they count as acknowledged without state, the map subtasks get the barrier late,
    and the completed metadata marks the source vertex finished."""

    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph(), INTERVAL)
        coordinator, source = kit.coordinator, source_id(kit)
        [downstream] = [v.id for v in coordinator.graph.vertices if not v.is_source]
        coordinator.start()
        kit.clock.advance(100)
        assert sorted(kit.gateway.barriers_of(1)) == [(source, 0), (source, 1)]
        coordinator.on_task_finished(VertexId(source), SubtaskIndex(0))
        coordinator.on_task_finished(VertexId(source), SubtaskIndex(1))
        props = coordinator.pending[1].props
        assert props.finished == {(source, 0), (source, 1)}
        assert props.triggered == {(source, 0), (source, 1), (downstream, 0), (downstream, 1)}
        assert sorted(kit.gateway.barriers_of(1))[2:] == [(downstream, 0), (downstream, 1)]
        kit.acknowledge_all(1)
        await coordinator.finish_completing()
        finished = {v.vertex_id: v.finished for v in coordinator.metadata[1].vertices}
        assert finished == {source: True, downstream: False}
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario)
