"""Savepoints asked of a running job: from ``JobClient`` (futures) and from REST (trigger ids).

A request gets its directory first (:meth:`SavepointOperations.resolve_directory`: the one
given, or ``execution.checkpointing.savepoint-dir``, or a ``ConfigurationError`` naming the
option). The storage then probes it (``CheckpointStorage.probe_savepoint_target``, off the
loop): one it cannot write fails the request with a ``CheckpointStorageError``, the job runs
on. The request then waits until the attempt's tasks run (a job
that is starting or restarting takes it once they do, within the checkpoint timeout), and the
coordinator takes it. Its future gets the savepoint directory at once, or, for a stop with
savepoint, when the job has ended ``FINISHED`` (:meth:`SavepointOperations.job_ended`).

Threading: :meth:`trigger` and :meth:`resolve_directory` from any thread; the rest on the
JobMaster's loop (``job_ended`` on its thread once the loop ended).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from undertow.core.errors import ConfigurationError, JobExecutionError
from undertow.core.modes import SavepointFormatType
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.checkpoint.failure import CheckpointException, CheckpointFailureReason
from undertow.runtime.checkpoint.savepoint import SavepointRequest, savepoint_directory
from undertow.runtime.master.job_status import JobStatus
from undertow.runtime.master.rest.responses import savepoint_operation
from undertow.storage.errors import CheckpointStorageError

#: How long the REST API outlives the job for a stop-with-savepoint result nobody fetched yet.
STOP_RESULT_GRACE_S = 5.0
#: Statuses in which a savepoint request waits for the tasks to run.
_STARTING = frozenset({JobStatus.CREATED, JobStatus.INITIALIZING, JobStatus.RUNNING,
                       JobStatus.RESTARTING})  # fmt: skip


class SavepointOperations:
    """The savepoint requests of one job (see the module docstring)."""

    def __init__(
        self, job_id: str, savepoint_dir: str, coordinator: CheckpointCoordinator | None,
        status: Callable[[], JobStatus],
    ) -> None:  # fmt: skip
        self.job_id = job_id
        #: ``execution.checkpointing.savepoint-dir``: for requests without a directory.
        self.savepoint_dir = savepoint_dir
        self.coordinator = coordinator
        self._status = status
        #: The JobMaster's loop, once it runs (None before, and after it closed is harmless).
        self.loop: asyncio.AbstractEventLoop | None = None
        #: stop-with-savepoint futures resolved when the job ended, with their savepoints
        self._stopped_with: list[tuple[concurrent.futures.Future[str], str]] = []
        #: REST trigger id -> Flink's AsynchronousOperationResult of the savepoint
        self._operations: dict[str, dict[str, Any]] = {}
        #: REST-triggered stops whose result nobody fetched yet
        self._unfetched: set[str] = set()

    # -- any thread --------------------------------------------------------------------------
    def trigger(
        self, request: SavepointRequest, trigger_id: str | None = None
    ) -> concurrent.futures.Future[str]:
        """Take a savepoint (see :mod:`undertow.runtime.checkpoint.savepoint`). The future
        gets the savepoint directory: at once when it completed, or, for a stop with
        savepoint, once the job has ended ``FINISHED``; it fails naming the job, the
        checkpoint and the directory."""
        result: concurrent.futures.Future[str] = concurrent.futures.Future()
        try:
            request = self.resolve_directory(request)
        except ConfigurationError as err:
            result.set_exception(err)
            return result
        loop = self.loop
        status = self._status()
        if loop is None or status.is_globally_terminal_state():
            result.set_exception(self._refused(request, f"job is {status.value}"))
            return result

        async def start() -> None:
            coordinator = self.coordinator
            if coordinator is None:
                result.set_exception(self._refused(request, "no checkpoint coordinator"))
                return
            # Refused before anything stops when its directory cannot be written (the probe
            # is storage I/O: off the loop).
            try:
                await asyncio.get_running_loop().run_in_executor(
                    None, coordinator.storage.probe_savepoint_target, request.target_directory
                )
            except CheckpointStorageError as err:
                refused = CheckpointStorageError(
                    f"{request.kind} of job {self.job_id} refused, the job goes on: {err}"
                )
                refused.__cause__ = err
                result.set_exception(refused)
                return
            # A job that is starting (or restarting) takes it once all its tasks run.
            deadline = time.monotonic() + coordinator.timeout_ms / 1000.0
            while (
                not coordinator.is_active and not coordinator.stopping
                and self._status() in _STARTING and time.monotonic() < deadline
            ):  # fmt: skip
                await asyncio.sleep(0.01)
            future = coordinator.trigger_savepoint(request)
            future.add_done_callback(lambda f: self._done(f, request, result, trigger_id))

        try:
            asyncio.run_coroutine_threadsafe(start(), loop)
        except RuntimeError:  # the loop closed meanwhile: the job ended
            result.set_exception(self._refused(request, "job ended"))
        return result

    def resolve_directory(self, request: SavepointRequest) -> SavepointRequest:
        """``request`` with its directory, or ``execution.checkpointing.savepoint-dir`` if it
        has none; raises :class:`ConfigurationError` naming the option when neither is set.
        Reads the settings only."""
        directory = savepoint_directory(
            request.target_directory, self.savepoint_dir, self.job_id,
            request.kind,
        )  # fmt: skip
        return replace(request, target_directory=directory)

    def _refused(self, request: SavepointRequest, why: str) -> CheckpointException:
        return CheckpointException(
            CheckpointFailureReason.TRIGGER_CHECKPOINT_FAILURE,
            f"{request.kind} of job {self.job_id} into {request.target_directory}: {why}",
        )

    def _done(self, future: asyncio.Future[str], request: SavepointRequest,
              result: concurrent.futures.Future[str], trigger_id: str | None) -> None:  # fmt: skip
        error = future.exception()
        if trigger_id is not None:
            self._operations[trigger_id] = savepoint_operation(
                None if error is not None else future.result(), error
            )
        if error is not None:
            result.set_exception(error)
        elif request.stop:
            self._stopped_with.append((result, future.result()))
        else:
            result.set_result(future.result())

    # -- REST (JobControl), on the loop ----------------------------------------------------------
    def stop_with_savepoint_trigger(
        self, target_directory: str | None, drain: bool, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        """Start a stop with savepoint for the REST API; its trigger id. Without a directory
        the configured ``execution.checkpointing.savepoint-dir`` is used; if that is unset
        too, raises :class:`ConfigurationError` (the request is refused, nothing starts);
        ``ValueError`` for ``drain`` with ``unaligned``."""
        request = self.resolve_directory(SavepointRequest(
            target_directory or "", stop=True, drain=drain, unaligned=unaligned,
            format_type=format_type,
        ))  # fmt: skip
        trigger_id = uuid.uuid4().hex
        self._operations[trigger_id] = savepoint_operation(None, None)
        self._unfetched.add(trigger_id)
        result = self.trigger(request, trigger_id)
        result.add_done_callback(lambda f: self._trigger_refused(trigger_id, f))
        return trigger_id

    def savepoint_trigger(
        self, target_directory: str | None, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        """Start a savepoint for the REST API (the job goes on); its trigger id. Refuses
        (``ConfigurationError``) like :meth:`stop_with_savepoint_trigger`."""
        request = self.resolve_directory(
            SavepointRequest(target_directory or "", unaligned=unaligned, format_type=format_type)
        )
        trigger_id = uuid.uuid4().hex
        self._operations[trigger_id] = savepoint_operation(None, None)
        result = self.trigger(request, trigger_id)
        result.add_done_callback(lambda f: self._trigger_refused(trigger_id, f))
        return trigger_id

    def _trigger_refused(self, trigger_id: str, result: concurrent.futures.Future[str]) -> None:
        """A request refused before it started (the job ended) has no savepoint callback."""
        error = result.exception()
        if error is not None and self._operations.get(trigger_id) == savepoint_operation(
            None, None
        ):
            self._operations[trigger_id] = savepoint_operation(None, error)

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        """Flink's ``AsynchronousOperationResult`` of a trigger, or None if unknown."""
        operation = self._operations.get(trigger_id)
        if operation is not None and operation["status"]["id"] == "COMPLETED":
            self._unfetched.discard(trigger_id)
        return operation

    async def hand_over_stop_results(self) -> None:
        """Wait until the poller fetched the result of every REST-triggered stop, at most
        ``STOP_RESULT_GRACE_S`` (the CLI polls every 100 ms)."""
        deadline = time.monotonic() + STOP_RESULT_GRACE_S
        while self._unfetched and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def job_ended(self, status: JobStatus, failure: BaseException | None) -> None:
        """The job ended: a stop with savepoint succeeded if it ended ``FINISHED``."""
        for result, pointer in self._stopped_with:
            if status is JobStatus.FINISHED:
                result.set_result(pointer)
            else:
                result.set_exception(JobExecutionError(
                    f"job {self.job_id} ended {status.value} after its savepoint "
                    f"{pointer}: {failure}"
                ))  # fmt: skip
        self._stopped_with.clear()
