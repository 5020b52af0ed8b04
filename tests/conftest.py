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
``kafka_broker``: one Kafka broker (tools/kafka_broker.py) for the whole run, started the first
time a test asks for it and stopped at the end; with ``UNDERTOW_KAFKA_BOOTSTRAP`` set, that
running broker is used instead (the fixture is then ``None`` and only ``kafka_bootstrap``, the
address, is known). Tests that restart the broker need the fixture's own broker.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
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


def _load_kafka_broker_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "tools" / "kafka_broker.py"
    spec = importlib.util.spec_from_file_location("undertow_tools_kafka_broker", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Any]:
    if os.environ.get("UNDERTOW_KAFKA_BOOTSTRAP"):
        yield None
        return
    broker = _load_kafka_broker_module().KafkaBroker()
    broker.start()
    print(f"\nKafka broker at {broker.bootstrap_servers} started in {broker.start_seconds:.1f} s")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Any) -> str:
    """The bootstrap servers of the test broker (``host:port``)."""
    if kafka_broker is None:
        return os.environ["UNDERTOW_KAFKA_BOOTSTRAP"]
    return str(kafka_broker.bootstrap_servers)


_topic_numbers = itertools.count()


@pytest.fixture
def new_topic(kafka_bootstrap: str, request: pytest.FixtureRequest) -> Callable[..., str]:
    """``new_topic(partitions=1)``: create a topic with a fresh name on the test broker."""
    from undertow.testing.kafka_topics import create_topic

    def make(partitions: int = 1) -> str:
        base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
        name = f"{base}-{os.getpid()}-{next(_topic_numbers)}"
        create_topic(kafka_bootstrap, name, partitions)
        return name

    return make
