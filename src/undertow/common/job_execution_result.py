"""PyFlink's ``JobExecutionResult`` (``pyflink.common.job_execution_result``): what
``execute()`` returns, and what ``JobClient.get_job_execution_result()`` completes with: the
job's id, its net run time and its accumulators (what its functions published through
``get_metrics_group()[name]``; none for a PyFlink program, as on PyFlink), plus undertow's task
counters (what the runtime counted: records in, late records dropped ...). Built once by the
JobMaster when the job finished; read-only for the user.
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
    #: name -> count summed over the finished subtasks; names carry their task, as
    #: ``records_in[<task>]`` or ``max_overdraft_buffers[<task> (i/p)]``.
    counters: dict[str, int] = field(default_factory=dict)

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms

    def get_accumulator_result(self, name: str) -> Any:
        return self.accumulators.get(name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self.accumulators)

    def get_task_counters(self) -> dict[str, int]:
        """undertow's addition: what the runtime counted for the job's tasks (a copy):
        ``records_in[<task>]``, ``num_late_records_dropped``, ``async_requests_restored``,
        and the overdraft and buffer debloating counters of docs/unaligned-and-debloating.md."""
        return dict(self.counters)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def __str__(self) -> str:
        """As PyFlink prints it (Java's ``JobExecutionResult.toString``)."""
        lines = [
            "Program execution finished",
            f"Job with JobID {self.job_id} has finished.",
            f"Job Runtime: {self.net_runtime_ms} ms",
        ]
        if self.accumulators:
            lines.append("Accumulator Results: ")
            lines += [f"- {name} ({type(value).__name__}): {value}"
                      for name, value in self.accumulators.items()]  # fmt: skip
            lines.append("")
        return "\n".join(lines) + "\n"
