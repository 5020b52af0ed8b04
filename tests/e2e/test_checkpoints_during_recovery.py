"""Checkpoints during recovery (FLIP-76 / FLIP-547,
``execution.checkpointing.unaligned.during-recovery.enabled``, on by default): the oracle
PIPELINE under heavy backpressure (a sink that spins on every record), so that the in-flight
data an unaligned checkpoint restores takes seconds to consume, and a failure right after the
first checkpoint of every attempt: each failure comes before the previous recovery finished.

Proven here: every attempt after a restore completes a checkpoint within 2 s of the restore
(with the option off the first one waits for the restored in-flight data to be consumed: the
control, docs/testing.md), each restore takes a newer checkpoint than the one before (the job
makes progress instead of returning to the same checkpoint, FLIP-76's vicious cycle), every
restore carries in-flight data, and all six oracle counts are 0.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.storage import CheckpointStorage
from undertow.testing.oracle import (
    FailingSnapshot,
    OracleResult,
    OracleSource,
    SizeClass,
    build_pipeline,
)

from .conftest import EnvFactory
from .kills import COMPLETED, RESTARTING
from .restore_evidence import (
    RESTORED,
    RestWatcher,
    assert_restores,
    evidence,
    restored_checkpoints,
)
from .test_unaligned_checkpoints import checkpoints_with_channel_state

KEYS, RECORDS_PER_KEY = 8, 500
RATE = 1_500.0  # records per second per source reader: three times the sink's pace
SINK_SPIN_S = 0.002  # about 4 s of sink time in all: up to 3 s of it fits in flight
#: Small records, so that the network holds many of them (slow to consume after a restore).
SIZES = (SizeClass(1.0, 16, 128),)
FIRST_CHECKPOINT_WITHIN_S = 2.0
JOB_TIMEOUT_S = 120.0
#: Seconds the retaining job runs on after its first checkpoint with in-flight data.
FILL_S = 1.0
REFERENCED = re.compile(r"^\[undertow\] checkpoint \d+ completed .*, referenced [\d.]+ \w+\)", re.M)


def config(directory: Path, restarts: int, during_recovery: bool) -> dict[str, Any]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(directory),
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.unaligned.during-recovery.enabled": str(during_recovery).lower(),
        # the references asserted here are to restored data only (FLIP-76), not to buffers an
        # earlier checkpoint of the same attempt wrote (test_incremental_channel_state.py)
        "execution.checkpointing.unaligned.incremental-channel-state.enabled": "false",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        # full 4 KiB buffers (about 20 records each), deep inputs and shallow outputs: the
        # in-flight data is mostly the sink's input state, seconds of its time
        "execution.buffer-timeout": "1 s",
        "taskmanager.memory.segment-size": "4 kb",
        "taskmanager.network.memory.buffers-per-channel": "8",
        "taskmanager.network.memory.floating-buffers-per-gate": "32",
        "taskmanager.network.memory.max-buffers-per-channel": "2",
    }


def timed_console(client: Any, capsys: pytest.CaptureFixture[str]) -> list[tuple[float, str]]:
    """Console lines of the JobMaster with the time each was seen (polled every 5 ms) until
    the job ends; the job's result is checked by the caller."""
    lines: list[tuple[float, str]] = []
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        now = time.monotonic()
        lines += [(now, line) for line in capsys.readouterr().err.splitlines()]
        if client.get_job_status().result().is_globally_terminal_state():
            break
        time.sleep(0.005)
    lines += [(time.monotonic(), line) for line in capsys.readouterr().err.splitlines()]
    return lines


def first_checkpoint_after_each_restore(lines: list[tuple[float, str]]) -> list[float]:
    """Per restore: seconds from its console line (printed once the restoring tasks were
    deployed, before any wait for their recovery) to the next completed checkpoint (inf if
    none completed before the next restart or the end)."""
    delays: list[float] = []
    restored: float | None = None
    for seen, line in lines:
        if RESTARTING.match(line) and restored is not None:
            delays.append(float("inf"))
            restored = None
        elif RESTORED.match(line):
            restored = seen
        elif COMPLETED.match(line) and restored is not None:
            delays.append(seen - restored)
            restored = None
    if restored is not None:
        delays.append(float("inf"))
    return delays


def assert_each_restore_checkpoints_in_time(delays: list[float]) -> None:
    """Each of the three restores completed a checkpoint within 2 s."""
    assert len(delays) == 3 and max(delays) <= FIRST_CHECKPOINT_WITHIN_S, (
        f"first checkpoint after each restore: {[round(d, 2) for d in delays]} s (goal "
        f"{FIRST_CHECKPOINT_WITHIN_S} s)"
    )


def scenario(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    during_recovery: bool = True,
) -> list[float]:  # fmt: skip
    """The stateful operator fails its snapshot after checkpoint 2 completed, then in
    attempts 1 and 2 the snapshot after their first completed checkpoint (FailingSnapshot);
    returns the seconds from each restore to its first completed checkpoint."""
    failing = FailingSnapshot(fail_after_checkpoints=[2, 3, 4])
    env = make_env(
        parallelism=2, config=config(tmp_path, failing.scheduled_failures, during_recovery)
    )
    source = OracleSource(KEYS, RECORDS_PER_KEY, SIZES, records_per_second=RATE)
    where = tmp_path / "evidence"
    build_pipeline(
        env, source, failing_snapshot=failing, sink_spin_s=SINK_SPIN_S, evidence_dir=where
    )
    delays, console = run_with_failures(env, "checkpoints during recovery", capsys, where, 3)
    # the restored in-flight data not yet consumed is referred to, not written again
    evidence(REFERENCED.search(console) is not None, f"no checkpoint referenced:\n{console}")
    return delays


