"""Incremental channel state (``execution.checkpointing.unaligned.incremental-channel-state.
enabled``, on by default; FLIP-76's roadmap, never shipped by Flink): the oracle PIPELINE
under backpressure (a spinning sink, full 4 KiB buffers) with unaligned checkpoints every
100 ms, and two failures (``make soak``: a worker killed with SIGKILL instead).

Proven here: consecutive checkpoints refer to the same bytes -- a checkpoint of the first
attempt (no restore yet, so nothing else can be referred to) reports referenced in-flight
bytes beside the bytes it wrote, in the REST checkpoint statistics (``referenced_data`` vs
``persisted_data``); a restore reads a checkpoint that refers to an older, subsumed
checkpoint's file (only one is retained; asserted of the two restores of the CI test), so the
reference count kept that file; all six oracle counts are 0. With the option off no
checkpoint of the first attempt refers to anything (the mutation control named in the issue
note). A retained checkpoint that refers to older checkpoints' files restores at another
parallelism under NO_CLAIM (and CLAIM, ``make soak``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.runtime.checkpoint.metadata import decode_metadata
from undertow.storage import CheckpointStorage
from undertow.storage.keys import read_key
from undertow.testing.gates import CheckpointGate
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
    """``map`` fails after checkpoints 4 and 8 completed, the first time only once a
    checkpoint that refers to older bytes completed (REST shows it; the gate makes the
    premise of :func:`assert_refers_across_checkpoints`: a completion notice may reach a
    subtask after the next barrier, and then that checkpoint writes all), or (``kill``) a
    seeded random worker is killed once 5 checkpoints completed; returns the completed
    checkpoints' REST entries and the restored ids."""
    gate = CheckpointGate(tmp_path / "gate")
    failing = FailingMap(fail_after_checkpoints=[] if kill else [4, 8], gate=gate)
    restarts = 1 if kill else failing.scheduled_failures
    env = make_env(parallelism=2, config=config(tmp_path, restarts, incremental))
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=RATE)
    where = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, sink_spin_s=SINK_SPIN_S, evidence_dir=where)
    client = env.execute_async("incremental channel state")
    watcher = RestWatcher(
        client, lambda cid, entry: gate.open(cid) if referring({cid: entry}, None) else None
    )
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


def assert_refers_across_checkpoints(
    completed: dict[int, dict[str, Any]], ids: list[int], restores_one: bool = True
) -> None:
    """A checkpoint before the first restore referred to older bytes; with ``restores_one``
    a restore read such a checkpoint (of two restores: a given checkpoint may write all, e.g.
    when its predecessor's completion reached a subtask after its barrier)."""
    # The first attempt restored nothing: what its checkpoints refer to is what an earlier
    # checkpoint of the same attempt wrote.
    first = referring(completed, before=ids[0] + 1)
    assert first, f"no checkpoint before the first restore referred to older bytes: {completed}"
    if not restores_one:
        return
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
    assert_refers_across_checkpoints(completed, ids, restores_one=False)


def referring_checkpoints(root: Path) -> tuple[CheckpointStorage | None, list[int]]:
    """The job's retained checkpoints whose channel state refers to an older checkpoint's
    file (``chk-<m>/``, m < n), oldest first."""
    jobs = [d for d in root.iterdir() if d.is_dir() and any(d.glob("chk-*"))]
    key = read_key()
    if len(jobs) != 1 or key is None:
        return None, []
    storage = CheckpointStorage(str(root), jobs[0].name)
    found = []
    try:
        for cid in storage.completed_checkpoint_ids():
            meta = decode_metadata(storage.read_metadata(cid), key, where=str(root))
            files = {f.path for v in meta.vertices for h in v.channel_state.values()
                     for f in h.referenced_files()}  # fmt: skip
            if any(f.startswith("chk-") and int(f[4 : f.index("/")]) < cid for f in files):
                found.append(cid)
    except Exception:  # a checkpoint being subsumed while we look
        return storage, []
    return storage, found


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("claim_mode", ["NO_CLAIM", pytest.param("CLAIM", marks=pytest.mark.soak)])
def test_a_checkpoint_referring_to_older_files_restores_rescaled(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], claim_mode: str
) -> None:
    """Retain (on cancellation, three retained) a checkpoint taken at p=2 that refers to an
    older checkpoint's file, and start a new job from it at p=3 in ``claim_mode``: every
    edge's in-flight data, referenced runs included, is re-emitted; all six oracle counts are
    0. Under CLAIM the new job owns the claimed checkpoint and the older files it refers to:
    when it ends they are gone (subsumed, or discarded with the finished job's checkpoints);
    under NO_CLAIM they stay (the user's)."""
    settings = config(tmp_path, 0)
    settings["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
    settings["execution.checkpointing.num-retained"] = "3"
    records_per_key = 2 * RECORDS_PER_KEY
    env = make_env(parallelism=2, config=settings)
    build_pipeline(env, OracleSource(KEYS, records_per_key, records_per_second=RATE),
                   failing_map=FailingMap(fail_after_checkpoints=[]),
                   sink_spin_s=SINK_SPIN_S)  # fmt: skip
    client = env.execute_async("retain a referring checkpoint")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not referring_checkpoints(tmp_path)[1]:
        time.sleep(0.05)
    client.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled
        client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    storage, found = referring_checkpoints(tmp_path)
    assert storage is not None and found, "no retained checkpoint refers to an older file"

    settings["execution.state-recovery.path"] = storage.checkpoint_pointer(found[-1])
    settings["execution.state-recovery.claim-mode"] = claim_mode
    key = read_key()
    assert key is not None
    meta = decode_metadata(storage.read_metadata(found[-1]), key, where=str(tmp_path))
    referred = {f.path for v in meta.vertices for h in v.channel_state.values()
                for f in h.referenced_files()}  # fmt: skip
    [job_dir] = [d for d in tmp_path.iterdir() if d.is_dir() and any(d.glob("chk-*"))]
    rescaled = make_env(parallelism=3, config=settings)
    where = tmp_path / "evidence"
    build_pipeline(rescaled, OracleSource(KEYS, records_per_key, records_per_second=RATE),
                   failing_map=FailingMap(fail_after_checkpoints=[]),
                   sink_spin_s=SINK_SPIN_S / 4, evidence_dir=where)  # fmt: skip
    capsys.readouterr()
    client = rescaled.execute_async("rescaled from a referring checkpoint")
    watcher = RestWatcher(client)
    result = client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    ids = assert_restores(capsys.readouterr().err, watcher.stop(), restores=1)
    evidence(ids == [found[-1]], f"restored {ids}, retained referring {found}")
    oracle = OracleResult.from_job_result(result, KEYS, records_per_key, where)
    oracle.assert_restored()
    evidence(oracle.replayed_in_any_attempt > 0, f"no replayed record observed: {oracle}")
    oracle.assert_exactly_once()
    left = {path for path in referred if (job_dir / path).exists()}
    if claim_mode == "CLAIM":
        assert not left, f"claimed, subsumed, and still there: {left}"
    else:
        assert left == referred, f"NO_CLAIM deleted {referred - left}"
