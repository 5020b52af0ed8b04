"""Heap incremental checkpoints end to end (issue 15, :mod:`undertow.state.heap_incremental`).

* The exactly-once oracle on ``HashMapStateBackend`` with ``execution.checkpointing.incremental``,
  aligned and unaligned, with failures scheduled in ``map``: both restores are evidenced (console
  line, REST, resumed source, restored state); segments appear in ``<job>/shared/``, some
  checkpoint wrote less than its state (it referenced earlier segments), and no shared file is
  left once the job finished. 4,096 key groups and 4,000 keys that advance together through the
  source, so a checkpoint every 250 ms sees only part of the key groups change.
* Three concurrent checkpoints, and a seeded kill -9 of a worker process (``local``).
* Rescale: a second job restores the first job's retained incremental checkpoint at another
  parallelism (key groups from several old subtasks' segments) in NO_CLAIM: every file of the
  first job stays byte-identical; the resumed job's shared/ holds duplicates of the restored
  segments (hard links, FLIP-193) and segments of its own.
* CLAIM: the claimed checkpoint's directory and segments are deleted once subsumed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import HashMapStateBackend, JobStatus
from undertow.runtime.master.checkpoint_stats import CheckpointStatus
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores
from .test_incremental_checkpoints import (
    COMPLETED,
    _contents,
    assert_shared_files_deleted,
    run_oracle_with_scheduled_failures,
)

KEYS, RECORDS_PER_KEY = 4000, 15
THROTTLED = 5_000.0
TIMEOUT_S = 240.0  # a bound on a hang, not a speed target


def _config(tmp_path: Path, restarts: int = 0, **extra: str) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "250 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.incremental": "true",
        "pipeline.max-parallelism": "4096",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        # the probe reads the whole history once the job ended: the default 10 would hold
        # only the checkpoints taken while the last tasks finished, which reuse nothing
        "web.checkpoints.history": "1000",
        **extra,
    }


def _heap(env: Any) -> None:
    env.set_state_backend(HashMapStateBackend())
    assert env.get_configuration().to_dict()["execution.checkpointing.incremental"] == "true"


def _reused_some(client: Any) -> bool:
    """Whether a completed checkpoint wrote less than its state (referenced old segments)."""
    history = client._master.checkpoint_stats.snapshot().history
    return any(
        a.checkpointed_size < 0.75 * a.state_size
        for e in history
        if e.status is CheckpointStatus.COMPLETED
        for a in e.acks()
    )


def scenario_heap_incremental_scheduled_failures(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unaligned: bool = False,
    concurrent: int = 1,
) -> None:
    """``map`` fails after checkpoints 2 and 5; keyed state restores from heap segments.
    ``concurrent`` checkpoints may be pending at once."""
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    config = _config(tmp_path, failing.scheduled_failures)
    config["execution.checkpointing.unaligned.enabled"] = str(unaligned).lower()
    config["execution.checkpointing.max-concurrent-checkpoints"] = str(concurrent)
    env = make_env(parallelism=2, config=config)
    _heap(env)
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    seen, job_id, reused = run_oracle_with_scheduled_failures(
        env, tmp_path, capsys, source, failing, "oracle, incremental heap", probe=_reused_some
    )
    segments = {name for name in seen if name.endswith(".kgs")}
    assert segments, f"no heap segment was written into shared/: {sorted(seen)}"
    assert reused, "no checkpoint referenced an earlier checkpoint's segment"
    assert_shared_files_deleted(tmp_path, job_id)


@pytest.mark.restores(catches=["shared-file", "keyed-state"])
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_heap_incremental_oracle_with_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], unaligned: bool
) -> None:
    scenario_heap_incremental_scheduled_failures(make_env, tmp_path, capsys, unaligned)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_heap_incremental_oracle_with_concurrent_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_heap_incremental_scheduled_failures(make_env, tmp_path, capsys, concurrent=3)


def scenario_heap_incremental_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of a seeded random worker process once three incremental checkpoints
    completed: the restarted attempt restores from the heap segments."""
    seed = oracle_seed()
    env = make_env(parallelism=2, config=_config(tmp_path, restarts=3))
    _heap(env)
    evidence = tmp_path / "evidence"
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, evidence_dir=evidence)

    client = env.execute_async("oracle, incremental heap, kill -9")
    watcher = RestWatcher(client)
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.1, latest_s=1.0, timeout_s=TIMEOUT_S, checkpoints=3
    )
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)
    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == 1, (seed, oracle)
    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_heap_incremental_oracle_with_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_heap_incremental_worker_kill(make_env, tmp_path, capsys)


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _retained_checkpoint(make_env: EnvFactory, tmp_path: Path) -> Path:
    """A first job at parallelism 2, cancelled with retention after a few incremental
    checkpoints, at least one of which referenced an earlier one's segment."""
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION"}  # fmt: skip
    env = make_env(parallelism=2, config=_config(tmp_path, **retain))
    _heap(env)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async("leaves a heap incremental checkpoint")
    root, job = tmp_path / "checkpoints", client.get_job_id()
    storage = CheckpointStorage(str(root), job)

    def ready() -> bool:
        ids = storage.completed_checkpoint_ids()
        if client.get_job_status().is_globally_terminal_state():
            raise AssertionError("the first job ended before an incremental checkpoint reused")
        return bool(ids) and max(ids) >= 4 and _reused_some(client)

    _wait_for(ready, "incremental checkpoints")
    client.cancel()
    _wait_for(lambda: client.get_job_status() is JobStatus.CANCELED, "the cancellation")
    time.sleep(0.3)  # the JobMaster keeps the retained checkpoint as it shuts down
    return Path(storage.checkpoint_pointer(max(storage.completed_checkpoint_ids())))


