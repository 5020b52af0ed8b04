"""``JobClient``: a handle on a job started with ``execute_async`` (PyFlink's names)."""

from __future__ import annotations

from undertow.runtime.cluster.job_master import JobExecutionResult, JobMaster, JobStatus


class JobClient:
    """Thread-safe handle on a running job."""

    def __init__(self, master: JobMaster) -> None:
        self._master = master

    def get_job_id(self) -> str:
        return self._master.job_id

    def get_job_status(self) -> JobStatus:
        return self._master.status

    def get_rest_address(self) -> str | None:
        """The job's REST API (``http://127.0.0.1:PORT``, Flink's endpoints and JSON), or None
        when ``rest.port`` is -1. It answers while the job runs and closes when it ends."""
        return self._master.rest_url

    def cancel(self) -> None:
        """Ask the job to stop; ``get_job_execution_result`` then raises ``JobCancelledError``."""
        self._master.cancel()

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        """Block until the job ends and return its result (or raise its failure)."""
        return self._master.wait(timeout)

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        return self.get_job_execution_result(timeout)
