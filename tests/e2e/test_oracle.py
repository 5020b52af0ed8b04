"""The exactly-once oracle end to end (docs/testing.md): PIPELINE topology, every exchange type,
with no faults, with scheduled failures (in ``map`` and in a snapshot) and with a seeded random
kill -9 of a worker process; and the ORDERED topology, where the sink also checks each key's
seq order.

Each job is small (20 keys x 2000 records, payloads up to 64 KiB) and its source is throttled
where failures must land between checkpoints. The oracle reads what the verifying sink reports
at the end of the attempt that finished, plus the anomalies every other attempt logged; all six
counts must be 0. Every restore test also asserts the restore itself (:mod:`.restore_evidence`):
restore lines, REST ``latest.restored``, a resumed source and restored state, raising
``RestoreEvidenceMissing``; each is marked ``restores``, so that the restore controls
(docs/testing.md) run it with restores that ignore their snapshot and expect exactly that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.testing.oracle import (
    FailingMap,
    FailingSnapshot,
    OracleResult,
    OracleSource,
    build_ordered_pipeline,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import COMPLETED, RESTARTING, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores

KEYS, RECORDS_PER_KEY = 20, 2000
#: per source reader; 2 readers, so a run lasts about 4 s of source time
THROTTLED = 5_000.0
JOB_TIMEOUT_S = 120.0


def checkpointing(directory: Path, restarts: int) -> dict[str, Any]:
    """Checkpoints every 100 ms into ``directory``; at most ``restarts`` immediate restarts."""
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
    }


def run(env: Any, name: str) -> Any:
    """Execute with a time-out that turns a hang into a failure (and cancels the job)."""
    return run_watched(env, name)[0]


def run_watched(env: Any, name: str) -> tuple[Any, list[int]]:
    """:func:`run`, also returning the ids REST ``latest.restored`` showed meanwhile."""
    client = env.execute_async(name)
    watcher = RestWatcher(client)
    try:
        return client.get_job_execution_result(timeout=JOB_TIMEOUT_S), watcher.stop()
    except TimeoutError:
        client.cancel()
        raise
    finally:
        watcher.stop()


def test_no_failures_no_checkpoints(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    source = OracleSource(KEYS, RECORDS_PER_KEY)
    build_pipeline(env, source)

    oracle = OracleResult.from_job_result(run(env, "oracle"), KEYS, RECORDS_PER_KEY)

    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected == KEYS * RECORDS_PER_KEY
    assert oracle.keys_seen == KEYS
    assert oracle.restarts == 0


def restart_reasons(console: str) -> list[str]:
    """Why the job restarted, from the JobMaster's console lines (it runs in this process)."""
    return [m.group("reason") for m in RESTARTING.finditer(console)]


def scenario_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``map`` fails after checkpoints 2 and 5: two restores, each evidenced.

    A quarter of the records at a quarter of the rate: the source still runs 4 s (about 40
    checkpoint intervals), but both restores replay nearly all of it, and the full volume
    needed more CPU than a 2-core machine at load ~18 gives a test in its 120 s (measured:
    29 s on-CPU against 335 s in the run queue, the job still running)."""
    records_per_key = RECORDS_PER_KEY // 4
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    env = make_env(parallelism=2, config=checkpointing(tmp_path, failing.scheduled_failures))
    source = OracleSource(KEYS, records_per_key, records_per_second=THROTTLED / 4)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, evidence_dir=evidence)

    result, rest_ids = run_watched(env, "oracle")
    oracle = OracleResult.from_job_result(result, KEYS, records_per_key, evidence)

    console = capsys.readouterr().err
    reasons = restart_reasons(console)
    assert_restores(console, rest_ids, restores=2)
    oracle.assert_restored()  # before the counts: a lost restore shows as itself
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, reasons)
    assert len(reasons) == 2 and all("InjectedFailure: FailingMap" in r for r in reasons), reasons
    assert len(COMPLETED.findall(console)) >= 10, "at least 10 checkpoints complete"


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
def test_scheduled_failures_with_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_scheduled_failures(make_env, tmp_path, capsys)


def scenario_failing_map_then_failing_snapshot(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flink's recipe, shortened: ``map`` fails in attempt 0, the stateful operator's
    snapshot in attempt 1 (a declined checkpoint fails the job: none is tolerated)."""
    env = make_env(parallelism=2, config=checkpointing(tmp_path, restarts=2))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=FailingMap([2]),
                   failing_snapshot=FailingSnapshot([5], first_attempt=1),
                   evidence_dir=evidence)  # fmt: skip

    result, rest_ids = run_watched(env, "oracle")
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)

    console = capsys.readouterr().err
    reasons = restart_reasons(console)
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, reasons)
    assert len(reasons) == 2, reasons
    assert "InjectedFailure: FailingMap.map" in reasons[0], reasons
    assert "InjectedFailure: FailingSnapshot.snapshot" in reasons[1], reasons
    assert_restores(console, rest_ids, restores=2)
    oracle.assert_restored()


