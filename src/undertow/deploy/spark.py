"""The ``spark`` target: each attempt's workers are the tasks of one Spark barrier stage.

Checked before anything is submitted (Spark would otherwise wait ~10 minutes or fail late):

* W must not exceed the task slots Spark offers (``defaultParallelism``);
* dynamic allocation cannot host a barrier stage (SPARK-24942);
* Spark's Python idle-timeout kill would end the silent long-running tasks.

Threading: ``launch``, ``kill``, ``exited`` and ``describe_exit`` are called by the JobMaster
(its loop thread or its executor); ``wait`` blocks and is called off the loop. One attempt runs
at a time; ``launch`` of the next attempt happens after ``wait``/``kill`` of the previous one.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import tempfile
import threading
import uuid
import zipfile
from typing import TYPE_CHECKING

from undertow.common import python_dependencies
from undertow.core.config import Configuration, Options
from undertow.core.errors import DeploymentError
from undertow.core.types import AttemptNumber
from undertow.deploy.python_environment import ship_to_spark
from undertow.deploy.spark_task import SparkTaskArgs, run_spark_task

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger(__name__)

#: Application ids to which this driver already shipped the undertow package.
_SHIPPED: set[str] = set()
_SHIP_LOCK = threading.Lock()


class SparkLauncher:
    """A :class:`~undertow.runtime.master.job_master.WorkerLauncher` on a SparkContext."""

    def __init__(self, context: SparkContext, config: Configuration) -> None:
        self.sc = context
        self.config = config
        self._user_bind_host = config.contains_key(Options.BIND_HOST.key)
        self._run_id = uuid.uuid4().hex[:8]
        self._thread: threading.Thread | None = None
        self._group = ""
        #: (job id, job name) once :meth:`name_job` was called: the Spark UI shows them
        self._job: tuple[str, str] | None = None
        self._num_workers = 0
        self._error: BaseException | None = None
        self._announced = False

    # -- checks before submission ------------------------------------------------------------
    @property
    def master(self) -> str:
        return str(self.sc.master)

    def available_slots(self) -> int:
        """Task slots Spark offers: executor cores / task cpus (``defaultParallelism``)."""
        return int(self.sc.defaultParallelism)

    def check(self, num_workers: int) -> None:
        """Raise :class:`DeploymentError` if a barrier stage of ``num_workers`` cannot run."""
        conf = self.sc.getConf()
        if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
            raise DeploymentError(
                "Spark's dynamic allocation cannot host a barrier stage (SPARK-24942): set "
                "spark.dynamicAllocation.enabled=false and give the job static executors"
            )
        if conf.get("spark.python.worker.killOnIdleTimeout", "false").lower() == "true":
            raise DeploymentError(
                "spark.python.worker.killOnIdleTimeout=true would kill undertow's workers, which "
                "send nothing to Spark while the job runs: set it to false"
            )
        slots = self.available_slots()
        if num_workers > slots:
            raise DeploymentError(
                f"undertow needs {num_workers} Spark task slots for its workers (one barrier "
                f"stage), but master {self.master} offers {slots}: lower undertow.workers "
                "(--workers) or give Spark more executor cores"
            )

    # -- WorkerLauncher ----------------------------------------------------------------------
    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: AttemptNumber,
        config: dict[str, str],
    ) -> None:  # fmt: skip
        self._ship_package()
        ship_to_spark(self.sc, python_dependencies.read(config))
        worker_config = dict(config)
        if not self._user_bind_host:
            worker_config.pop(Options.BIND_HOST.key, None)
        args = SparkTaskArgs(attempt, master, secret, worker_config, sys.version_info[:2],
                             tuple(p for p in sys.path if p))  # fmt: skip
        self._num_workers = num_workers
        self._error = None
        run = self._job[0] if self._job is not None else self._run_id
        self._group = f"undertow-{run}-attempt-{attempt}"
        if not self._announced:
            self._announced = True
            _console(
                f"running on Spark {self.sc.version}, master {self.master}, application "
                f"{self.sc.applicationId}: {num_workers} worker{'s' if num_workers != 1 else ''} "
                "in one barrier stage"
            )
        self._thread = threading.Thread(
            target=self._submit, args=(num_workers, args), name=f"undertow-spark-{self._group}",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def name_job(self, job_id: str, job_name: str) -> None:
        """Name the job groups and descriptions after the undertow job (before ``launch``)."""
        self._job = (job_id, job_name)

    def job_description(self, attempt: AttemptNumber) -> str:
        """The Spark job description of ``attempt`` (what the Spark UI's job list shows)."""
        if self._job is None:
            return f"undertow attempt {attempt}"
        return f"undertow job {self._job[1]!r} ({self._job[0]}), attempt {attempt}"

    def _submit(self, num_workers: int, args: SparkTaskArgs) -> None:
        self.sc.setJobGroup(self._group, self.job_description(args.attempt), True)
        try:
            rdd = self.sc.parallelize(range(num_workers), num_workers)
            rdd.barrier().mapPartitions(functools.partial(run_spark_task, args)).collect()
        except BaseException as err:
            self._error = err
            log.info("Spark job group %s ended: %s", self._group, _summary(err))

    def wait(self, timeout: float) -> bool:
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def kill(self) -> None:
        """The hard stop: cancel the attempt's Spark job group (Spark kills its Python
        workers) and wait a little for the job to end."""
        if self._thread is None:
            return
        self.sc.cancelJobGroup(self._group)
        self._thread.join(10.0)

    def exited(self) -> list[int]:
        """All workers once the attempt's Spark job has ended (a barrier stage ends whole)."""
        thread = self._thread
        if thread is None or thread.is_alive():
            return []
        return list(range(self._num_workers))

    def describe_exit(self, worker_index: int) -> str:
        """Spark's reason once the stage has failed; waits up to 1 s for Spark to notice."""
        thread = self._thread
        if thread is not None:
            thread.join(1.0)
        if thread is not None and thread.is_alive():
            return f"task {worker_index} of Spark job group {self._group} still running"
        if self._error is not None:
            return f"Spark job group {self._group} failed: {_summary(self._error)}"
        return f"task {worker_index} of Spark job group {self._group} finished"

    # -- shipping the package ------------------------------------------------------------------
    def _ship_package(self) -> None:
        mode = self.config.get(Options.SPARK_SHIP_PACKAGE)
        if mode == "never" or (mode == "auto" and self.master.startswith("local")):
            return
        app = str(self.sc.applicationId)
        with _SHIP_LOCK:
            if app in _SHIPPED:
                return
            path = _zip_package()
            self.sc.addPyFile(path)
            _SHIPPED.add(app)
            log.info("shipped %s to the executors of %s", path, app)


def _zip_package() -> str:
    """A zip of the installed ``undertow`` package (sources only) in a temporary directory."""
    import undertow

    root = os.path.dirname(os.path.abspath(undertow.__file__))
    target = os.path.join(tempfile.mkdtemp(prefix="undertow-ship-"), "undertow.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith((".py", ".typed")):
                    full = os.path.join(folder, name)
                    archive.write(full, os.path.join("undertow", os.path.relpath(full, root)))
    return target


def _summary(err: BaseException) -> str:
    """The useful part of a Spark job failure: Py4J errors carry whole JVM stack traces."""
    text = str(err)
    if "PYTHON_VERSION_MISMATCH" in text:
        return (
            "the executors run another Python version than the driver; set "
            "spark.pyspark.python (or PYSPARK_PYTHON) to the same version on both"
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python_errors = [
        line for line in lines if line.split(":", 1)[0].endswith(("Error", "Exception"))
    ]
    picked = python_errors[-1] if python_errors else (lines[0] if lines else type(err).__name__)
    if picked.startswith("ModuleNotFoundError: No module named 'undertow"):
        # a SparkContext started before undertow's (the user's own SparkSession) keeps the
        # worker Python it was given (PySpark reads PYSPARK_PYTHON once, at start; a
        # builder's spark.pyspark.python does not reach it), by default the python3 on PATH
        return (
            f"{picked[:200]}: the executors' Python workers cannot import undertow. They run "
            "the PYSPARK_PYTHON of the moment the SparkContext started (default python3 on "
            "PATH): set os.environ['PYSPARK_PYTHON'] to an interpreter with undertow "
            f"({sys.executable} here) before creating your SparkSession, or let undertow "
            "start Spark"
        )
    return picked[:500]


def _console(line: str) -> None:
    sys.stderr.write(f"[undertow] {line}\n")
    sys.stderr.flush()
