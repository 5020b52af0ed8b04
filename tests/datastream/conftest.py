"""Fixtures of the DataStream API tests: ``env`` is a fresh environment on the ``local-threads``
target (workers are threads of the test process), the cheapest way to run a real job."""

from __future__ import annotations

import pytest
from tests.datastream.environments import threads_env

from undertow.datastream import StreamExecutionEnvironment


@pytest.fixture
def env() -> StreamExecutionEnvironment:
    return threads_env()
