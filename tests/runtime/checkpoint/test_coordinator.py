"""The checkpoint coordinator's shell with the testing kit's fakes: a manual clock, a fake task
gateway and in-memory storage. What it sends to tasks, what it commits, and the one event per
step that the statistics tracker consumes."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.runtime.checkpoint.job_graphs import two_sources_keyed_map

from undertow.graph.job_graph import JobGraph
from undertow.runtime.checkpoint.barrier import SnapshotType
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.events import Aborted, Acknowledged, Completed, Triggered
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.master.checkpoint_stats import CheckpointStatsTracker, CheckpointStatus
from undertow.testing.coordinator import CoordinatorUnderTest, in_memory_coordinator

INTERVAL = {"execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.timeout": "1 s"}  # fmt: skip


def job_graph() -> JobGraph:
    return two_sources_keyed_map("coordinator test")


def run(test: Callable[[CoordinatorUnderTest], Awaitable[None]], **options: str) -> None:
    async def main() -> None:
        kit = in_memory_coordinator(job_graph(), {**INTERVAL, **options})
        await test(kit)

    asyncio.run(main())


def test_without_an_interval_nothing_is_triggered_but_savepoints_may_start() -> None:
    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph(), {})
        coordinator: CheckpointCoordinator = kit.coordinator
        assert not coordinator.enabled
        coordinator.start()
        kit.clock.advance(60_000)
        assert kit.gateway.triggered == [] and coordinator.is_active
        assert not coordinator.periodic

    asyncio.run(scenario())


def test_a_periodic_checkpoint_is_triggered_acknowledged_and_completed() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        coordinator.start()
        assert gateway.triggered == []
        clock.advance(100)  # the first trigger comes within one interval
        sources = [(v.id, s) for v in coordinator.graph.vertices if v.is_source
                   for s in range(v.parallelism)]  # fmt: skip
        assert sorted(gateway.barriers_of(1)) == sources
        [triggered] = kit.events
        assert triggered == Triggered(1, triggered.timestamp, False, False)

        kit.acknowledge_all(1, {"state_size": 10})
        await coordinator.finish_completing()

        acks = [e for e in kit.events if isinstance(e, Acknowledged)]
        assert len(acks) == 4 and {(a.vertex_id, a.subtask) for a in acks} == set(
            (v.id, s) for v in coordinator.graph.vertices for s in range(v.parallelism)
        )
        completed = kit.events[-1]
        assert isinstance(completed, Completed) and completed.checkpoint_id == 1
        assert completed.external_path == kit.storage.checkpoint_pointer(1)
        assert completed.retained == (1,) and not completed.is_savepoint
        assert kit.storage.completed_checkpoint_ids() == [1] and kit.storage.read_metadata(1)
        assert gateway.completed == [1]
        assert kit.console[-1].startswith("checkpoint 1 completed in ")
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario)


def test_an_expired_checkpoint_is_aborted_with_its_reason_at_the_timeout() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        tracker = CheckpointStatsTracker({v.id: v.parallelism for v in coordinator.graph.vertices})
        coordinator.listener = lambda event: (kit.events.append(event), tracker.on_event(event))
        coordinator.start()
        clock.advance(100)
        [triggered] = kit.events
        assert isinstance(triggered, Triggered) and 1 in coordinator.pending
        clock.advance(triggered.timestamp + 999 - clock.now_ms())
        assert 1 in coordinator.pending, "not before the timeout"
        clock.advance(1)
        assert 1 not in coordinator.pending and gateway.aborted == [1]
        aborted = next(e for e in kit.events if isinstance(e, Aborted))
        assert aborted.reason is CheckpointFailureReason.CHECKPOINT_EXPIRED
        entry = tracker.snapshot().latest_failed
        assert entry is not None and entry.status is CheckpointStatus.FAILED
        assert entry.failure_message == CheckpointFailureReason.CHECKPOINT_EXPIRED.message
        assert entry.failure_timestamp == clock.now_ms()
        assert gateway.failures == [], "one expiry is within the configured tolerance"
        assert kit.console[-1] == (
            f"checkpoint 1 of job {coordinator.job_id[:8]} failed: checkpoint expired before "
            "completing; tolerated (1 of 1 in a row)"
        ), "a tolerated failure is shown, not only logged"
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario, **{"execution.checkpointing.tolerable-failed-checkpoints": "1"})


def test_a_decline_aborts_names_the_subtask_and_fails_the_job_past_the_tolerance() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        coordinator.start()
        clock.advance(100)
        double = next(v for v in coordinator.graph.vertices if not v.is_source)
        reason = CheckpointFailureReason.CHECKPOINT_DECLINED
        coordinator.receive_decline(double.id, 1, 1, reason, "disk full")
        [aborted] = [e for e in kit.events if isinstance(e, Aborted)]
        assert aborted.reason is reason
        assert aborted.message == f"{reason.message} (subtask 1 of '{double.name}'): disk full"
        assert gateway.aborted == [1]
        [failure] = gateway.failures  # no tolerable failures by default
        assert isinstance(failure, CheckpointException)
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario)


def test_stopping_aborts_pending_checkpoints_once_without_notifying_tasks() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        coordinator.start()
        clock.advance(100)
        coordinator.stop(CheckpointFailureReason.JOB_FAILOVER_REGION)
        [aborted] = [e for e in kit.events if isinstance(e, Aborted)]
        assert aborted.reason is CheckpointFailureReason.JOB_FAILOVER_REGION
        assert gateway.aborted == [] and clock.pending_timers == 0
        coordinator.stop(CheckpointFailureReason.JOB_FAILOVER_REGION)
        assert len([e for e in kit.events if isinstance(e, Aborted)]) == 1
        clock.advance(10_000)
        assert len(gateway.triggered) == 2, "no trigger after stop"

    run(scenario)


def test_a_savepoint_is_exported_reported_once_and_not_notified() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, gateway = kit.coordinator, kit.gateway
        coordinator.start()  # no interval: only savepoints
        target = f"memory:///savepoints-{uuid.uuid4().hex}"
        future = coordinator.trigger_savepoint(SavepointRequest(target))
        [(_, _, barrier), _] = gateway.triggered
        assert barrier.options.snapshot_type is SnapshotType.SAVEPOINT
        assert gateway.stopped == []
        kit.acknowledge_all(barrier.checkpoint_id)
        await coordinator.finish_completing()
        pointer = await future
        assert pointer == f"{target}/savepoint-job-un-{barrier.checkpoint_id}"
        triggered, *_, completed = kit.events
        assert triggered == Triggered(
            barrier.checkpoint_id, barrier.timestamp, False, True, "CANONICAL"
        )
        assert completed == Completed(barrier.checkpoint_id, completed.timestamp, pointer,
                                      is_savepoint=True, retained=None)  # fmt: skip
        assert gateway.completed == [], "tasks hear only of a stop's savepoint"
        assert kit.storage.completed_checkpoint_ids() == [], "not the job's checkpoint"

    asyncio.run(_with(scenario, {}))


def test_a_stop_with_savepoint_stops_the_sources_before_their_barrier() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        coordinator.start()
        target = f"memory:///savepoints-{uuid.uuid4().hex}"
        future = coordinator.trigger_savepoint(SavepointRequest(target, stop=True, drain=True))
        sources = sorted((v, s) for v, s, _ in gateway.triggered)
        assert sorted((v, s) for v, s, _ in gateway.stopped) == sources
        assert all(drain for _, _, drain in gateway.stopped)
        barrier = gateway.triggered[0][2]
        assert barrier.options.snapshot_type is SnapshotType.SYNC_SAVEPOINT
        clock.advance(900)  # nine intervals, within the savepoint's timeout
        assert len(gateway.triggered) == 2, "no periodic checkpoint after the stop"
        kit.acknowledge_all(barrier.checkpoint_id)
        await coordinator.finish_completing()
        assert await future == f"{target}/savepoint-job-un-{barrier.checkpoint_id}"
        assert gateway.completed == [barrier.checkpoint_id]

    asyncio.run(_with(scenario, INTERVAL))


def test_a_savepoint_starts_beside_a_pending_aligned_checkpoint_not_an_unaligned_one() -> None:
    # issue 17: under backpressure an aligned checkpoint is nearly always pending; waiting for
    # it cost up to a checkpoint's time. Aligned barriers keep their order, so it need not wait.
    for options, waits in (({}, False), ({"execution.checkpointing.unaligned.enabled": "true"},
                                          True)):  # fmt: skip

        async def scenario(kit: CoordinatorUnderTest, waits: bool = waits) -> None:
            coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
            coordinator.start()
            clock.advance(100)
            assert list(coordinator.pending) == [1]
            target = f"memory:///savepoints-{uuid.uuid4().hex}"
            future = coordinator.trigger_savepoint(SavepointRequest(target, stop=True))
            started = sorted({b.checkpoint_id for _, _, b in gateway.triggered})
            assert started == ([1] if waits else [1, 2])
            kit.acknowledge_all(1)
            await coordinator.finish_completing()
            assert sorted({b.checkpoint_id for _, _, b in gateway.triggered}) == [1, 2]
            kit.acknowledge_all(2)
            await coordinator.finish_completing()
            assert await future == f"{target}/savepoint-job-un-2"
            assert gateway.completed == [1, 2]

        asyncio.run(_with(scenario, {**INTERVAL, **options}))


def test_every_savepoint_request_gets_an_answer_while_one_waits() -> None:
    # One savepoint waits at most (beside an unaligned checkpoint). A second request is
    # refused at once; a stop with savepoint takes the waiting one's place, whose caller is
    # told. Before, the second request replaced the first, whose future never resolved.
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock = kit.coordinator, kit.clock
        coordinator.start()
        clock.advance(100)
        assert list(coordinator.pending) == [1], "an unaligned checkpoint is pending"
        base = f"memory:///savepoints-{uuid.uuid4().hex}"
        first = coordinator.trigger_savepoint(SavepointRequest(f"{base}/a"))
        second = coordinator.trigger_savepoint(SavepointRequest(f"{base}/b"))
        with pytest.raises(CheckpointException, match=rf"{base}/b refused: .*{base}/a already"):
            await asyncio.wait_for(second, 1)
        assert not first.done(), "the waiting savepoint keeps its place"
        stop = coordinator.trigger_savepoint(SavepointRequest(f"{base}/c", stop=True))
        with pytest.raises(CheckpointException, match=rf"{base}/a did not start: a stop"):
            await asyncio.wait_for(first, 1)
        kit.acknowledge_all(1)
        await coordinator.finish_completing()
        kit.acknowledge_all(2)
        await coordinator.finish_completing()
        assert await asyncio.wait_for(stop, 1) == f"{base}/c/savepoint-job-un-2"

    asyncio.run(_with(scenario, {**INTERVAL, "execution.checkpointing.unaligned.enabled": "true"}))


def test_an_unaligned_stop_with_savepoint_sends_unaligned_sync_savepoint_barriers() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, gateway = kit.coordinator, kit.gateway
        coordinator.start()
        target = f"memory:///savepoints-{uuid.uuid4().hex}"
        future = coordinator.trigger_savepoint(SavepointRequest(target, stop=True, unaligned=True))
        barrier = gateway.triggered[0][2]
        assert barrier.options.snapshot_type is SnapshotType.SYNC_SAVEPOINT
        assert barrier.options.is_unaligned and barrier.priority
        assert not any(drain for _, _, drain in gateway.stopped)
        kit.acknowledge_all(barrier.checkpoint_id)
        await coordinator.finish_completing()
        assert await future == f"{target}/savepoint-job-un-{barrier.checkpoint_id}"

    asyncio.run(_with(scenario, {**INTERVAL, "execution.checkpointing.unaligned.enabled": "true"}))


def test_an_unaligned_savepoint_is_refused_when_tasks_write_no_channel_state() -> None:
    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, gateway = kit.coordinator, kit.gateway
        coordinator.start()
        future = coordinator.trigger_savepoint(SavepointRequest("memory:///sp", unaligned=True))
        with pytest.raises(CheckpointException, match=r"unaligned\.enabled"):
            await future
        assert gateway.triggered == [], "nothing was triggered"

    asyncio.run(_with(scenario, {}))


def test_drain_and_unaligned_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="drain and unaligned"):
        SavepointRequest("/sp", stop=True, drain=True, unaligned=True)


async def _with(
    scenario: Callable[[CoordinatorUnderTest], Awaitable[None]], options: dict[str, str]
) -> None:
    await scenario(in_memory_coordinator(job_graph(), options))


def test_a_checkpoint_whose_attempt_ended_while_finalizing_is_aborted_without_an_error_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A job cancelled while its checkpoint's metadata is written: the executor may already be
    shut down. The checkpoint is aborted, and no error with a traceback is logged."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator = kit.coordinator
        coordinator.start()
        kit.clock.advance(100)

        def executor_gone(cid: int, payload: bytes) -> str:
            coordinator.stop(CheckpointFailureReason.JOB_FAILOVER_REGION)  # the attempt ends
            raise RuntimeError("cannot schedule new futures after shutdown")

        kit.storage.commit_metadata = executor_gone  # type: ignore[method-assign]
        kit.acknowledge_all(1, {})
        await coordinator.finish_completing()
        assert 1 not in coordinator.pending and not kit.storage.completed_checkpoint_ids()
        assert isinstance(kit.events[-1], Aborted) and kit.events[-1].checkpoint_id == 1

    with caplog.at_level("INFO", logger="undertow.runtime.checkpoint.coordinator"):
        run(scenario)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert not errors, [r.getMessage() for r in errors]
    assert any("not finalized: the attempt ended" in r.getMessage() for r in caplog.records)


def test_a_checkpoint_finalized_after_a_later_one_completed_is_subsumed_not_notified() -> None:
    """Two checkpoints finalise at once and the later one's ``_metadata`` is written first:
    the earlier one is subsumed as if still pending. Notified late, it would reach sinks and
    incremental backends after the later one; its directory goes."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, storage = kit.coordinator, kit.storage
        commit, first_may_commit = storage.commit_metadata, threading.Event()

        def commit_in_reverse(cid: int, payload: bytes) -> str:
            if cid == 1:
                assert first_may_commit.wait(10), "checkpoint 2 never completed"
            return commit(cid, payload)

        storage.commit_metadata = commit_in_reverse  # type: ignore[method-assign]
        coordinator.start()
        kit.clock.advance(100)
        kit.clock.advance(100)
        assert sorted(coordinator.pending) == [1, 2]
        kit.acknowledge_all(1)
        kit.acknowledge_all(2)
        while kit.gateway.completed != [2]:
            await asyncio.sleep(0.005)
        first_may_commit.set()
        await coordinator.finish_completing()
        assert kit.gateway.completed == [2] and kit.gateway.aborted == []
        last = kit.events[-1]
        assert isinstance(last, Aborted) and last.checkpoint_id == 1
        assert last.reason is CheckpointFailureReason.CHECKPOINT_SUBSUMED
        assert [e.checkpoint_id for e in coordinator.retention.store.all()] == [2]
        assert not any(line.startswith("checkpoint 1 ") for line in kit.console)
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario, **{"execution.checkpointing.max-concurrent-checkpoints": "2"})


