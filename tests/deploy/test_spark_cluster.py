"""``spark-submit JOB.py`` on several executor JVMs, one of them killed mid-run.

Runs :mod:`tests.deploy.cluster_job` with ``spark-submit --master local-cluster[2,2,1024]``
(Spark's standalone master and two workers inside the driver JVM, two real executor JVMs): the
job picks up spark-submit's session, one executor JVM is killed with ``kill -9``, and the job
must restart once and end with the oracle all 0. Its own process, because a Python process can
host one SparkContext only and the suite's shared session uses ``local[2]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark


def test_spark_submit_on_two_executors_survives_an_executor_kill(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["SPARK_HOME"] = os.path.dirname(pyspark.__file__)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    submit = os.path.join(env["SPARK_HOME"], "bin", "spark-submit")
    job = Path(__file__).with_name("cluster_job.py")
    completed = subprocess.run(
        [submit, "--master", "local-cluster[2,2,1024]",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         str(job), str(tmp_path / "checkpoints")],
        env=env, capture_output=True, text=True, timeout=400, cwd=tmp_path,
    )  # fmt: skip
    output = completed.stdout + completed.stderr
    telling = [line for line in output.splitlines()
               if any(w in line for w in ("ERROR", "Exception", "Error:", "[undertow]", "ORACLE",
                                          "killed", "Traceback"))]  # fmt: skip
    tail = "\n".join(telling[-60:] + output.splitlines()[-10:])
    assert completed.returncode == 0, tail
    assert "killed executor JVM" in completed.stdout, tail
    assert "ORACLE lost=0, duplicated=0, out_of_order=0, corrupt=0" in completed.stdout, tail
    assert "restarts 1" in completed.stdout or "restarts 2" in completed.stdout, tail
    assert "master local-cluster[2,2,1024]" in output, tail
