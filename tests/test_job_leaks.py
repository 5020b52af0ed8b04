"""The job-leak check of the suite (tests/job_leaks.py) fails a test that leaves its job
running, and passes one that waits for its cancelled job's end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

INNER = """
import pytest
import tests.job_leaks
from undertow.common import Configuration
from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.number_seq import NumberSequenceSource

tests.job_leaks.END_WAIT_S = 1.0


def started():
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    env.set_parallelism(1)
    numbers = env.from_source(NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(),
                              "numbers")
    numbers.filter(lambda v: False).print()
    return env.execute_async("endless")


def test_leaves_its_job_running():
    started()


def test_waits_for_its_cancelled_job():
    client = started()
    client.cancel()
    with pytest.raises(Exception, match="(?i)cancel"):
        client.get_job_execution_result().result()
"""


def test_a_test_that_leaves_its_job_running_fails_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=INNER)
    root = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess("-p", "tests.job_leaks", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_leaves_its_job_running left job(s) *running 1 s after*"])
