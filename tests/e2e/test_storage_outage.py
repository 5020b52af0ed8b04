"""Checkpoint storage unreachable for a while (issue 30, "Storage unreachable").

The oracle job checkpoints to S3 (moto's server on loopback, reached through the ``AWS_*``
environment as a user's job reaches S3). Once checkpoints complete, the store goes down for
longer than the checkpoint timeout, then comes back:

* ``tolerated``: checkpoints fail while it is down (``tolerable-failed-checkpoints`` allows
  them); the job neither fails nor restarts, checkpoints complete again once it is back;
* ``restarts``: no failure tolerated, so the first failed checkpoint restarts the job (fixed
  delay), which restores from the store once it answers again.

Either way the oracle's six counts are 0. On ``local-threads``: the store's address reaches
the workers through this process's environment.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline
from undertow.testing.s3 import MotoS3

from .conftest import EnvFactory
from .kills import COMPLETED, RESTARTING
from .restore_evidence import evidence

KEYS, PER_KEY = 8, 1000
RATE = 600.0  # records per second per reader: the job runs for about 7 s
OUTAGE_S = 3.0  # three checkpoint timeouts


@pytest.fixture(scope="module")
def store() -> Iterator[MotoS3]:
    """One server for the module, on one port: fsspec caches its S3 client, which keeps the
    endpoint it was made with."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    with MotoS3("undertow-outage") as s3, pytest.MonkeyPatch.context() as patch:
        for name, value in s3.environment.items():
            patch.setenv(name, value)
        yield s3


def _wait_for_completed(capsys: pytest.CaptureFixture[str], console: list[str], n: int) -> None:
    deadline = time.monotonic() + 60.0
    while len(COMPLETED.findall("".join(console))) < n:
        assert time.monotonic() < deadline, f"{n} checkpoints did not complete: {console}"
        time.sleep(0.05)
        console.append(capsys.readouterr().err)


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("tolerated", [True, pytest.param(False, marks=pytest.mark.restores)],
                         ids=["tolerated", "restarts"])  # fmt: skip
def test_the_oracle_survives_a_storage_outage(
    make_env: EnvFactory, store: MotoS3, tmp_path: Path, tolerated: bool,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "200 ms",
        "execution.checkpointing.timeout": "1 s",
        "execution.checkpointing.dir": f"s3://{store.bucket}/{uuid.uuid4().hex}",
        "execution.checkpointing.tolerable-failed-checkpoints": "1000" if tolerated else "0",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "20",
        "restart-strategy.fixed-delay.delay": "500 ms",
    })  # fmt: skip
    evidence_dir = str(tmp_path / "evidence")
    build_pipeline(env, OracleSource(KEYS, PER_KEY, records_per_second=RATE),
                   evidence_dir=evidence_dir)  # fmt: skip
    console: list[str] = []
    with caplog.at_level(logging.INFO, logger="undertow.runtime.checkpoint.coordinator"):
        client = env.execute_async("oracle, storage outage")
        try:
            _wait_for_completed(capsys, console, 2)
            before = len(COMPLETED.findall("".join(console)))
            store.down()
            time.sleep(OUTAGE_S)
            store.up()
            result = client.get_job_execution_result(timeout=120.0)
        finally:
            store.up()
            client.cancel()
    console.append(capsys.readouterr().err)
    text = "".join(console)

    aborted = [r.getMessage() for r in caplog.records if "aborted" in r.getMessage()]
    assert aborted, f"no checkpoint failed while the store was down: {text}"
    assert len(COMPLETED.findall(text)) > before, f"no checkpoint after the outage: {text}"
    restarts = len(RESTARTING.findall(text))
    oracle = OracleResult.from_job_result(result, KEYS, PER_KEY, evidence_dir)
    oracle.assert_exactly_once()
    if tolerated:
        assert restarts == 0, text
    else:
        assert restarts >= 1, text
        evidence(oracle.restored_keys > 0, f"no state restored after the outage: {oracle}")
        oracle.assert_restored()
