"""Environments of the DataStream API tests, for tests that cannot take the ``env`` fixture
(Hypothesis tests run their body many times per fixture)."""

from __future__ import annotations

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment


def threads_env(parallelism: int = 2) -> StreamExecutionEnvironment:
    """A fresh ``local-threads`` environment (for Hypothesis tests, which cannot take ``env``)."""
    environment = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local-threads"})
    )
    environment.set_parallelism(parallelism)
    return environment
