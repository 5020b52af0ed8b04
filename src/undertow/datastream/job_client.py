"""``JobClient``: a handle on a job started with ``execute_async`` (PyFlink's names).

As in PyFlink, ``get_job_status()``, ``get_job_execution_result()``, ``cancel()`` and
``get_accumulators()`` return futures (``concurrent.futures.Future``, PyFlink's
``CompletableFuture`` in ``undertow.common``: ``result(timeout)``, ``done()``, ``exception()``).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, overload

from undertow.core.modes import SavepointFormatType
from undertow.runtime.checkpoint.savepoint import SavepointRequest
from undertow.runtime.master.job_master import JobExecutionResult, JobMaster, JobStatus


class JobClient:
    """Thread-safe handle on a running job."""

    def __init__(self, master: JobMaster) -> None:
        self._master = master
        self._result: Future[JobExecutionResult] | None = None
        self._lock = threading.Lock()

    def get_job_id(self) -> str:
        return self._master.job_id

    def get_job_status(self) -> Future[JobStatus]:
        """The job's status now, as a done future (PyFlink's form: ``get_job_status().result()``;
        the JobMaster answers at once)."""
        status: Future[JobStatus] = Future()
        status.set_result(self._master.status)
        return status

    def get_rest_address(self) -> str | None:
        """The job's REST API (``http://127.0.0.1:PORT``, Flink's endpoints and JSON), or None
        when ``rest.port`` is -1. It answers while the job runs and closes when it ends."""
        return self._master.rest_url

    def cancel(self) -> Future[None]:
        """Ask the job to stop; the job's result then raises ``JobCancelledError``. The
        returned future is done once the request was handed to the job (as Flink's)."""
        done: Future[None] = Future()
        try:
            self._master.cancel()
        except BaseException as err:
            done.set_exception(err)
        else:
            done.set_result(None)
        return done

    def get_accumulators(self) -> Future[dict[str, Any]]:
        """The job's accumulators (PyFlink's name), as the job's result has them; the future
        is done once the job ended."""
        accumulators: Future[dict[str, Any]] = Future()
        self._job_result().add_done_callback(
            lambda f: (
                accumulators.set_exception(f.exception())
                if f.exception() is not None
                else accumulators.set_result(f.result().get_all_accumulator_results())
            )
        )
        return accumulators

    def trigger_savepoint(
        self, savepoint_directory: str | None = None,
        format_type: SavepointFormatType | str = SavepointFormatType.CANONICAL,
        *, unaligned: bool = False,
    ) -> Future[str]:  # fmt: skip
        """Take a savepoint into ``savepoint_directory`` while the job runs on (PyFlink's
        name). The future's ``result()`` is the savepoint's own directory
        (``<savepoint_directory>/savepoint-<jobid6>-<n>``), to restore from with
        ``execution.state-recovery.path``. The savepoint is the user's: retention never
        deletes it, and two-phase-commit sinks do not commit on it.

        Periodic checkpoints need not be on. Without ``savepoint_directory`` the job's
        ``execution.checkpointing.savepoint-dir`` is used; if that is unset too, the future
        fails at once with a ``ConfigurationError`` naming the option. A directory that cannot
        be written (permission denied, a file in the way, a read-only file system) fails the
        future with a ``CheckpointStorageError`` naming it and the OS error, before anything is
        taken: the job runs on.

        ``format_type`` (Flink's ``SavepointFormatType``, the second parameter as in Flink's
        ``JobClient.triggerSavepoint``): CANONICAL (default; any backend restores it) or NATIVE
        (the backend's own files: with RocksDB its SST files, copied into the savepoint; it
        restores only into the same backend). ``ValueError`` for anything else.

        ``unaligned=True`` (beyond Flink, whose savepoints are aligned): the barriers overtake
        the in-flight data, which the savepoint keeps as channel state (inside its directory;
        restorable at another parallelism). The job must run with
        ``execution.checkpointing.unaligned.enabled``, else the future fails naming it."""
        request = SavepointRequest(
            str(savepoint_directory or ""), unaligned=unaligned,
            format_type=SavepointFormatType.parse(format_type, "trigger_savepoint(format_type)"),
        )  # fmt: skip
        return self._master.trigger_savepoint(request)

    def stop_with_savepoint(
        self, path_or_drain: str | bool | None = None, savepoint_directory: str | None = None,
        format_type: SavepointFormatType | str = SavepointFormatType.CANONICAL,
        *, drain: bool = False, unaligned: bool = False,
    ) -> Future[str]:  # fmt: skip
        """Stop the job with a savepoint: ``stop_with_savepoint(path, drain=False)``, or
        PyFlink's ``stop_with_savepoint(advance_to_end_of_event_time, savepoint_directory)``.
        Without a directory the job's ``execution.checkpointing.savepoint-dir`` is used (the
        future fails naming the option if that is unset too); periodic checkpoints need not
        be on. A directory that cannot be written fails the future with a
        ``CheckpointStorageError`` naming it and the OS error before the job stops: it runs on.

        Without drain the sources stop where they are, and operators neither finish nor fire
        their event-time timers: resuming from the savepoint goes on exactly there. With drain
        the sources end their data after the MAX watermark (every event-time timer fires) and
        the operators finish, as at the end of bounded input. Either way the savepoint is the
        tasks' final checkpoint (two-phase-commit sinks commit it) and the job ends
        ``FINISHED``; the future's ``result()`` is the savepoint directory, available once the
        job ended. ``format_type``: as in :meth:`trigger_savepoint` (the third parameter, as in
        Flink's ``JobClient.stopWithSavepoint``).

        ``unaligned=True`` (beyond Flink; not with drain): the savepoint is taken with
        unaligned barriers, so a stop under backpressure does not wait for the backlog: the
        in-flight records go into the savepoint as channel state, and the tasks drop them
        instead of processing them; a resumed job processes them first. Needs
        ``execution.checkpointing.unaligned.enabled`` (else the future fails naming it);
        ``ValueError`` with ``drain``."""
        path: str | None
        if isinstance(path_or_drain, bool):
            drain, path = path_or_drain, savepoint_directory
        else:
            path = path_or_drain if path_or_drain is not None else savepoint_directory
        request = SavepointRequest(
            str(path or ""), stop=True, drain=drain, unaligned=unaligned,
            format_type=SavepointFormatType.parse(format_type, "stop_with_savepoint(format_type)"),
        )  # fmt: skip
        return self._master.trigger_savepoint(request)

    @overload
    def get_job_execution_result(self) -> Future[JobExecutionResult]: ...

    @overload
    def get_job_execution_result(self, timeout: float) -> JobExecutionResult: ...

    def get_job_execution_result(
        self, timeout: float | None = None
    ) -> Future[JobExecutionResult] | JobExecutionResult:
        """PyFlink's form, without arguments: a future of the job's result; ``result()``
        blocks until the job ends and raises its failure. The same future every call.

        With ``timeout`` (undertow's older form, kept for existing callers; prefer
        :meth:`wait`): block up to ``timeout`` seconds and return the result."""
        if timeout is None:
            return self._job_result()
        return self._master.wait(timeout)

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        """Block until the job ends (at most ``timeout`` seconds) and return its result, or
        raise its failure."""
        return self._master.wait(timeout)

    def _job_result(self) -> Future[JobExecutionResult]:
        """The future of the job's result, completed by one daemon thread that waits for it."""
        with self._lock:
            if self._result is None:
                future: Future[JobExecutionResult] = Future()
                self._result = future
                threading.Thread(
                    target=self._complete, args=(future,), daemon=True,
                    name=f"undertow-job-result-{self.get_job_id()}",
                ).start()  # fmt: skip
            return self._result

    def _complete(self, future: Future[JobExecutionResult]) -> None:
        try:
            result = self._master.wait(None)
        except BaseException as err:
            future.set_exception(err)
        else:
            future.set_result(result)