@pytest.mark.restores
def test_failing_map_then_failing_snapshot(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_failing_map_then_failing_snapshot(make_env, tmp_path, capsys)


def scenario_ordered_topology(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ORDERED topology (key_by only): each key's seqs reach the sink in order across
    two restores (``seq_order_kept``), besides the other five counts."""
    failing = FailingMap(fail_after_checkpoints=[2, 4])
    env = make_env(parallelism=2, config=checkpointing(tmp_path, failing.scheduled_failures))
    source = OracleSource(KEYS, RECORDS_PER_KEY // 2, records_per_second=THROTTLED / 2)
    evidence = tmp_path / "evidence"
    build_ordered_pipeline(env, source, failing_map=failing, evidence_dir=evidence)

    result, rest_ids = run_watched(env, "ordered oracle")
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY // 2, evidence)

    console = capsys.readouterr().err
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, restart_reasons(console))
    assert_restores(console, rest_ids, restores=2)
    oracle.assert_restored()


@pytest.mark.restores
def test_ordered_topology_keeps_per_key_order(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_ordered_topology(make_env, tmp_path, capsys)


def scenario_random_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of a seeded random worker process once a checkpoint completed."""
    seed = oracle_seed()
    env = make_env(parallelism=2, config=checkpointing(tmp_path, restarts=3))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, evidence_dir=evidence)

    client = env.execute_async("oracle")
    watcher = RestWatcher(client)
    result, console = run_killing_a_worker_after_a_checkpoint(
        client,
        capsys,
        seed,
        earliest_s=0.1,
        latest_s=1.0,
        timeout_s=JOB_TIMEOUT_S,
        checkpoints=3,
    )
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)

    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == 1, (seed, oracle)
    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local", "spark"])
def test_random_worker_kill_with_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_random_worker_kill(make_env, tmp_path, capsys)


@pytest.mark.restores
def test_at_least_once_checkpoints_lose_nothing(make_env: EnvFactory, tmp_path: Path) -> None:
    """AT_LEAST_ONCE: barriers are only counted (no alignment, nothing blocks), so records may
    be replayed after a failure, but none may be lost or corrupted."""
    config = checkpointing(tmp_path, restarts=1)
    config["execution.checkpointing.mode"] = "AT_LEAST_ONCE"
    env = make_env(parallelism=2, config=config)
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, failing_map=FailingMap([2]))

    oracle = OracleResult.from_job_result(run(env, "oracle at-least-once"), KEYS, RECORDS_PER_KEY)

    oracle.assert_restored()  # at-least-once resumes sources and state too
    assert oracle.restarts == 1
    assert oracle.lost == 0 and oracle.corrupt == 0, oracle
    assert oracle.keygroup_mismatch == 0, oracle