def test_without_checkpoints_after_tasks_finish_a_finished_task_ends_checkpointing() -> None:
    """The one place that reads ``checkpoints-after-tasks-finish`` (the attempt only reports
    finished tasks): off, the first finished subtask aborts what is pending and stops the
    periodic trigger (as before FLIP-147); on, the checkpoint goes on without it."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock, gateway = kit.coordinator, kit.clock, kit.gateway
        coordinator.start()
        clock.advance(100)
        source = next(v for v in coordinator.graph.vertices if v.is_source)
        coordinator.on_task_finished(source.id, 0)
        [aborted] = [e for e in kit.events if isinstance(e, Aborted)]
        assert aborted.reason is CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        assert not coordinator.is_active and clock.pending_timers == 0
        clock.advance(1_000)
        assert len(gateway.triggered) == 2, "no trigger after the first finished task"

    run(scenario, **{"execution.checkpointing.checkpoints-after-tasks-finish": "false"})

    async def with_final_checkpoints(kit: CoordinatorUnderTest) -> None:
        coordinator, clock = kit.coordinator, kit.clock
        coordinator.start()
        clock.advance(100)
        source = next(v for v in coordinator.graph.vertices if v.is_source)
        coordinator.on_task_finished(source.id, 0)
        assert 1 in coordinator.pending and coordinator.is_active
        assert not [e for e in kit.events if isinstance(e, Aborted)]
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(with_final_checkpoints)


class _Enumerator:
    def snapshot_state(self, checkpoint_id: int) -> list[str]:
        return [f"split-{checkpoint_id}"]


def test_the_enumerators_state_is_written_while_the_tasks_take_their_part() -> None:
    """Started at the trigger, not after the last acknowledgement: the completion then waits
    for no write of its own but ``_metadata``'s (written once, read back by the restore)."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, storage = kit.coordinator, kit.storage
        [source] = [v.id for v in coordinator.graph.vertices if v.is_source]
        kit.gateway.source_enumerators = {source: _Enumerator()}
        steps: list[str] = []
        write_file = storage.write_file

        def recording_write(checkpoint_id: int, name: str, data: bytes) -> Any:
            steps.append(f"write {name}")
            return write_file(checkpoint_id, name, data)

        storage.write_file = recording_write  # type: ignore[method-assign]
        coordinator.start()
        kit.clock.advance(100)
        for _ in range(200):  # the executor's thread writes it
            if steps:
                break
            await asyncio.sleep(0.005)
        steps.append("acknowledged")
        kit.acknowledge_all(1)
        await coordinator.finish_completing()
        assert steps == [f"write enumerator-v{source}.state", "acknowledged"]
        meta = decode_metadata(
            storage.read_metadata(1), b"k" * 32, "chk-1", expected_checkpoint_id=1
        )
        assert set(meta.coordinators) == {source}
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario)


