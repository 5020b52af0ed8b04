"""Incremental channel state (``execution.checkpointing.unaligned.incremental-channel-state.
enabled``, on by default; FLIP-76's roadmap, never shipped by Flink): the oracle PIPELINE
under backpressure (a spinning sink, full 4 KiB buffers) with unaligned checkpoints every
100 ms, and a failure (``make soak``: a worker killed with SIGKILL instead).

Proven here: consecutive checkpoints refer to the same bytes -- a checkpoint of the first
attempt (no restore yet, so nothing else can be referred to) reports referenced in-flight
bytes beside the bytes it wrote, in the REST checkpoint statistics (``referenced_data`` vs
``persisted_data``); a restore reads a checkpoint that refers to an older, subsumed
checkpoint's file (only one is retained), so the reference count kept that file; all six
oracle counts are 0. With the option off no checkpoint of the first attempt refers to
anything (the control: ``test_switched_off_nothing_is_referred_to``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores, evidence, restored_checkpoints

KEYS, RECORDS_PER_KEY = 8, 300
RATE = 1_500.0  # records per second per source reader: several times the sink's pace
SINK_SPIN_S = 0.002
JOB_TIMEOUT_S = 120.0


def config(directory: Path, restarts: int, incremental: bool = True) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.unaligned.incremental-channel-state.enabled": str(
            incremental
        ).lower(),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        # full 4 KiB buffers the sink takes seconds to consume, so they outlive several
        # checkpoints; few of them, so the map still has records when it is due to fail
        "execution.buffer-timeout": "1 s",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "2",
        "taskmanager.network.memory.floating-buffers-per-gate": "4",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
    }


def referring(completed: dict[int, dict[str, Any]], before: int | None) -> list[int]:
    """Completed checkpoints (older than ``before``, if given) that wrote in-flight bytes and
    referred to others."""
    return [
        cid for cid, entry in sorted(completed.items())
        if (before is None or cid < before)
        and entry["persisted_data"] > 0 and entry.get("referenced_data", 0) > 0
    ]  # fmt: skip


def scenario(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    kill: bool = False, incremental: bool = True,
) -> tuple[dict[int, dict[str, Any]], list[int]]:  # fmt: skip
    """``map`` fails after checkpoints 4 and 8 completed, or (``kill``) a seeded random
    worker is killed once 5 checkpoints completed; returns the completed checkpoints' REST
    entries and the restored ids."""
    failing = FailingMap(fail_after_checkpoints=[] if kill else [4, 8])
    restarts = 1 if kill else failing.scheduled_failures
    env = make_env(parallelism=2, config=config(tmp_path, restarts, incremental))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=RATE)
    where = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, sink_spin_s=SINK_SPIN_S, evidence_dir=where)
    client = env.execute_async("incremental channel state")
    watcher = RestWatcher(client)
    if kill:
        result, console = run_killing_a_worker_after_a_checkpoint(
            client, capsys, oracle_seed(), earliest_s=0.1, latest_s=0.5,
            timeout_s=JOB_TIMEOUT_S, checkpoints=5,
        )  # fmt: skip
    else:
        result = client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
        console = capsys.readouterr().err
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, where)
    ids = assert_restores(console, watcher.stop(), restores=restarts)
    restored = restored_checkpoints(console)
    evidence(all(size > 0 for _, _, size in restored), f"no in-flight data: {restored}")
    oracle.assert_restored(replayed=True)
    oracle.assert_exactly_once()
    assert oracle.restarts == restarts, (oracle, console)
    return watcher.completed, ids


def assert_refers_across_checkpoints(completed: dict[int, dict[str, Any]], ids: list[int]) -> None:
    # The first attempt restored nothing: what its checkpoints refer to is what an earlier
    # checkpoint of the same attempt wrote.
    first = referring(completed, before=ids[0] + 1)
    assert first, f"no checkpoint before the first restore referred to older bytes: {completed}"
    # A restore read a checkpoint that refers to older files, one of them subsumed by then.
    restored_referring = [cid for cid in ids if completed.get(cid, {}).get("referenced_data")]
    assert restored_referring, (ids, {c: completed[c].get("referenced_data") for c in ids})


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_consecutive_checkpoints_refer_to_the_same_bytes_and_failures_lose_nothing(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    completed, ids = scenario(make_env, tmp_path, capsys)
    assert_refers_across_checkpoints(completed, ids)


@pytest.mark.soak
@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_consecutive_checkpoints_refer_to_the_same_bytes_with_a_worker_killed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    completed, ids = scenario(make_env, tmp_path, capsys, kill=True)
    assert_refers_across_checkpoints(completed, ids)
