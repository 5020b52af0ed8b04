"""Concurrent unaligned checkpoints (``execution.checkpointing.max-concurrent-checkpoints`` 2
with ``unaligned.enabled``; Flink refuses the combination, FLIP-76 lists it as future work):
the oracle PIPELINE under backpressure with failures (``make soak``: a worker killed with
SIGKILL instead), checkpoints every 100 ms. Two checkpoints overlap only when one takes longer
than the interval, which a quiet machine may never do (at 50 ms none overlapped once in CI,
2026-12-01), so a subtask alone on its worker, in a branch after the sink, holds one
checkpoint's acknowledgement until the next one was triggered
(:class:`~undertow.testing.overlap_hold.OverlapHold`, told of triggers from REST).

Proven here: the held checkpoint and the next both completed, with in-flight data of their own,
and the second was triggered before the first's last acknowledgement; the restores take
checkpoints with in-flight data; all six oracle counts are 0. With one checkpoint at a time the
next is never triggered while one is held, so no hold succeeds (the control, run by hand: each
hold then waits ``hold_max_s``; docs/unaligned-and-debloating.md).

How it stays correct: a subtask takes at most one checkpoint's barriers at a time (a newer
barrier subsumes an unfinished older one there, as in Flink), so the checkpoints overlap in
their asynchronous parts (channel-state files, state uploads, acknowledgements), and each
checkpoint's in-flight data is captured and written for its own id
(:mod:`undertow.runtime.checkpoint.inflight_capture`).
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
from undertow.testing.overlap_hold import OverlapHold

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores, evidence, restored_checkpoints

KEYS, RECORDS_PER_KEY = 8, 300
RATE = 1_500.0  # records per second per source reader
SINK_SPIN_S = 0.001
JOB_TIMEOUT_S = 120.0


def config(directory: Path, restarts: int, max_concurrent: int) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.max-concurrent-checkpoints": str(max_concurrent),
        "execution.checkpointing.dir": str(directory),
        "execution.checkpointing.unaligned.enabled": "true",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        "undertow.workers": "5",  # a worker per slot: the overlap hold's subtask alone on one
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "2",
        "taskmanager.network.memory.floating-buffers-per-gate": "4",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
    }


def overlapping(completed: dict[int, dict[str, Any]]) -> list[tuple[int, int]]:
    """Pairs of completed checkpoints (older, newer), both with in-flight data, where the
    newer was triggered before the older's last acknowledgement."""
    pairs = []
    ids = sorted(completed)
    for i, older in enumerate(ids):
        for newer in ids[i + 1 :]:
            a, b = completed[older], completed[newer]
            if min(a["persisted_data"], b["persisted_data"]) <= 0:
                continue
            if b["trigger_timestamp"] < a["latest_ack_timestamp"]:
                pairs.append((older, newer))
    return pairs


def scenario(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    max_concurrent: int = 2, kill: bool = False,
) -> None:  # fmt: skip
    """Under backpressure, two checkpoints at a time: ``map`` fails after checkpoints 4 and 9,
    or (``kill``) a seeded random worker is killed with SIGKILL once 3 checkpoints completed;
    a subtask holds a checkpoint until the next one is triggered (:class:`OverlapHold`)."""
    failing = FailingMap(fail_after_checkpoints=[] if kill else [4, 9])
    restarts = 1 if kill else failing.scheduled_failures
    env = make_env(parallelism=2, config=config(tmp_path, restarts, max_concurrent))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=RATE)
    where = tmp_path / "evidence"
    hold = OverlapHold(tmp_path / "hold")
    build_pipeline(env, source, failing_map=failing, sink_spin_s=SINK_SPIN_S, evidence_dir=where,
                   overlap_hold=hold)  # fmt: skip
    client = env.execute_async("concurrent unaligned checkpoints")
    watcher = RestWatcher(
        client,
        on_triggered=hold.triggered,
        on_completed=lambda cid, e: hold.completed(cid, e["persisted_data"]),
    )
    if kill:
        seed = oracle_seed()
        result, console = run_killing_a_worker_after_a_checkpoint(
            client, capsys, seed, earliest_s=0.1, latest_s=0.8, timeout_s=JOB_TIMEOUT_S,
            checkpoints=3,
        )  # fmt: skip
    else:
        result = client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
        console = capsys.readouterr().err
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, where)
    assert_restores(console, watcher.stop(), restores=restarts)
    restored = restored_checkpoints(console)
    evidence(all(size > 0 for _, _, size in restored), f"no in-flight data: {restored}")
    oracle.assert_restored(replayed=not kill)
    oracle.assert_exactly_once()
    assert oracle.restarts == restarts, (oracle, console)
    held = hold.overlapped()
    assert held is not None, (  # why each aborted checkpoint failed, as the REST API says
        f"no hold kept a checkpoint until the next completed: {hold.holds()}; failed "
        f"checkpoints: {watcher.failed}"
    )
    pairs = overlapping(watcher.completed)
    fields = ("trigger_timestamp", "latest_ack_timestamp", "persisted_data")
    shown = {c: {f: watcher.completed.get(c, {}).get(f) for f in fields} for c in held}
    assert held in pairs, (
        f"held {held} ({hold.holds()}: {shown}), but these checkpoints with in-flight data "
        f"overlapped: {pairs}"
    )


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_two_unaligned_checkpoints_in_flight_with_failures_lose_nothing(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario(make_env, tmp_path, capsys)


@pytest.mark.soak
@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_two_unaligned_checkpoints_in_flight_with_a_worker_killed_lose_nothing(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario(make_env, tmp_path, capsys, kill=True)
