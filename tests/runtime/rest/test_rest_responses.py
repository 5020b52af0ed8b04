"""Checkpoint statistics and their Flink JSON without a running job: the tracker is fed the
coordinator's events by hand, the view is built by hand, and the responses are checked for
failed, in-progress and restored checkpoints, which a healthy running job rarely shows; and the
live workers of ``GET /taskmanagers`` (a running job's: tests/testing/test_kill_candidates.py)."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from undertow.core.config import Configuration
from undertow.runtime.checkpoint.events import Aborted, Acknowledged, Completed, Triggered
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.runtime.master.metrics import (
    CheckpointStatsTracker,
    ExecutionState,
    JobView,
    SubtaskMetricsView,
    VertexInput,
    VertexView,
    WorkerView,
    aggregate_state,
    summarize,
)
from undertow.runtime.master.rest import responses
from undertow.runtime.master.rest.server import RestEndpoint
from undertow.runtime.master.settings import MasterSettings

T0 = 1_700_000_000_000
SOURCE, SINK = "a" * 32, "b" * 32


def ack(tracker: CheckpointStatsTracker, cid: int, vertex: int, subtask: int, at: int) -> None:
    metrics = {"state_size": 100, "sync_duration_ms": 1.4, "async_duration_ms": 7,
               "alignment_duration_ms": 3, "start_delay_ms": 2, "unaligned": False}  # fmt: skip
    tracker.on_event(Acknowledged(cid, vertex, subtask, at, metrics))


def tracker_with_history() -> CheckpointStatsTracker:
    tracker = CheckpointStatsTracker({0: 1, 1: 2}, history_size=3)
    tracker.report_restored(7, T0 - 1000, "/ckpts/old-job/chk-7")
    for cid in (8, 9, 10, 11):  # 8, 9 complete; 10 is declined; 11 stays in progress
        tracker.on_event(Triggered(cid, T0 + cid * 1000, unaligned=False, is_savepoint=False))
        ack(tracker, cid, 0, 0, T0 + cid * 1000 + 10)
        if cid <= 9:
            ack(tracker, cid, 1, 0, T0 + cid * 1000 + 20)
            ack(tracker, cid, 1, 1, T0 + cid * 1000 + 30)
            tracker.on_event(Completed(cid, T0 + cid * 1000 + 40, f"/ckpts/job/chk-{cid}",
                                       is_savepoint=False, retained=(cid,)))  # fmt: skip
    declined = CheckpointFailureReason.CHECKPOINT_DECLINED
    tracker.on_event(Aborted(10, T0 + 10_500, declined,
                             f"{declined.message} (subtask 1 of 'sink'): disk full"))  # fmt: skip
    ack(tracker, 10, 1, 0, T0 + 10_700)  # late: ignored
    return tracker


def view_of(tracker: CheckpointStatsTracker) -> JobView:
    sample = SubtaskMetricsView(T0, 10, 10, 80, 500, 400, 100, 0.5, 0.4, 0.1)
    vertices = (
        VertexView(0, SOURCE, "Source: s", 1, 128, (ExecutionState.RUNNING,), T0, -1,
                   (sample,), ()),
        VertexView(1, SINK, "Sink: k", 2, 128, (ExecutionState.RUNNING,) * 2, T0, -1,
                   (None, None), (VertexInput(SOURCE, "HASH"),)),
    )  # fmt: skip
    return JobView(
        job_id="c" * 32, name="j", state="RUNNING", job_type="STREAMING", start_time=T0,
        end_time=-1, now=T0 + 20_000, status_timestamps=MappingProxyType({"RUNNING": T0}),
        max_parallelism=128, vertices=vertices, checkpoints=tracker.snapshot(),
        checkpointing=MasterSettings.of(Configuration({
            "execution.checkpointing.interval": "1 s",
            "undertow.checkpointing.hmac-key": "secret",
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        })).checkpoint,
    )  # fmt: skip


def test_counts_latest_and_bounded_history() -> None:
    body = responses.checkpointing_statistics(view_of(tracker_with_history()))
    assert body["counts"] == {"restored": 1, "total": 4, "in_progress": 1, "completed": 2,
                              "failed": 1}  # fmt: skip
    assert [h["id"] for h in body["history"]] == [11, 10, 9]  # newest first, 3 kept
    assert [h["status"] for h in body["history"]] == ["IN_PROGRESS", "FAILED", "COMPLETED"]
    failed = body["latest"]["failed"]
    assert failed["className"] == "failed" and failed["failure_timestamp"] == T0 + 10_500
    assert failed["failure_message"].endswith("disk full")  # the decline says why
    assert failed["num_acknowledged_subtasks"] == 1
    completed = body["latest"]["completed"]
    assert completed["id"] == 9 and completed["end_to_end_duration"] == 30
    assert completed["state_size"] == 300 and completed["external_path"] == "/ckpts/job/chk-9"
    assert completed["tasks"] == {}
    assert body["latest"]["restored"] == {"id": 7, "restore_timestamp": T0 - 1000,
                                          "is_savepoint": False,
                                          "external_path": "/ckpts/old-job/chk-7"}  # fmt: skip
    assert body["summary"]["end_to_end_duration"]["min"] == 30
    assert body["summary"]["state_size"]["avg"] == 300


def test_details_of_checkpoints_in_and_out_of_the_history() -> None:
    view = view_of(tracker_with_history())
    older = view.checkpoints.find(8)  # fell out of the history: not found
    assert older is None
    in_progress = view.checkpoints.find(11)
    assert in_progress is not None
    body = responses.checkpoint_entry(view, in_progress, details=True)
    assert body["className"] == "in_progress" and body["latest_ack_timestamp"] == T0 + 11_010
    sink = body["tasks"][SINK]
    assert sink["num_acknowledged_subtasks"] == 0 and sink["latest_ack_timestamp"] == -1
    assert sink["subtasks"] == [{"index": 0, "status": "pending_or_failed"},
                                {"index": 1, "status": "pending_or_failed"}]  # fmt: skip
    source = body["tasks"][SOURCE]["subtasks"][0]
    assert source["checkpoint"] == {"sync": 1, "async": 7}
    assert source["alignment"]["duration"] == 3 and source["start_delay"] == 2
    completed = view.checkpoints.find(9)
    assert completed is not None
    task = responses.task_checkpoint(completed, view.vertices[1])
    assert task["summary"]["end_to_end_duration"]["max"] == 30
    assert task["summary"]["checkpoint_duration"]["async"]["avg"] == 7


def test_backpressure_without_samples_and_vertex_lookup() -> None:
    view = view_of(tracker_with_history())
    assert responses.vertex_backpressure(view, view.vertices[1]) == {"status": "deprecated"}
    source = responses.vertex_backpressure(view, view.vertices[0])
    assert source["backpressure-level"] == "low"
    assert source["subtasks"] == [{"subtask": 0, "backpressure-level": "low", "ratio": 0.4,
                                   "idleRatio": 0.1, "busyRatio": 0.5}]  # fmt: skip
    assert view.vertex("1") is view.vertex(SINK) is view.vertices[1]


def test_configuration_is_never_served_whole() -> None:
    view = view_of(tracker_with_history())
    endpoint = RestEndpoint(lambda: view, "127.0.0.1", 0)
    for path in ("/config", "/overview", "/jobs/overview", f"/jobs/{view.job_id}",
                 f"/jobs/{view.job_id}/checkpoints", f"/jobs/{view.job_id}/checkpoints/config",
                 f"/jobs/{view.job_id}/checkpoints/details/11"):  # fmt: skip
        status, body = endpoint.route(path)
        assert status == 200, path
        assert "secret" not in repr(body), path
    config = endpoint.route(f"/jobs/{view.job_id}/checkpoints/config")[1]
    assert (config["interval"], config["mode"], config["max_concurrent"]) == (
        1000, "exactly_once", 1,
    )  # fmt: skip
    assert config["externalization"] == {"enabled": True, "delete_on_cancellation": False}
    assert config["state_backend"] == "HashMapStateBackend"
    assert not config["unaligned_checkpoints"]


def test_vertex_state_and_summaries() -> None:
    states = ExecutionState
    assert aggregate_state([states.FINISHED, states.FINISHED]) is states.FINISHED
    assert aggregate_state([states.FINISHED, states.RUNNING]) is states.RUNNING
    assert aggregate_state([states.FAILED, states.RUNNING]) is states.FAILED
    assert aggregate_state([states.DEPLOYING, states.CREATED]) is states.DEPLOYING
    assert aggregate_state([]) is states.CREATED
    stats = summarize([4, 1, 3, 2])
    assert (stats.count, stats.min, stats.max, stats.avg, stats.p50) == (4, 1, 4, 2, 2.5)
    assert summarize([]).p99 == 0.0


def test_timed_out_aligned_checkpoint_is_shown_unaligned_with_its_in_flight_data() -> None:
    tracker = CheckpointStatsTracker({0: 1}, history_size=3)
    tracker.on_event(Triggered(3, T0, unaligned=False, is_savepoint=False))  # with a timeout
    tracker.on_event(Acknowledged(3, 0, 0, T0 + 5, {"unaligned": True, "persisted_data": 4096,
                                                    "processed_data": 10}))  # fmt: skip
    tracker.on_event(Completed(3, T0 + 6, "/ckpts/job/chk-3", is_savepoint=False, retained=(3,)))
    entry = tracker.snapshot().latest_completed
    assert entry is not None and entry.unaligned
    assert entry.total("persisted_data") == 4096 and entry.total("processed_data") == 10
    json = responses.checkpoint_entry(view_of(tracker), entry)
    assert json["is_unaligned"] and json["checkpoint_type"] == "UNALIGNED_CHECKPOINT"
    assert json["persisted_data"] == 4096


def test_a_savepoint_is_latest_savepoint_not_latest_completed_checkpoint() -> None:
    """Flink's ``latest.completed`` is the newest checkpoint, ``latest.savepoint`` the newest
    savepoint; the history marks the savepoint as one (``is_savepoint``, ``SAVEPOINT``)."""
    tracker = CheckpointStatsTracker({0: 1}, history_size=5)
    tracker.on_event(Triggered(4, T0, unaligned=False, is_savepoint=False))
    tracker.on_event(Completed(4, T0 + 5, "/ckpts/job/chk-4", is_savepoint=False, retained=(4,)))
    tracker.on_event(Triggered(5, T0 + 10, unaligned=False, is_savepoint=True))
    tracker.on_event(Completed(5, T0 + 20, "/savepoints/savepoint-cccccc-5", is_savepoint=True,
                               retained=None))  # fmt: skip
    body = responses.checkpointing_statistics(view_of(tracker))
    assert body["latest"]["completed"]["id"] == 4
    savepoint = body["latest"]["savepoint"]
    assert savepoint["id"] == 5 and savepoint["is_savepoint"]
    assert savepoint["external_path"] == "/savepoints/savepoint-cccccc-5"
    [newest, _] = body["history"]
    assert newest["id"] == 5 and newest["is_savepoint"] and newest["checkpoint_type"] == "SAVEPOINT"


def test_the_plan_shows_each_vertexs_description() -> None:
    view = view_of(tracker_with_history())
    described = dataclasses.replace(view.vertices[1], description="writes the results")
    view = dataclasses.replace(view, vertices=(view.vertices[0], described))
    plan = {n["id"]: n["description"] for n in responses.job_details(view)["plan"]["nodes"]}
    assert plan == {SOURCE: "Source: s", SINK: "writes the results"}


#: Flink's ``TaskManagerInfo`` (REST API reference), the ``GET /taskmanagers`` items
FLINK_TASKMANAGER = {"id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber",
                     "freeSlots", "blocked"}  # fmt: skip


def test_live_workers_are_served_in_flinks_shape_with_pids_and_counted_in_the_overview() -> None:
    workers = (
        WorkerView(0, "worker 0 (10.0.0.5:7000)", "10.0.0.5", 7000, 4321, 1_700_000_000_123, 2, 0),
        WorkerView(2, "worker 2 (10.0.0.6:7002)", "10.0.0.6", 7002, 99, 1_700_000_000_456, 2, 2),
    )
    view = dataclasses.replace(view_of(tracker_with_history()), workers=workers)
    endpoint = RestEndpoint(lambda: view, "127.0.0.1", 0)
    for path in ("/taskmanagers", "/v1/taskmanagers/"):
        status, body = endpoint.route(path)
        assert status == 200 and set(body) == {"taskmanagers"}, path
    first, second = body["taskmanagers"]
    assert set(first) == FLINK_TASKMANAGER | {"pid", "host"}
    assert first == {
        "id": "worker 0 (10.0.0.5:7000)", "path": "undertow://10.0.0.5:7000/worker_0",
        "dataPort": 7000, "jmxPort": -1, "timeSinceLastHeartbeat": 1_700_000_000_123,
        "slotsNumber": 2, "freeSlots": 0, "blocked": False, "host": "10.0.0.5", "pid": 4321,
    }  # fmt: skip
    assert (second["pid"], second["freeSlots"], second["host"]) == (99, 2, "10.0.0.6")
    assert endpoint.route("/overview")[1]["taskmanagers"] == 2
    no_workers = view_of(tracker_with_history())
    empty = RestEndpoint(lambda: no_workers, "127.0.0.1", 0)
    assert empty.route("/taskmanagers") == (200, {"taskmanagers": []})
    # between attempts no worker is registered: /overview counts the live ones, as Flink does
    assert empty.route("/overview")[1]["taskmanagers"] == 0
