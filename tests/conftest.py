"""Fixtures shared by the whole suite.

``spark_context``: one local SparkContext (master ``local[2]``) for the whole test run, built
the way undertow builds one (:func:`undertow.deploy.spark_session.get_spark_context`), so every
test on the ``spark`` target reuses it instead of paying Spark's start each time.
``spark_session``: a SparkSession on that context, for tests that read with ``spark.read``.
Tests that need another master (several executor JVMs) run their job in a subprocess.
``_isolated_key_file`` (autouse, session): ``XDG_CONFIG_HOME`` points to a temporary directory
for the whole run, so no test reads or writes the checkpoint metadata key under the real home;
subprocesses (jobs on other masters, the CLI) inherit it, and the JobMaster is the only
process that loads the key (workers never need it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from undertow.core.config import Configuration

SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session", autouse=True)
def _isolated_key_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    config_home = tmp_path_factory.mktemp("xdg-config")
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(config_home)
    yield
    if previous is None:
        del os.environ["XDG_CONFIG_HOME"]
    else:
        os.environ["XDG_CONFIG_HOME"] = previous


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
