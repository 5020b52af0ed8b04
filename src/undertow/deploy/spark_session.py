"""The SparkContext a job deploys on: the active one, or one built from the job's configuration.

undertow needs only a SparkContext, not a SparkSession: on this kind of machine a context
starts in about 5.7 s and a session adds about 4 s more, which is most of the time from
``undertow run`` to the first record. A job that wants a session builds one on the same
context (``SparkSession.builder.getOrCreate()``).

py4j logs "Closing down clientserver connection" at INFO whenever a gateway connection closes,
many times at interpreter exit. A job that sends its own INFO logs to stdout (PyFlink's examples
do: ``logging.basicConfig(stream=sys.stdout, level=logging.INFO)``) would get that line mixed into
its output, so the ``py4j`` logger is set to WARNING, unless the job set a level on it itself.

Threading: call from the thread that starts the job; PySpark serializes context creation.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError, DeploymentError

if TYPE_CHECKING:
    from pyspark import SparkContext

#: Settings undertow applies to a context it builds for a local master, unless the job sets them.
_LOCAL_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
}
_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
}


def get_spark_context(config: Configuration) -> SparkContext:
    """The context the job runs on (see the module docstring); raises
    :class:`DeploymentError` if Spark cannot start, :class:`ConfigurationError` for Spark
    Connect."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise DeploymentError(
            "execution.target 'spark' needs pyspark: pip install 'pyspark>=4.0'"
        ) from err
    quiet_py4j()
    _refuse_connect()
    session = SparkSession.getActiveSession()
    if session is not None:
        _refuse_connect_session(session)
    running = SparkContext._active_spark_context
    if running is not None:
        return running
    conf = SparkConf().setAppName(config.get(Options.PIPELINE_NAME) or "undertow")
    if os.environ.get("PYSPARK_GATEWAY_PORT") and not config.contains_key("spark.master"):
        # Under spark-submit: its --master and --conf are already in the JVM; keep them.
        master = conf.get("spark.master") or "as given to spark-submit"
    else:
        master = config.get(Options.SPARK_MASTER)
        conf.setMaster(master)
    settings = dict(_DEFAULTS)
    if master.startswith("local"):
        settings.update(_LOCAL_DEFAULTS)
    given = config.to_dict().items()
    settings.update((k, v) for k, v in given if k.startswith("spark.") and k != "spark.master")
    for key, value in settings.items():
        if not (key in _DEFAULTS or key in _LOCAL_DEFAULTS) or not conf.contains(key):
            conf.set(key, value)
    python = config.get_string("python.executable", "")
    if python:  # the job's python.executable runs the executors' Python workers
        conf.set("spark.pyspark.python", python)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        context = SparkContext.getOrCreate(conf)
    except Exception as err:
        java = os.environ.get("JAVA_HOME", "not set")
        raise DeploymentError(
            f"could not start Spark (master {master!r}): {err}. Spark 4 needs Java 17 or newer "
            f"on PATH or in JAVA_HOME (JAVA_HOME={java})"
        ) from err
    context.setLogLevel(config.get(Options.SPARK_LOG_LEVEL))
    return context


def quiet_py4j() -> None:
    """Keep py4j's per-connection INFO lines out of the job's logs (module docstring); a
    level the job set on the ``py4j`` logger is kept."""
    logger = logging.getLogger("py4j")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def _refuse_connect() -> None:
    if os.environ.get("SPARK_CONNECT_MODE_ENABLED") or os.environ.get("SPARK_REMOTE"):
        raise ConfigurationError(_CONNECT_MESSAGE)


def _refuse_connect_session(session: object) -> None:
    if type(session).__module__.startswith("pyspark.sql.connect"):
        raise ConfigurationError(_CONNECT_MESSAGE)


_CONNECT_MESSAGE = (
    "execution.target 'spark' needs a classic SparkContext: Spark Connect sessions have no RDD "
    "API, so undertow cannot run its workers as a barrier stage there. Run the job with a "
    "classic session (spark-submit, or unset SPARK_REMOTE) or use execution.target 'local'"
)
