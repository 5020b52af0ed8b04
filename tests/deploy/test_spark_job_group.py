"""The barrier stage's Spark job group and description name the undertow job and its attempt,
so the Spark UI shows which job and which attempt a stage belongs to."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.deploy.spark import SparkLauncher


class RecordingContext:
    """Records ``setJobGroup``; the stage itself fails at once."""

    def __init__(self) -> None:
        self.master = "local[2]"
        self.defaultParallelism = 2
        self.version = "4.0"
        self.applicationId = "local-1"
        self.groups: list[tuple[str, str, bool]] = []
        self.submitted = threading.Event()

    def setJobGroup(self, group: str, description: str, interrupt: bool) -> None:
        self.groups.append((group, description, interrupt))

    def parallelize(self, data: Any, slices: int) -> Any:
        self.submitted.set()
        raise RuntimeError("no Spark here")


def test_job_group_and_description_name_job_and_attempt() -> None:
    sc = RecordingContext()
    launcher = SparkLauncher(sc, Configuration())  # type: ignore[arg-type]
    launcher.name_job("0123456789abcdef0123456789abcdef", "orders")
    for attempt in (0, 1):
        launcher.launch(2, ("127.0.0.1", 1), b"s" * 32, attempt, {})
        assert launcher.wait(10)
    assert sc.groups == [
        ("undertow-0123456789abcdef0123456789abcdef-attempt-0",
         "undertow job 'orders' (0123456789abcdef0123456789abcdef), attempt 0", True),
        ("undertow-0123456789abcdef0123456789abcdef-attempt-1",
         "undertow job 'orders' (0123456789abcdef0123456789abcdef), attempt 1", True),
    ]  # fmt: skip


@pytest.mark.spark
def test_a_job_on_spark_runs_in_its_named_job_group(spark_context: Any, tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "spark", "spark.master": "local[2]", "rest.port": 0,
    }))  # fmt: skip
    env.set_parallelism(1)
    env.from_source(
        DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "gen"
    ).filter(lambda n: n < 0).print()
    client = env.execute_async("spark named job")
    group = f"undertow-{client.get_job_id()}-attempt-0"
    try:
        deadline = time.monotonic() + 60
        while not spark_context.statusTracker().getJobIdsForGroup(group):
            assert time.monotonic() < deadline, f"no Spark job in group {group}"
            time.sleep(0.1)
    finally:
        client.cancel()
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(60)
