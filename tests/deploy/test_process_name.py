"""A worker's process name (:mod:`undertow.deploy.process_name`), which ``ps`` shows and the
testing kit kills by."""

from __future__ import annotations

import subprocess
import sys

import pytest

from undertow.deploy.process_name import WORKER_PROCESS_NAME

SCRIPT = """
from undertow.deploy.process_name import WORKER_PROCESS_NAME, set_process_name
old = set_process_name(WORKER_PROCESS_NAME)
print(old.decode(), open("/proc/self/comm").read().strip())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl names are Linux's")
def test_the_name_is_set_within_the_kernels_15_bytes_and_the_old_one_returned() -> None:
    assert len(WORKER_PROCESS_NAME) <= 15
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out[1] == WORKER_PROCESS_NAME.decode() and out[0] != out[1]
