"""Requested savepoints as the coordinator shell answers them: refused at once, or a future
that gets the savepoint's directory or a :class:`CheckpointException` naming the job, the
checkpoint and the directory; and the barrier options a savepoint is taken with.

The decisions are :mod:`.savepoint`'s (what is refused) and :mod:`.coordinator_states`'s
(when a savepoint waits, starts, and what a stop's failure does); this module keeps the
futures of triggered savepoints by checkpoint id and words every outcome. A future already
done (its caller gave up) is left alone.

Threading: the JobMaster's loop only (futures of the running loop).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from undertow.runtime.checkpoint.barrier import CheckpointOptions, SnapshotType
from undertow.runtime.checkpoint.coordinator_states import WaitingSavepoint
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.savepoint import SavepointRequest, refuse_savepoint
from undertow.runtime.checkpoint.settings import CheckpointSettings

Waiting = WaitingSavepoint["asyncio.Future[str]"]


class SavepointFutures:
    """The futures of one job's triggered savepoints, by checkpoint id."""

    def __init__(self, job_id: str, settings: CheckpointSettings) -> None:
        self.job_id = job_id
        self.settings = settings
        self._options = settings.options(SnapshotType.SAVEPOINT)
        #: A stop's savepoint: tasks that take it wait for its completion before closing.
        self._stop_options = settings.options(SnapshotType.SYNC_SAVEPOINT)
        self._by_id: dict[int, asyncio.Future[str]] = {}

    def request(self, request: SavepointRequest, *, stopping: bool,
                attempt_running: bool) -> tuple[asyncio.Future[str], bool]:  # fmt: skip
        """A future for ``request``, and whether it may go ahead: else the future already
        holds why not (batch job, a stop in progress, no attempt running, unaligned without
        channel-state writers, ...)."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        problem = refuse_savepoint(
            request, batch=self.settings.batch, stopping=stopping, job_id=self.job_id,
            writes_channel_state=self.settings.writes_channel_state,
        )  # fmt: skip
        if problem is None and not attempt_running:
            problem = f"job {self.job_id}: no attempt is running"
        if problem is None:
            return future, True
        reason = CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE
        future.set_exception(CheckpointException(reason, problem))
        return future, False

    def barrier_options(self, request: SavepointRequest) -> CheckpointOptions:
        """A savepoint's barrier options: aligned as in Flink, or unaligned when asked
        (beyond Flink: the in-flight data becomes the savepoint's channel state)."""
        options = self._stop_options if request.stop else self._options
        options = replace(options, savepoint_format=request.format_type)
        return options.as_unaligned() if request.unaligned else options

    def triggered(self, checkpoint_id: int, future: asyncio.Future[str]) -> None:
        self._by_id[checkpoint_id] = future

    def did_not_start(self, waiting: Waiting, reason: CheckpointFailureReason) -> None:
        """A savepoint that waited to start when the attempt ended."""
        request = waiting.request
        _fail(waiting.future, CheckpointException(
            reason, f"{request.kind} of job {self.job_id} into {request.target_directory} "
            f"did not start: {reason.message}",
        ))  # fmt: skip

    def already_waiting(
        self, request: SavepointRequest, future: asyncio.Future[str], waiting: Waiting
    ) -> None:
        """A savepoint asked for while another waits to start: refused at once (one waits at
        most; the waiting one keeps its place and its future)."""
        _fail(future, CheckpointException(
            CheckpointFailureReason.TOO_MANY_CHECKPOINT_REQUESTS,
            f"{request.kind} of job {self.job_id} into {request.target_directory} refused: "
            f"a {waiting.request.kind} into {waiting.request.target_directory} already waits "
            "to start; ask again when it completed",
        ))  # fmt: skip

    def superseded(self, waiting: Waiting) -> None:
        """A waiting savepoint whose place a stop with savepoint took: it will not start."""
        request = waiting.request
        _fail(waiting.future, CheckpointException(
            CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE,
            f"{request.kind} of job {self.job_id} into {request.target_directory} did not "
            "start: a stop with savepoint was asked for before it started",
        ))  # fmt: skip

    def nothing_to_take(self, waiting: Waiting) -> None:
        """A waiting savepoint that could not trigger: every task had finished."""
        _fail(waiting.future, CheckpointException(
            CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING,
            f"job {self.job_id}: every task finished; no savepoint to take into "
            f"{waiting.request.target_directory}",
        ))  # fmt: skip

    def failed(self, checkpoint_id: int, request: SavepointRequest,
               reason: CheckpointFailureReason, detail: str) -> CheckpointException:  # fmt: skip
        """Triggered savepoint ``checkpoint_id`` failed: its future gets (and this returns)
        the error naming the job, the checkpoint and the directory."""
        error = CheckpointException(
            reason,
            f"{request.kind} {checkpoint_id} of job {self.job_id} into "
            f"{request.target_directory} failed: {reason.message} {detail}".rstrip(),
        )
        future = self._by_id.pop(checkpoint_id, None)
        if future is not None:
            _fail(future, error)
        return error

    def completed(self, checkpoint_id: int, pointer: str) -> None:
        """Savepoint ``checkpoint_id`` was exported to ``pointer``."""
        future = self._by_id.pop(checkpoint_id, None)
        if future is not None and not future.done():
            future.set_result(pointer)


def _fail(future: asyncio.Future[str], error: CheckpointException) -> None:
    if not future.done():
        future.set_exception(error)
