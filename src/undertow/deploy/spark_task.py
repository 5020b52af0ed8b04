"""What one task of undertow's Spark barrier stage runs: one worker, until the job ends.

Lifecycle and Spark's Python worker reuse: the worker's loop, sockets and pools are closed
before the task returns, and ``sys.path`` is restored, so nothing leaks into the next task that
the same Python process runs.
While the worker runs, the process is named ``undertow-worker`` (``/proc/PID/comm``), which is
how the testing kit finds it for ``kill -9``; the old name is restored afterwards.

Log lines go to the task's stderr, which is the executor's log, with job, worker, operator and
subtask in each (:mod:`undertow.runtime.worker.log_context`). A worker that fails raises,
which fails the barrier stage; Spark never retries a barrier ResultStage, so recovery is the
JobMaster's (it submits a new stage for the next attempt).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from undertow.common import python_dependencies
from undertow.core.config import Options
from undertow.core.types import AttemptNumber
from undertow.deploy.process_name import WORKER_PROCESS_NAME, set_process_name
from undertow.deploy.python_environment import WorkerEnvironment, spark_files
from undertow.runtime.worker.log_context import worker_log_handler
from undertow.runtime.worker.worker import run_worker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SparkTaskArgs:
    """The closure of every task of one attempt's barrier stage."""

    attempt: AttemptNumber
    master: tuple[str, int]
    secret: bytes
    config: dict[str, str]
    #: The driver's ``sys.version_info[:2]``; the task refuses to run on another version.
    python_version: tuple[int, int]
    #: The driver's ``sys.path``: entries that exist on the executor and are missing from its
    #: path are appended while the task runs, so modules the job imports from the driver's
    #: working tree load on local masters (on a cluster, ship them with ``--py-files``).
    driver_path: tuple[str, ...] = ()


def run_spark_task(args: SparkTaskArgs, _rows: Iterator[Any]) -> Iterator[tuple[int, int, float]]:
    """``mapPartitions`` body of the barrier stage; yields ``(worker index, pid, seconds)``."""
    from pyspark import BarrierTaskContext

    here = sys.version_info[:2]
    if here != args.python_version:
        raise RuntimeError(
            f"undertow on Spark: the executor runs Python {here[0]}.{here[1]} but the driver "
            f"runs {args.python_version[0]}.{args.python_version[1]}; set spark.pyspark.python "
            "(or PYSPARK_PYTHON) to the same version on both"
        )
    context = BarrierTaskContext.get()
    index = context.partitionId()
    config = dict(args.config)
    if Options.BIND_HOST.key not in config:
        address = context.getTaskInfos()[index].address
        config[Options.BIND_HOST.key] = address.rsplit(":", 1)[0]
    started = time.monotonic()
    old_path = list(sys.path)
    sys.path.extend(p for p in args.driver_path if p not in old_path and os.path.isdir(p))
    old_name = set_process_name(WORKER_PROCESS_NAME)
    try:
        dependencies = python_dependencies.read(config)
        with worker_log_handler(), WorkerEnvironment(dependencies, spark_files):
            run_worker(index, args.attempt, args.master, args.secret, config, forward_stdout=True)
    finally:
        sys.path[:] = old_path
        if old_name is not None:
            set_process_name(old_name)
    yield index, os.getpid(), time.monotonic() - started
