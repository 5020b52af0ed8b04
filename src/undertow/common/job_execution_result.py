"""PyFlink's ``JobExecutionResult`` (``pyflink.common.job_execution_result``): what
``execute()`` returns, and what ``JobClient.get_job_execution_result()`` completes with: the
job's id, its net run time and its accumulators. Built once by the JobMaster when the job
finished; read-only for the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class JobExecutionResult:
    """What ``execute`` returns (PyFlink's ``JobExecutionResult``)."""

    job_id: str
    net_runtime_ms: int
    accumulators: dict[str, Any] = field(default_factory=dict)

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms

    def get_accumulator_result(self, name: str) -> Any:
        return self.accumulators.get(name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self.accumulators)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self
