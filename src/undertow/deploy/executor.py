"""Runs a job graph on the configured ``execution.target``.

The only place that knows about targets: everything below it runs the same code whatever the
target (STYLE.md principle 10).

* ``spark`` (the default): the workers are one Spark barrier stage of the active SparkSession,
  or of one built with ``spark.master`` (``local[*]`` unless configured); see
  :mod:`undertow.deploy.spark`.
* ``local``: worker processes on this machine, no Spark.
* ``local-threads``: workers as threads of this process (tests, debugging).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from undertow.common import python_dependencies
from undertow.core.config import Configuration, Options
from undertow.deploy.local import ProcessLauncher, ThreadLauncher, forkable
from undertow.deploy.python_environment import check_target, prepare_driver
from undertow.graph.job_graph import JobGraph
from undertow.runtime.master.job_master import JobMaster, WorkerLauncher, default_num_workers

if TYPE_CHECKING:
    from undertow.deploy.spark import SparkLauncher


def start_job(job_graph: JobGraph, config: Configuration) -> JobMaster:
    target = config.get(Options.TARGET)
    dependencies = python_dependencies.read(config)
    check_target(dependencies, target)
    if target == "local-threads":
        prepare_driver(dependencies)
    slots = max(v.parallelism for v in job_graph.vertices)
    launcher: WorkerLauncher
    spark: SparkLauncher | None = None
    if target == "spark":
        spark, num_workers, config = _spark_launcher(config, slots)
        launcher = spark
    else:
        launcher = ThreadLauncher() if target == "local-threads" else _process_launcher(config)
        num_workers = default_num_workers(config.get(Options.WORKERS), slots)
    master = JobMaster(job_graph, config, launcher, num_workers)
    if spark is not None:  # the Spark UI names the undertow job and its attempt
        spark.name_job(master.job_id, job_graph.job_name)
    master.start()
    return master


def _process_launcher(config: Configuration) -> ProcessLauncher:
    forked = config.get(Options.LOCAL_FORK_SERVER)
    launcher = ProcessLauncher(forked and forkable(python_dependencies.read(config)))
    launcher.warm()
    return launcher


def _spark_launcher(config: Configuration, slots: int) -> tuple[SparkLauncher, int, Configuration]:
    from undertow.deploy.spark import SparkLauncher
    from undertow.deploy.spark_session import get_spark_context

    launcher = SparkLauncher(get_spark_context(config), config)
    configured = config.get(Options.WORKERS)
    num_workers = configured if configured > 0 else max(1, min(slots, launcher.available_slots()))
    launcher.check(num_workers)
    config = Configuration(config)
    if not config.contains_key(Options.BIND_HOST.key):
        # The JobMaster listens where the executors can reach the driver.
        driver_host = launcher.sc.getConf().get("spark.driver.host") or "127.0.0.1"
        config.set(Options.BIND_HOST, driver_host)
    if launcher.master.startswith("local") and not config.contains_key(Options.REST_PORT.key):
        config.set(Options.REST_PORT, 0)  # as on the other local targets: any free port
    return launcher, num_workers, config
