"""The Spark launcher's checks and helpers, without starting Spark (fakes stand in for the
SparkContext): what is refused before a barrier stage is submitted, and how Spark failures are
summarized."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from typing import Any

import pytest

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError, DeploymentError
from undertow.deploy.spark import SparkLauncher, _summary, _zip_package
from undertow.deploy.spark_session import get_spark_context


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class FakeContext:
    def __init__(self, slots: int, conf: dict[str, str], master: str = "local[2]") -> None:
        self.defaultParallelism = slots
        self.master = master
        self.conf = FakeConf(conf)

    def getConf(self) -> FakeConf:
        return self.conf


def launcher(slots: int = 2, **conf: str) -> SparkLauncher:
    return SparkLauncher(FakeContext(slots, conf), Configuration())  # type: ignore[arg-type]


def test_a_stage_wider_than_the_slots_is_refused_naming_both_numbers() -> None:
    launcher(slots=4).check(4)
    with pytest.raises(DeploymentError, match=r"needs 5 Spark task slots .* local\[2\] offers 4"):
        launcher(slots=4).check(5)


def test_dynamic_allocation_is_refused() -> None:
    settings = {"spark.dynamicAllocation.enabled": "true"}
    with pytest.raises(DeploymentError, match="SPARK-24942"):
        launcher(**settings).check(1)


def test_the_python_idle_timeout_kill_is_refused() -> None:
    settings = {"spark.python.worker.killOnIdleTimeout": "true"}
    with pytest.raises(DeploymentError, match="killOnIdleTimeout"):
        launcher(**settings).check(1)


def test_spark_connect_is_refused_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost")
    with pytest.raises(ConfigurationError, match="Spark Connect sessions have no RDD"):
        get_spark_context(Configuration())


def test_summary_keeps_the_python_error_of_a_failed_stage() -> None:
    text = (
        "An error occurred while calling o123.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
        '  File "/x/worker.py", line 3, in run\n'
        "ModuleNotFoundError: No module named 'jobs'\n"
        "\tat org.apache.spark.api.python.BasePythonRunner...\n"
    )
    assert _summary(RuntimeError(text)) == "ModuleNotFoundError: No module named 'jobs'"
    mismatch = RuntimeError("[PYTHON_VERSION_MISMATCH] Python in worker has different version")
    assert "same version" in _summary(mismatch)
    # a user's own SparkSession, started without spark.pyspark.python: python3 from PATH
    missing = RuntimeError(text.replace("'jobs'", "'undertow'"))
    assert _summary(missing).startswith(
        "ModuleNotFoundError: No module named 'undertow': the executors' Python workers cannot "
        "import undertow. They run the PYSPARK_PYTHON of the moment the SparkContext started"
    )
    assert sys.executable in _summary(missing)


def test_the_shipped_zip_imports_undertow_in_a_clean_interpreter() -> None:
    path = _zip_package()
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert "undertow/__init__.py" in names
    assert "undertow/deploy/spark_task.py" in names
    assert not any("__pycache__" in n for n in names)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import undertow.deploy.spark_task as t; "
        "print(t.__file__)"
    )
    out = subprocess.run([sys.executable, "-I", "-c", probe, path], capture_output=True,
                         text=True, check=False)  # fmt: skip
    # -I ignores PYTHONPATH and user site; the package's dependencies come from site-packages.
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(path), out.stdout


def test_a_task_on_another_python_version_refuses_to_run_naming_both() -> None:
    from undertow.deploy.spark_task import SparkTaskArgs, run_spark_task

    args = SparkTaskArgs(0, ("127.0.0.1", 1), b"secret", {}, (2, 7))
    with pytest.raises(RuntimeError, match=r"executor runs Python 3\.\d+ but the driver runs 2\.7"):
        next(run_spark_task(args, iter([])))
