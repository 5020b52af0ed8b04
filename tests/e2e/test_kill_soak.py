"""The random-kill soak (``make soak``): unaligned checkpoints under backpressure, many seeded
``kill -9`` of worker processes in one job, the oracle all 0 at the end.

Per seed, one oracle PIPELINE job runs on ``local`` with the backpressure settings of
:mod:`.test_unaligned_checkpoints`. Then, ``UNDERTOW_SOAK_KILLS`` times (default 50), the test
waits for the job to be healthy again (a restore line, then a checkpoint completed after it)
within 60 s, and kills a seeded random worker process after a seeded random delay. After the
last kill the job must finish with all six counts 0, exactly one restart per kill, one restore
line per kill, and every restore evidenced. ``UNDERTOW_SOAK_SEEDS`` (default 20) seeds run,
from ``UNDERTOW_TEST_SEED`` on if set (else a random base, printed).
"""

from __future__ import annotations

import functools
import os
import random
import time
from pathlib import Path

import pytest

from undertow.datastream import JobStatus
from undertow.testing.oracle import (
    OracleResult,
    OracleSource,
    build_pipeline,
    kill_worker_process,
    live_workers_of,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import COMPLETED
from .restore_evidence import RESTORED, RestWatcher, assert_restores
from .test_unaligned_checkpoints import KEYS, RATE, SINK_SPIN_S, config

KILLS = int(os.environ.get("UNDERTOW_SOAK_KILLS", "50"))
SEEDS = int(os.environ.get("UNDERTOW_SOAK_SEEDS", "20"))
HEALTHY_WITHIN_S = 60.0
#: source time per kill: the source must outlast every kill (restores rewind it a little)
SOURCE_S_PER_KILL = 1.5
RECORDS_PER_KEY = int(KILLS * SOURCE_S_PER_KILL * RATE * 2 / KEYS) + 300
#: the job's result is awaited this long after the last kill: ten times the sinks' own work
#: for every record (the job is sink-bound; on a loaded machine it drains slowly but steadily)
RESULT_TIMEOUT_S = KEYS * RECORDS_PER_KEY * SINK_SPIN_S / 2 * 10 + 120
#: a seed's own bound, from the bounds above (the suite's 300 s per test is for ordinary tests:
#: 50 kills need longer on a loaded machine)
SEED_TIMEOUT_S = int(KILLS * (HEALTHY_WITHIN_S + 1.0) + HEALTHY_WITHIN_S + RESULT_TIMEOUT_S + 60)


@functools.cache
def _base_seed() -> int:
    """The run's base seed, drawn (and printed) once."""
    return oracle_seed()


def _wait_healthy(client: object, capsys: pytest.CaptureFixture[str], console: list[str],
                  restores: int, what: str) -> float:  # fmt: skip
    """Until ``restores`` restore lines were printed and a checkpoint completed after the
    last of them, within HEALTHY_WITHIN_S; appends what was printed to ``console``. Returns
    the seconds it waited."""
    began = time.monotonic()
    deadline = began + HEALTHY_WITHIN_S
    while True:
        console.append(capsys.readouterr().err)
        text = "".join(console)
        lines = list(RESTORED.finditer(text))
        if len(lines) >= restores:
            after = lines[restores - 1].end() if restores else 0
            if COMPLETED.search(text, after):
                return time.monotonic() - began
        status = client.get_job_status().result()  # type: ignore[attr-defined]
        if time.monotonic() > deadline or status in (JobStatus.FAILED, JobStatus.FINISHED):
            raise AssertionError(
                f"{what}: not healthy within {HEALTHY_WITHIN_S} s (job {status.value}, "
                f"{len(lines)} of {restores} restores):\n{text[-3000:]}"
            )
        time.sleep(0.05)


@pytest.mark.restores
@pytest.mark.soak
@pytest.mark.timeout(SEED_TIMEOUT_S)
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("index", range(SEEDS))
def test_random_kills_under_backpressure_unaligned(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int
) -> None:
    seed = _base_seed() + index
    rng = random.Random(seed)
    records_per_key = RECORDS_PER_KEY
    env = make_env(parallelism=2, config=config(tmp_path, "unaligned", restarts=KILLS + 1))
    evidence = tmp_path / "evidence"
    build_pipeline(env, OracleSource(KEYS, records_per_key, records_per_second=RATE),
                   sink_spin_s=SINK_SPIN_S, evidence_dir=evidence)  # fmt: skip
    started = time.monotonic()
    client = env.execute_async(f"kill soak seed {seed}")
    watcher = RestWatcher(client)
    console: list[str] = []
    #: seconds from each kill until the job was healthy again
    healthy_after: list[float] = []
    try:
        for kill in range(KILLS):
            what = f"seed {seed} (UNDERTOW_TEST_SEED={_base_seed()}, index {index}), kill {kill}"
            waited = _wait_healthy(client, capsys, console, kill, what)
            if kill:
                healthy_after.append(waited)
            time.sleep(rng.uniform(0.1, 1.0))
            killed = kill_worker_process(rng.randrange(2**32), live_workers_of(client))
            assert killed is not None, f"{what}: no worker"
        last = _wait_healthy(client, capsys, console, KILLS, f"seed {seed}, after the last kill")
        healthy_after.append(last)
        result = client.get_job_execution_result(timeout=RESULT_TIMEOUT_S)
    finally:
        client.cancel()
        rest_ids = watcher.stop()
    console.append(capsys.readouterr().err)
    text = "".join(console)
    oracle = OracleResult.from_job_result(result, KEYS, records_per_key, evidence)
    healthy_after.sort()
    with capsys.disabled():  # the figures for the README, past the console capture
        took = time.monotonic() - started
        print(f"\n[soak] seed {seed}: {KILLS} kills survived in {took:.0f} s; "
              f"healthy again after a kill: median {healthy_after[len(healthy_after) // 2]:.1f} s, "
              f"max {healthy_after[-1]:.1f} s; {oracle}")  # fmt: skip
    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == KILLS, (seed, oracle)
    assert_restores(text, rest_ids, restores=KILLS)
    oracle.assert_restored()
