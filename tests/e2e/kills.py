"""Kill -9 a worker once a checkpoint completed, then wait for the job: shared by the e2e kill
tests. Reads the JobMaster's console lines from pytest's ``capsys``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from undertow.datastream import JobStatus
from undertow.testing.oracle import WorkerKiller

COMPLETED = re.compile(r"^\[undertow\] checkpoint (\d+) completed", re.M)
RESTARTING = re.compile(r"^\[undertow\] job \w+ failed \((?P<reason>.*)\); restarting", re.M)


def run_killing_a_worker_after_a_checkpoint(
    client: Any,
    capsys: pytest.CaptureFixture[str],
    seed: int,
    *,
    earliest_s: float,
    latest_s: float,
    timeout_s: float,
    checkpoint_within_s: float = 30.0,
    checkpoints: int = 1,
    flowed: Callable[[], bool] | None = None,
) -> tuple[Any, str]:
    """Wait until a checkpoint completed (so there is one to restore), start a seeded
    :class:`WorkerKiller`, wait for the job's result; return it and the console. Fails naming
    the seed if ``checkpoints`` checkpoints did not complete within ``checkpoint_within_s``
    (or the job ended before), the job failed, or no worker was killed. (Wait for several
    when the restore must carry state: a first checkpoint may come before any record got
    through a slow-starting pipeline, or pass ``flowed``: true once a checkpoint holds records,
    such as a sink's first committed output.)"""
    console = ""
    deadline = time.monotonic() + checkpoint_within_s
    while len(COMPLETED.findall(console)) < checkpoints or (flowed is not None and not flowed()):
        if time.monotonic() > deadline or client.get_job_status() is JobStatus.FINISHED:
            client.cancel()
            raise AssertionError(
                f"seed {seed}: {checkpoints} checkpoints (with records) did not complete within "
                f"{checkpoint_within_s} s (job "
                f"{client.get_job_status().value}); nothing to restore, no kill:\n{console}"
            )
        time.sleep(0.01)
        console += capsys.readouterr().err
    killer = WorkerKiller(seed, earliest_s=earliest_s, latest_s=latest_s).start()
    try:
        result = client.get_job_execution_result(timeout=timeout_s)
    except Exception as err:
        console += capsys.readouterr().err
        raise AssertionError(f"seed {seed}: the job failed: {err}\n{console}") from err
    finally:
        killer.cancel()
        client.cancel()
    console += capsys.readouterr().err
    assert killer.join(5) is not None, f"seed {seed}: no worker process was killed\n{console}"
    return result, console
