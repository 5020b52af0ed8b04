"""``undertow run`` of a script whose record type is a class of the script itself (issue 26).

The script is ``__main__`` of the driver only: workers (local processes, Spark's Python
workers) get its classes by value. The records cross processes (a rebalance and a key-by), the
state holding them goes into checkpoints, and ``print()`` in the user's function reaches the
driver's stdout, where the print sink's records are. On Spark (``pyspark.daemon`` is the
workers' ``__main__``) the same is checked by test_run_on_spark.py, in the one Spark run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).parent / "jobs" / "user_classes_job.py"

HIGHEST = [
    f"highest of s{k}: WaterSensor(s{k},{i},{1000 * i})" for k in range(3) for i in range(k, 12, 3)
]
SEEN = [f"seen WaterSensor(s{i % 3},{i},{1000 * i})" for i in range(12)]
ROWS = ["row Row(id='s0', vc=0, ts=0)", "row Row(id='s1', vc=1, ts=1000)"]


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run(
        [sys.executable, "-m", "undertow.cli.main", "run", "--no-status",
         "-D", "restart-strategy.type=none", *argv, str(JOB)],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _printed(stdout: str) -> list[str]:
    """stdout's lines without the print sink's ``N> `` subtask prefix, sorted: the records and
    the user's ``print()`` lines, each whole."""
    return sorted(line.split("> ", 1)[-1] for line in stdout.splitlines())


def test_a_script_class_as_record_type_on_local_processes(tmp_path: Path) -> None:
    done = _run(tmp_path, "-t", "local")
    assert _printed(done.stdout) == sorted(HIGHEST + ROWS + SEEN), done.stdout
    assert "seen" not in done.stderr
