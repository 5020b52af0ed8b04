"""``undertow run`` when the script is not there, and when its job fails: what the user sees.

Each run is ``undertow run`` in a process of its own, as a user starts it: a missing script
exits 2 with Python's one line (``can't open file '<path>': [Errno 2] ...``) and no traceback;
a failed job exits 1 and says ``job failed:`` once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FAILING_JOB = """
from undertow.datastream import StreamExecutionEnvironment


def boom(n):
    if n == 3:
        raise ValueError(f"cannot handle {n}")
    return n


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3, 4]).map(boom).name("boom").print()
env.execute("failing")
"""


def undertow_run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-m", "undertow.cli.main", "run", *argv],
        env=env, capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip


def test_a_missing_script_exits_2_with_one_line_naming_it(tmp_path: Path) -> None:
    done = undertow_run(tmp_path, "missing_script.py", "--some", "arg")

    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"undertow run: can't open file '{tmp_path / 'missing_script.py'}': "
        "[Errno 2] No such file or directory"
    ]
    assert done.stdout == ""


def test_a_script_that_raises_file_not_found_itself_is_not_called_missing(
    tmp_path: Path,
) -> None:
    """Only the script's own path is checked: an ``OSError`` from inside it is the script's
    (a plain traceback, exit 1 as Python's), not a missing script."""
    (tmp_path / "opens.py").write_text("open('no-such-input.csv')\n")

    done = undertow_run(tmp_path, "opens.py")

    assert done.returncode == 1, done.stderr
    assert "can't open file" not in done.stderr
    assert "FileNotFoundError" in done.stderr and "no-such-input.csv" in done.stderr


def test_a_failed_job_says_job_failed_once(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING_JOB)

    done = undertow_run(tmp_path, "-t", "local-threads", "--no-status", "failing.py")

    assert done.returncode == 1, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("undertow: ")]
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("undertow: job failed: operator 'boom' (subtask "), lines
    assert lines[0].endswith("raised ValueError: cannot handle 3 (on the record 3)"), lines
    assert "job failed: job failed" not in done.stderr, done.stderr[-3000:]
