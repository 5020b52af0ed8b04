"""Fixtures shared by the whole suite.

``spark_context``: one local SparkContext (master ``local[2]``) for the whole test run, built
the way undertow builds one (:func:`undertow.deploy.spark_session.get_spark_context`), so every
test on the ``spark`` target reuses it instead of paying Spark's start each time.
``spark_session``: a SparkSession on that context, for tests that read with ``spark.read``.
Tests that need another master (several executor JVMs) run their job in a subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from undertow.core.config import Configuration

SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark_context() -> Iterator[Any]:
    from undertow.deploy.spark_session import get_spark_context

    context = get_spark_context(
        Configuration({"spark.master": SPARK_MASTER, "undertow.spark.log-level": "ERROR"})
    )
    yield context
    context.stop()


@pytest.fixture(scope="session")
def spark_session(spark_context: Any) -> Any:
    from pyspark.sql import SparkSession

    return SparkSession(spark_context)
