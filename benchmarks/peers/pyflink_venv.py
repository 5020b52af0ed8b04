"""PyFlink 2.3.0 in a venv of its own, created on demand for side-by-side benchmarks.

undertow never depends on apache-flink: the benchmarks run PyFlink jobs as subprocesses of
this venv's Python. Thread mode embeds CPython in the JVM through pemja, which finds libpython
with ``find_libpython`` and reads packages from ``PYTHONPATH`` (the embedded interpreter does
not see the venv otherwise), so :func:`pyflink_command` sets both. Needs Java 17 on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PYFLINK_VERSION = "2.3.0"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / ".bench" / "pyflink-venv"


def venv_dir() -> Path:
    return Path(os.environ.get("UNDERTOW_PYFLINK_VENV", DEFAULT_DIR))


def ensure_pyflink() -> Path:
    """The venv's Python, after creating the venv and installing PyFlink if needed."""
    directory = venv_dir()
    python = directory / "bin" / "python"
    probe = [str(python), "-c", "import pyflink, find_libpython, pemja"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    if shutil.which("java") is None:
        raise SystemExit("PyFlink needs Java 17 on PATH (apt-get install openjdk-17-jre-headless)")
    print(f"installing apache-flink=={PYFLINK_VERSION} into {directory} (once) ...", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(directory)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"apache-flink=={PYFLINK_VERSION}",
                    "find_libpython", "pemja"], check=True)  # fmt: skip
    return python


def pyflink_environment(python: Path) -> dict[str, str]:
    """The environment for a PyFlink subprocess (thread mode's embedded interpreter included)."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (purelib, env.get("PYTHONPATH")) if p)
    env["PATH"] = os.pathsep.join((str(python.parent), env.get("PATH", "")))
    return env
