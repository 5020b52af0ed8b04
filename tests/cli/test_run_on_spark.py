"""``undertow run`` with the default target: local Spark, in a process of its own.

Checks what a user sees: the Spark application id, master and REST address at start, the job's
output with what its map ``print()`` s (records of a class of the script, issue 26), and worker
log lines that name job, worker, operator and subtask (on Spark they reach the driver's stderr
through the JVM, so only a separate process can read them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).parent / "jobs" / "logging_job.py"


def test_undertow_run_deploys_on_local_spark_by_default(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    completed = subprocess.run(
        [sys.executable, "-m", "undertow.cli.main", "run", "--master", "local[2]", "-p", "2",
         str(JOB)],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    out, err = completed.stdout, completed.stderr
    assert completed.returncode == 0, err[-3000:]
    started = re.search(r"\[undertow\] running on Spark [\d.]+, master local\[2\], application "
                        r"(local-\d+): 2 workers in one barrier stage", err)  # fmt: skip
    assert started is not None, err[-3000:]
    assert re.search(r"\[undertow\] REST API at http://127\.0\.0\.1:\d+", err), err[-3000:]
    job = re.search(r"^JOB (\w+)$", out, re.M)
    assert job is not None, out
    printed = sorted(int(line.split("> ")[1]) for line in out.splitlines() if "> " in line)
    assert printed == [v * 10 for v in range(20)]
    assert "print from map, value 7" in out.splitlines() and "print from map" not in err
    logged = re.search(r"WARNING \[job (\w{8}) worker \d Logging[^\]]* \(\d/2\)\] user\.job: "
                       r"hello from map, value 7", err)  # fmt: skip
    assert logged is not None, err[-3000:]
    assert logged.group(1) == job.group(1)[:8]
