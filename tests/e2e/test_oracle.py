"""The exactly-once oracle end to end (TESTING.md): PIPELINE topology, every exchange type,
with no faults, with scheduled failures (in ``map`` and in a snapshot) and with a seeded random
kill -9 of a worker process.

Each job is small (20 keys x 2000 records, payloads up to 64 KiB) and its source is throttled
where failures must land between checkpoints. The oracle reads only what the verifying sink
reports at the end of the attempt that finished; all six counts must be 0.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import JobStatus
from undertow.testing.oracle import (
    FailingMap,
    FailingSnapshot,
    OracleResult,
    OracleSource,
    WorkerKiller,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory

KEYS, RECORDS_PER_KEY = 20, 2000
#: per source reader; 2 readers, so a run lasts about 4 s of source time
THROTTLED = 5_000.0
JOB_TIMEOUT_S = 120.0
RESTARTING = re.compile(r"^\[undertow\] job \w+ failed \((?P<reason>.*)\); restarting", re.M)


def checkpointing(directory: Path, restarts: int) -> dict[str, Any]:
    """Checkpoints every 100 ms into ``directory``; at most ``restarts`` immediate restarts."""
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
    }


def run(env: Any, name: str) -> Any:
    """Execute with a time-out that turns a hang into a failure (and cancels the job)."""
    client = env.execute_async(name)
    try:
        return client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    except TimeoutError:
        client.cancel()
        raise


def test_no_failures_no_checkpoints(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    source = OracleSource(KEYS, RECORDS_PER_KEY)
    build_pipeline(env, source)

    oracle = OracleResult.from_job_result(run(env, "oracle"), KEYS, RECORDS_PER_KEY)

    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected == KEYS * RECORDS_PER_KEY
    assert oracle.keys_seen == KEYS
    assert oracle.restarts == 0


COMPLETED = re.compile(r"^\[undertow\] checkpoint \d+ completed", re.M)


def restart_reasons(console: str) -> list[str]:
    """Why the job restarted, from the JobMaster's console lines (it runs in this process)."""
    return [m.group("reason") for m in RESTARTING.finditer(console)]


def test_scheduled_failures_with_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    env = make_env(parallelism=2, config=checkpointing(tmp_path, failing.scheduled_failures))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, failing_map=failing)

    oracle = OracleResult.from_job_result(run(env, "oracle"), KEYS, RECORDS_PER_KEY)

    console = capsys.readouterr().err
    reasons = restart_reasons(console)
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, reasons)
    assert len(reasons) == 2 and all("InjectedFailure: FailingMap" in r for r in reasons), reasons
    assert len(COMPLETED.findall(console)) >= 10, "TESTING.md: at least 10 checkpoints complete"


def test_failing_map_then_failing_snapshot(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flink's recipe, shortened: ``map`` fails in attempt 0, the stateful operator's
    snapshot in attempt 1 (a declined checkpoint fails the job: none is tolerated)."""
    env = make_env(parallelism=2, config=checkpointing(tmp_path, restarts=2))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, failing_map=FailingMap([2]),
                   failing_snapshot=FailingSnapshot([5], first_attempt=1))  # fmt: skip

    oracle = OracleResult.from_job_result(run(env, "oracle"), KEYS, RECORDS_PER_KEY)

    reasons = restart_reasons(capsys.readouterr().err)
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, reasons)
    assert len(reasons) == 2, reasons
    assert "InjectedFailure: FailingMap.map" in reasons[0], reasons
    assert "InjectedFailure: FailingSnapshot.snapshot" in reasons[1], reasons


@pytest.mark.parametrize("target", ["local", "spark"])
def test_random_worker_kill_with_checkpoints(make_env: EnvFactory, tmp_path: Path) -> None:
    seed = oracle_seed()
    print(f"oracle seed {seed} (replay: UNDERTOW_ORACLE_SEED={seed})")
    env = make_env(parallelism=2, config=checkpointing(tmp_path, restarts=3))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source)

    client = env.execute_async("oracle")
    deadline = time.monotonic() + 30
    while client.get_job_status() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    killer = WorkerKiller(seed, earliest_s=0.3, latest_s=1.5).start()
    try:
        result = client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    finally:
        killer.cancel()
        client.cancel()
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)

    assert killer.join(5) is not None, f"seed {seed}: no worker process was killed"
    oracle.assert_exactly_once()
    assert oracle.restarts == 1, oracle


def test_at_least_once_checkpoints_lose_nothing(make_env: EnvFactory, tmp_path: Path) -> None:
    """AT_LEAST_ONCE: barriers are only counted (no alignment, nothing blocks), so records may
    be replayed after a failure, but none may be lost or corrupted."""
    config = checkpointing(tmp_path, restarts=1)
    config["execution.checkpointing.mode"] = "AT_LEAST_ONCE"
    env = make_env(parallelism=2, config=config)
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, failing_map=FailingMap([2]))

    oracle = OracleResult.from_job_result(run(env, "oracle at-least-once"), KEYS, RECORDS_PER_KEY)

    assert oracle.restarts == 1
    assert oracle.lost == 0 and oracle.corrupt == 0, oracle
    assert oracle.keygroup_mismatch == 0, oracle
