"""Fixtures shared by the whole suite.

``spark_session``: one local SparkSession (master ``local[2]``) for the whole test run, built
the way undertow builds one (:func:`undertow.deploy.spark_session.get_spark_session`), so every
test on the ``spark`` target reuses it instead of paying Spark's ~10 s start each time. Tests
that need another master (several executor JVMs) run their job in a subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from undertow.core.config import Configuration

SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    from undertow.deploy.spark_session import get_spark_session

    session = get_spark_session(
        Configuration({"spark.master": SPARK_MASTER, "undertow.spark.log-level": "ERROR"})
    )
    yield session
    session.stop()