def run_with_failures(
    env: Any, name: str, capsys: pytest.CaptureFixture[str], where: Path, restarts: int
) -> tuple[list[float], str]:
    """Run the built job ``env`` to its end and check it: three restores (the console and the
    REST API agree), each carrying in-flight data and each from a newer checkpoint than the
    one before (progress, not FLIP-76's vicious cycle), ``restarts`` restarts and the oracle
    clean. Returns the seconds from each restore to its first completed checkpoint, and the
    console."""
    client = env.execute_async(name)
    watcher = RestWatcher(client)
    lines = timed_console(client, capsys)
    console = "\n".join(line for _, line in lines)
    result = client.get_job_execution_result(timeout=5)
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, where)

    assert_restores(console, watcher.stop(), restores=3)
    restored = restored_checkpoints(console)
    evidence(all(size > 0 for _, _, size in restored), f"no in-flight data: {restored}")
    ids = [cid for cid, _, _ in restored]
    assert ids == sorted(set(ids)), f"a restore went back to an old checkpoint: {ids}\n{console}"
    oracle.assert_restored(replayed=True)
    oracle.assert_exactly_once()
    assert oracle.restarts == restarts, (oracle, console)
    return first_checkpoint_after_each_restore(lines), console


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads", pytest.param("local", marks=pytest.mark.soak)])
def test_a_checkpoint_completes_during_each_recovery_and_failures_in_a_row_lose_nothing(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    delays = scenario(make_env, tmp_path, capsys)
    assert_each_restore_checkpoints_in_time(delays)


def retain_under_backpressure(
    make_env: EnvFactory, tmp_path: Path, parallelism: int, settings: dict[str, Any]
) -> str:
    """Run the PIPELINE at ``parallelism`` under backpressure until a checkpoint with
    in-flight data is retained, cancel it, and return that checkpoint's pointer. The chain
    (with its failing snapshot, which never fires here) is the one the restored job runs."""
    env = make_env(parallelism=parallelism, config=settings)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, SIZES, records_per_second=RATE),
                   failing_snapshot=FailingSnapshot(fail_after_checkpoints=[]),
                   sink_spin_s=SINK_SPIN_S)  # fmt: skip
    client = env.execute_async("retain in-flight data")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not checkpoints_with_channel_state(tmp_path):
        time.sleep(0.05)
    time.sleep(FILL_S)  # the backpressured network fills up
    client.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled
        client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    [job_dir] = [d for d in tmp_path.iterdir() if d.is_dir() and not d.name.startswith("_")]
    storage = CheckpointStorage(str(tmp_path), job_dir.name)
    with_state = checkpoints_with_channel_state(tmp_path)
    assert with_state, f"no retained checkpoint holds channel state: {tmp_path}"
    return storage.checkpoint_pointer(with_state[-1])


def rescaled_scenario(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], old: int,
    new: int, during_recovery: bool = True,
) -> list[float]:  # fmt: skip
    """Retain an unaligned checkpoint with in-flight data at ``old``, restore it at ``new``
    (every edge rescaled: the producers re-emit the in-flight data), and fail right after the
    first checkpoint of the restored attempt and of the next one, each before the previous
    recovery finished (the second restore is in place, from a checkpoint taken during the
    rescaled recovery). Returns the seconds from each restore to its first checkpoint."""
    settings = config(tmp_path, 0, during_recovery)
    settings["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
    settings["execution.checkpointing.num-retained"] = "3"
    pointer = retain_under_backpressure(make_env, tmp_path, old, settings)

    failing = FailingSnapshot(fail_after_checkpoints=[1, 1])
    settings["execution.state-recovery.path"] = pointer
    settings["restart-strategy.fixed-delay.attempts"] = str(failing.scheduled_failures)
    env = make_env(parallelism=new, config=settings)
    where = tmp_path / "evidence"
    # a slower sink than the retaining job's: the restored in-flight data takes seconds
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, SIZES, records_per_second=RATE),
                   failing_snapshot=failing, sink_spin_s=2 * SINK_SPIN_S,
                   evidence_dir=where)  # fmt: skip
    capsys.readouterr()
    return run_with_failures(env, "rescaled, checkpoints during recovery", capsys, where, 2)[0]


@pytest.mark.restores(catches=["channel-state"])
@pytest.mark.parametrize("target", ["local-threads", pytest.param("local", marks=pytest.mark.soak)])
@pytest.mark.parametrize(("old", "new"), [(2, 3), pytest.param(3, 2, marks=pytest.mark.soak)])
def test_a_checkpoint_completes_during_a_rescaled_recovery_and_failures_in_a_row_lose_nothing(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], old: int, new: int
) -> None:
    """Rescaled restores: the first checkpoint after the rescaled restore (triggered once the
    re-emitted data arrived, unprocessed) and after the in-place restore of that checkpoint
    (whose unprocessed re-emitted records are recovered input) each complete within 2 s."""
    delays = rescaled_scenario(make_env, tmp_path, capsys, old, new)
    assert_each_restore_checkpoints_in_time(delays)