def _resume(
    make_env: EnvFactory, tmp_path: Path, snapshot: Path, claim_mode: str, parallelism: int
) -> Any:
    """Start the oracle job on the heap backend from ``snapshot`` in ``claim_mode``."""
    env = make_env(parallelism=parallelism, config=_config(tmp_path, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": claim_mode,
        "execution.checkpointing.num-retained": "1",
    }))  # fmt: skip
    _heap(env)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    return env.execute_async(f"resumed at parallelism {parallelism}, {claim_mode}")


def scenario_heap_incremental_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resume the retained checkpoint at parallelism 3, NO_CLAIM."""
    snapshot = _retained_checkpoint(make_env, tmp_path)
    old_job_dir = snapshot.parent
    before = _contents(old_job_dir)
    old_segments = {n.split("/", 1)[1] for n in before if n.startswith("shared/")}
    assert any(n.endswith(".kgs") for n in old_segments), before
    capsys.readouterr()

    client = _resume(make_env, tmp_path, snapshot, "NO_CLAIM", parallelism=3)
    watcher = RestWatcher(client)
    new_shared = tmp_path / "checkpoints" / client.get_job_id() / "shared"
    own: set[str] = set()

    def newer_checkpoints() -> bool:
        if new_shared.is_dir():
            own.update(p.name for p in new_shared.iterdir())
        return bool(own - old_segments) or client.get_job_status() is JobStatus.FINISHED

    _wait_for(newer_checkpoints, "a newer checkpoint")
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    console = capsys.readouterr().err
    completed = [int(n) for n in COMPLETED.findall(console)]
    assert len(completed) >= 2, f"newer checkpoints must complete: {completed}"
    assert _contents(old_job_dir) == before, "NO_CLAIM: every restored file stays byte-identical"
    # NO_CLAIM duplicates the restored segments into the resumed job's own shared/ (FLIP-193:
    # hard links, same names); what it writes after the restore has names of its own
    assert own - old_segments, f"the resumed job wrote no segment of its own: {sorted(own)}"
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected
    ids = assert_restores(console, watcher.stop(), restores=1)
    assert ids == [int(snapshot.name.rsplit("-", 1)[1])]
    oracle.assert_restored()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_heap_incremental_rescale_no_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_heap_incremental_rescale(make_env, tmp_path, capsys)


def scenario_heap_incremental_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resume the retained checkpoint in CLAIM at the same parallelism: its directory and its
    segments are deleted once a newer checkpoint subsumes it, while the job still runs."""
    snapshot = _retained_checkpoint(make_env, tmp_path)
    old_shared = snapshot.parent / "shared"
    assert any(p.name.endswith(".kgs") for p in old_shared.iterdir()), "segments to claim"
    capsys.readouterr()

    client = _resume(make_env, tmp_path, snapshot, "CLAIM", parallelism=2)
    watcher = RestWatcher(client)
    _wait_for(lambda: (not snapshot.exists() and not any(old_shared.iterdir()))
              or client.get_job_status() is JobStatus.FINISHED,
              "the claimed snapshot's deletion")  # fmt: skip
    assert not snapshot.exists()
    assert list(old_shared.iterdir()) == [], "CLAIM: the claimed segments are deleted"
    assert client.get_job_status() is JobStatus.RUNNING, "deleted by subsumption, not at the end"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    console = capsys.readouterr().err
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected
    assert assert_restores(console, watcher.stop(), restores=1) == [
        int(snapshot.name.rsplit("-", 1)[1])
    ]
    oracle.assert_restored()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_heap_incremental_claim_deletes_claimed_segments_once_subsumed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_heap_incremental_claim(make_env, tmp_path, capsys)
