"""Waiting for a job that closing its ``execute_and_collect`` iterator cancelled: the iterator
has no client to wait on, so the tests wait for the JobMaster's line that names the checkpoint
it kept (printed once the checkpoint files are final, before the job reports CANCELED)."""

from __future__ import annotations

import time

import pytest

#: The JobMaster's console line once its retention decided (``retained checkpoint N of job ...``).
RETAINED = "retained checkpoint "


def wait_until_retained(capsys: pytest.CaptureFixture[str], timeout_s: float = 60.0) -> str:
    """Wait until the captured stderr holds the JobMaster's ``retained checkpoint`` line;
    everything read from stderr meanwhile (consumed from ``capsys``)."""
    deadline = time.monotonic() + timeout_s
    err = ""
    while RETAINED not in err:
        assert time.monotonic() < deadline, f"the cancelled job kept no checkpoint: {err[-2000:]}"
        time.sleep(0.02)
        err += capsys.readouterr().err
    return err
