"""Fixtures of the DataStream API tests: ``env`` is a fresh environment on the ``local-threads``
target (workers are threads of the test process), the cheapest way to run a real job."""

from __future__ import annotations

import pytest

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment


@pytest.fixture
def env() -> StreamExecutionEnvironment:
    environment = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    environment.set_parallelism(2)
    return environment
