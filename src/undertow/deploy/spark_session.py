"""The SparkSession a job deploys on: the active one, or one built from the job's configuration.

Rules (in this order):

* a classic SparkSession that is already active (``spark-submit JOB.py``, a notebook, a test
  fixture) is used as it is; its master and settings win;
* under ``spark-submit`` (before the job made a session) its master and ``--conf`` settings are
  kept: ``spark-submit --master yarn JOB.py`` runs the job on YARN;
* otherwise one is built with master ``spark.master`` (default ``local[*]``) and every other
  ``spark.*`` key of the job's configuration (``undertow run -D spark.executor.memory=2g``);
  for a ``local`` master the driver binds to loopback, so nothing listens on the network;
* a Spark Connect session (no RDD API, so no barrier stage) is refused with a clear message.

Workers run in the executors' Python, which PySpark takes from ``PYSPARK_PYTHON``; when that is
not set, the driver's interpreter is used, so a virtual environment carries over to local Spark.

Threading: call from the thread that starts the job; PySpark serializes session creation.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError, DeploymentError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Settings undertow applies to a session it builds, unless the job sets them.
_LOCAL_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}
_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
}


def get_spark_session(config: Configuration) -> SparkSession:
    """The session the job runs on (see the module docstring); raises
    :class:`DeploymentError` if Spark cannot start or the session is a Spark Connect one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise DeploymentError(
            "execution.target 'spark' needs pyspark: pip install 'pyspark>=4.0'"
        ) from err
    from pyspark import SparkContext

    _refuse_connect()
    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        # A session made on another thread: the builder returns it (settings are not applied).
        active = SparkSession.builder.getOrCreate()
    if active is not None:
        _refuse_connect_session(active)
        return active
    builder = SparkSession.builder.appName(config.get(Options.PIPELINE_NAME) or "undertow")
    if os.environ.get("PYSPARK_GATEWAY_PORT") and not config.contains_key("spark.master"):
        # Under spark-submit: its --master and --conf are already in the JVM; keep them.
        master = "as given to spark-submit"
    else:
        master = config.get(Options.SPARK_MASTER)
        builder = builder.master(master)
    settings = dict(_DEFAULTS)
    if master.startswith("local"):
        settings.update(_LOCAL_DEFAULTS)
    settings.update(
        (k, v)
        for k, v in config.to_dict().items()
        if k.startswith("spark.") and k != "spark.master"
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        session = builder.getOrCreate()
    except Exception as err:
        java = os.environ.get("JAVA_HOME", "not set")
        raise DeploymentError(
            f"could not start Spark (master {master!r}): {err}. Spark 4 needs Java 17 or newer "
            f"on PATH or in JAVA_HOME (JAVA_HOME={java})"
        ) from err
    session.sparkContext.setLogLevel(config.get(Options.SPARK_LOG_LEVEL))
    return session


def _refuse_connect() -> None:
    if os.environ.get("SPARK_CONNECT_MODE_ENABLED") or os.environ.get("SPARK_REMOTE"):
        raise ConfigurationError(_CONNECT_MESSAGE)


def _refuse_connect_session(session: object) -> None:
    if type(session).__module__.startswith("pyspark.sql.connect"):
        raise ConfigurationError(_CONNECT_MESSAGE)


_CONNECT_MESSAGE = (
    "execution.target 'spark' needs a classic SparkSession: Spark Connect sessions have no RDD "
    "API, so undertow cannot run its workers as a barrier stage there. Run the job with a "
    "classic session (spark-submit, or unset SPARK_REMOTE) or use execution.target 'local'"
)