def test_an_aborted_checkpoints_enumerator_writes_are_not_held() -> None:
    """A decline aborts checkpoint 1 after its enumerator's write started: the write is no
    longer held for a completion (a job declining checkpoints for days must not pile them
    up), and checkpoint 2 starts and completes with writes of its own."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, clock = kit.coordinator, kit.clock
        [source] = [v.id for v in coordinator.graph.vertices if v.is_source]
        kit.gateway.source_enumerators = {source: _Enumerator()}
        coordinator.start()
        clock.advance(100)
        assert coordinator.finalizer.writing_enumerators_of == {1}
        double = next(v for v in coordinator.graph.vertices if not v.is_source)
        coordinator.receive_decline(
            double.id, 0, 1, CheckpointFailureReason.CHECKPOINT_DECLINED, "disk full"
        )
        assert coordinator.finalizer.writing_enumerators_of == frozenset()
        clock.advance(100)
        assert coordinator.finalizer.writing_enumerators_of == {2}
        kit.acknowledge_all(2)
        await coordinator.finish_completing()
        assert coordinator.finalizer.writing_enumerators_of == frozenset()
        meta = decode_metadata(
            kit.storage.read_metadata(2), b"k" * 32, "chk-2", expected_checkpoint_id=2
        )
        assert set(meta.coordinators) == {source}
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario, **{"execution.checkpointing.tolerable-failed-checkpoints": "1"})


def test_the_final_checkpoint_starts_once_every_subtask_reached_the_end_of_its_data() -> None:
    """FLINK-28386: not at the next period (ten minutes away here), and a subtask that finished
    counts as one that reached its end."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, gateway = kit.coordinator, kit.gateway
        coordinator.start()
        subtasks = [(v.id, s) for v in coordinator.graph.vertices for s in range(v.parallelism)]
        *waiting, last = subtasks
        for vertex_id, subtask in waiting:
            coordinator.on_task_end_of_data(vertex_id, subtask)  # type: ignore[arg-type]
        assert gateway.triggered == [], "not before every subtask reached its end"
        coordinator.on_task_finished(*last)  # type: ignore[arg-type]
        assert gateway.barriers_of(1), "at once"
        coordinator.on_task_end_of_data(*waiting[0])  # type: ignore[arg-type]
        assert not gateway.barriers_of(2), "requested once"
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario, **{"execution.checkpointing.interval": "10 min",
                     "execution.checkpointing.min-pause": "10 min"})  # fmt: skip


