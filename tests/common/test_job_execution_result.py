"""``undertow.common.job_execution_result``: what ``execute()`` returns, at PyFlink's path, with
PyFlink's accessors and its text; accumulators and task counters are copied out, never shared
with the caller."""

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


def test_task_counters_are_apart_from_the_accumulators() -> None:
    result = JobExecutionResult("ab" * 16, 5, {}, {"records_in[Map]": 3})
    assert result.get_all_accumulator_results() == {}  # as PyFlink's, for a PyFlink program
    counters = result.get_task_counters()
    assert counters == {"records_in[Map]": 3}
    counters["records_in[Map]"] = 0
    assert result.get_task_counters() == {"records_in[Map]": 3}


def test_str_is_pyflinks() -> None:
    # PyFlink 2.3 printed, for a job without accumulators (run 2026-12-03):
    # 'Program execution finished\nJob with JobID d2c2...ef80 has finished.\nJob Runtime: 3920 ms\n'
    result = JobExecutionResult("d2c22ee0ea0c45365db3f663187eef80", 3920, {}, {"records_in[x]": 1})
    assert str(result) == (
        "Program execution finished\nJob with JobID d2c22ee0ea0c45365db3f663187eef80 has "
        "finished.\nJob Runtime: 3920 ms\n"
    )
    published = JobExecutionResult("ab" * 16, 7, {"seen": 3})
    assert str(published).endswith("Job Runtime: 7 ms\nAccumulator Results: \n- seen (int): 3\n\n")
