"""``undertow.common.job_execution_result``: what ``execute()`` returns, at PyFlink's path, with
PyFlink's accessors; accumulators are copied out, never shared with the caller."""

from __future__ import annotations

from undertow.common import JobExecutionResult
from undertow.common.job_execution_result import JobExecutionResult as AtItsModule
from undertow.datastream import JobExecutionResult as FromDatastream


def test_pyflinks_accessors_read_the_result() -> None:
    assert JobExecutionResult is AtItsModule is FromDatastream
    result = JobExecutionResult("ab" * 16, 1_234, {"records": 7})
    assert result.get_job_id() == "ab" * 16 and result.get_net_runtime() == 1_234
    assert result.get_accumulator_result("records") == 7
    assert result.get_accumulator_result("absent") is None
    assert result.is_job_execution_result() and result.get_job_execution_result() is result
    copied = result.get_all_accumulator_results()
    copied["records"] = 0
    assert result.get_accumulator_result("records") == 7