def test_ends_of_data_reported_before_the_attempt_started_request_it_at_the_start() -> None:
    """A bounded source can end while other subtasks still deploy (the coordinator starts once
    all are running); its report counts then, and an ended attempt's reports do not carry over."""

    async def scenario(kit: CoordinatorUnderTest) -> None:
        coordinator, gateway = kit.coordinator, kit.gateway
        subtasks = [(v.id, s) for v in coordinator.graph.vertices for s in range(v.parallelism)]
        for vertex_id, subtask in subtasks:
            coordinator.on_task_end_of_data(vertex_id, subtask)  # type: ignore[arg-type]
        assert gateway.triggered == []
        coordinator.start()
        assert gateway.barriers_of(1), "at the start"
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
        coordinator.on_task_end_of_data(*subtasks[0])  # type: ignore[arg-type]
        coordinator.start()
        assert not gateway.barriers_of(2), "one subtask of the new attempt reached its end"
        for vertex_id, subtask in subtasks[1:]:
            coordinator.on_task_end_of_data(vertex_id, subtask)  # type: ignore[arg-type]
        assert gateway.barriers_of(2), "the new attempt's final checkpoint"
        coordinator.stop(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)

    run(scenario, **{"execution.checkpointing.interval": "10 min",
                     "execution.checkpointing.min-pause": "10 min"})  # fmt: skip
