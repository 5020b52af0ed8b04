"""A job on the ``spark`` target prints only its own output on stdout.

The job logs at INFO to stdout, as PyFlink's examples do; py4j must not add its
"Closing down clientserver connection" lines at exit (issue 11).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

JOB = textwrap.dedent(
    """
    import logging
    import sys

    from undertow.datastream import StreamExecutionEnvironment

    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.get_configuration().set_string("spark.master", "local[1]")
    env.get_configuration().set_string("undertow.spark.log-level", "ERROR")
    env.from_collection([1, 2, 3]).map(lambda x: x * 10).print()
    env.execute("stdout")
    """
)


@pytest.mark.spark
def test_spark_job_stdout_has_only_the_jobs_output(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["10", "20", "30"], done.stdout
