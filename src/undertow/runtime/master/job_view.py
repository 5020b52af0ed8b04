"""Builds the frozen :class:`~.metrics.JobView` the REST API serves, from the JobMaster's facts.

Pure: the job's fixed facts (:class:`JobFacts`), its lifecycle, the current attempt's subtask
facts, the task metrics, the checkpoint statistics and the failures go in; a view comes out.
A subtask's Flink ``ExecutionState`` is derived from the job's status and the attempt's facts
(:func:`subtask_state`), as Flink's web UI shows it; the live workers (Flink's task managers)
from the attempt's registrations and connections (:func:`worker_views`).

Threading: the JobMaster's loop (the attempt and stores are the loop's); the view it returns
may go to any thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from undertow.graph.job_graph import JobGraph
from undertow.runtime.control.placement import ExecutionPlan
from undertow.runtime.master.attempt import Attempt
from undertow.runtime.master.checkpoint_stats import CheckpointStatsSnapshot
from undertow.runtime.master.exception_history import ExceptionHistory
from undertow.runtime.master.job_status import JobLifecycle, JobStatus
from undertow.runtime.master.metrics import (
    ExecutionState,
    JobView,
    TaskMetricsStore,
    VertexInput,
    VertexView,
    WorkerView,
)
from undertow.runtime.master.settings import MasterSettings


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What does not change while the job runs."""

    job_id: str
    graph: JobGraph
    plan: ExecutionPlan
    settings: MasterSettings
    #: When the JobMaster was created (epoch ms).
    start_ms: int
    #: job vertex id -> its REST id (``vertex_rest_id``)
    rest_ids: dict[int, str]


def build_job_view(
    facts: JobFacts, lifecycle: JobLifecycle, attempt: Attempt | None,
    task_metrics: TaskMetricsStore, checkpoints: CheckpointStatsSnapshot,
    exceptions: ExceptionHistory, num_restarts: int = 0,
) -> JobView:  # fmt: skip
    """The job now, frozen."""
    now = time.time_ns() // 1_000_000
    status = lifecycle.status
    terminal = status.is_globally_terminal_state()
    graph, rest_ids = facts.graph, facts.rest_ids
    vertices = []
    for v in graph.vertices:
        keys = [(v.id, s) for s in range(v.parallelism)]
        ends = [attempt.finished_at.get(k) for k in keys] if attempt is not None else []
        end = -1
        if ends and all(e is not None for e in ends):
            end = max(e for e in ends if e is not None)
        elif terminal:
            end = lifecycle.end_ms
        vertices.append(VertexView(
            vertex_id=v.id, rest_id=rest_ids[v.id], name=v.name,
            parallelism=v.parallelism, max_parallelism=v.max_parallelism,
            subtask_states=tuple(subtask_state(status, attempt, facts.plan, k) for k in keys),
            start_time=attempt.deployed_at if attempt is not None else -1, end_time=end,
            metrics=tuple(task_metrics.view(*k) for k in keys),
            inputs=tuple(VertexInput(rest_ids[e.source_vertex], e.partitioner_kind)
                         for e in v.inputs),
            description=v.description or v.name,
        ))  # fmt: skip
    return JobView(
        job_id=facts.job_id, name=graph.job_name, state=status.value,
        job_type=facts.settings.checkpoint.runtime_mode.name, start_time=facts.start_ms,
        end_time=lifecycle.end_ms, now=now, status_timestamps=lifecycle.timestamps(),
        max_parallelism=max(v.max_parallelism for v in graph.vertices),
        vertices=tuple(vertices), checkpoints=checkpoints,
        checkpointing=facts.settings.checkpoint, exceptions=exceptions.entries(),
        exceptions_truncated=exceptions.truncated, num_restarts=num_restarts,
        workers=worker_views(attempt, facts.plan, graph),
    )  # fmt: skip


def worker_views(
    attempt: Attempt | None, plan: ExecutionPlan, graph: JobGraph
) -> tuple[WorkerView, ...]:
    """The attempt's live workers (:meth:`Attempt.live_workers`), by index. A worker's slots
    are the subtask indices placed on it; a slot is free once every subtask in it finished."""
    if attempt is None:
        return ()
    views = []
    for index in attempt.live_workers():
        registered = attempt.registered[index]
        slots = [s for s in range(plan.num_slots) if plan.worker_of(s) == index]
        free = [
            s for s in slots
            if all((v.id, s) in attempt.finished for v in graph.vertices if s < v.parallelism)
        ]  # fmt: skip
        last = attempt.heartbeats.last_seen(index)
        views.append(WorkerView(
            index=index, id=attempt.location(index), host=registered.data_host,
            data_port=registered.data_port, pid=registered.pid,
            last_heartbeat=last if last is not None else -1, slots=len(slots),
            free_slots=len(free),
        ))  # fmt: skip
    return tuple(views)


def subtask_state(
    status: JobStatus, attempt: Attempt | None, plan: ExecutionPlan, key: tuple[int, int]
) -> ExecutionState:
    """A subtask's Flink ``ExecutionState``, from the job's status and the attempt's facts."""
    if attempt is not None and key in attempt.failed:
        return ExecutionState.FAILED
    if attempt is not None and key in attempt.finished:
        return ExecutionState.FINISHED
    if status is JobStatus.RUNNING:
        deployed = attempt is not None and plan.worker_of(key[1]) in attempt.deployed
        return ExecutionState.RUNNING if deployed else ExecutionState.DEPLOYING
    if status in (JobStatus.INITIALIZING, JobStatus.CREATED):
        return ExecutionState.CREATED
    if status in (JobStatus.FAILING, JobStatus.CANCELLING):
        return ExecutionState.CANCELING
    if status is JobStatus.FINISHED:
        return ExecutionState.FINISHED
    if status is JobStatus.RESTARTING and attempt is not None and not attempt.done.is_set():
        return ExecutionState.SCHEDULED
    return ExecutionState.CANCELED
