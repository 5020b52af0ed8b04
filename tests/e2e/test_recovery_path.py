"""A new job continues from a retained checkpoint (execution.state-recovery.path)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.job_end import wait_until_retained

from undertow.common import WatermarkStrategy
from undertow.core.errors import RestoreError
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.storage import CheckpointNotFoundError, CheckpointStorage

from .restore_evidence import (
    CountingMap,
    evidence,
    handled_in_finishing_attempt,
    restored_checkpoints,
)

RECORDS = 6000
KEYS = 6


def _pipeline(env: Any) -> Any:
    source = DataGeneratorSource(lambda i: (i % KEYS, 1), count=RECORDS, records_per_second=3000)
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "gen")
        .uid("gen")
        .key_by(lambda t: t[0])
        .sum(1)
        .uid("sum")
    )


def _retained(root: Path) -> list[str]:
    pointers = []
    for job_dir in root.iterdir():
        if job_dir.is_dir() and not job_dir.name.startswith("_"):
            storage = CheckpointStorage(str(root), job_dir.name)
            pointers += [storage.checkpoint_pointer(c) for c in storage.completed_checkpoint_ids()]
    return pointers


def _retain_a_checkpoint(
    make_env: Any, config: dict[str, str], capsys: pytest.CaptureFixture[str],
    pipeline: Any = _pipeline,
) -> dict[int, int]:  # fmt: skip
    """Run the job (``pipeline`` of an environment) until a checkpoint completed and some more
    time passed, then cancel it; what it emitted. (Waits for the checkpoint itself, not a fixed
    time: a loaded machine may take seconds to start the workers.)"""
    first = make_env(parallelism=2, config=config)
    root = Path(config["execution.checkpointing.dir"])
    seen_first: dict[int, int] = {}
    with pipeline(first).execute_and_collect() as records:
        checkpointed_at: float | None = None
        for key, count in records:
            seen_first[key] = max(seen_first.get(key, 0), count)
            if checkpointed_at is None and _retained(root):
                checkpointed_at = time.monotonic()
            if checkpointed_at is not None and time.monotonic() - checkpointed_at > 0.3:
                break  # closing the iterator cancels the job
    wait_until_retained(capsys)  # its checkpoints are final
    return seen_first


def _config(tmp_path: Path) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }


def scenario_new_job_resumes(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second job restores the retained checkpoint: its keyed sums end right, it prints
    the restore of that checkpoint, its source resumed (it emits fewer than all records: one
    sum per input) and its state carried over (each key's first sum is above 1)."""
    config = _config(tmp_path)
    seen_first = _retain_a_checkpoint(make_env, config, capsys)
    retained = _retained(tmp_path)
    assert retained, "a checkpoint must be retained after cancellation"
    assert sum(seen_first.values()) < RECORDS, "the first job must not have finished"
    capsys.readouterr()

    second = make_env(
        parallelism=2, config={**config, "execution.state-recovery.path": retained[-1]}
    )
    final: dict[int, int] = {}
    first_sum: dict[int, int] = {}
    emitted = 0
    for key, count in _pipeline(second).execute_and_collect():
        final[key] = max(final.get(key, 0), count)
        first_sum.setdefault(key, count)
        emitted += 1
    restored = [cid for cid, _, _ in restored_checkpoints(capsys.readouterr().err)]
    evidence(restored == [int(retained[-1].rsplit("-", 1)[1])], f"{restored}, {retained[-1]}")
    evidence(emitted < RECORDS, f"the source did not resume: {emitted} of {RECORDS} records")
    evidence(all(first_sum[k] > 1 for k in range(KEYS)), f"state not carried over: {first_sum}")
    assert final == {k: RECORDS // KEYS for k in range(KEYS)}


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
def test_new_job_resumes_from_a_checkpoint_retained_on_cancellation(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_new_job_resumes(make_env, tmp_path, capsys)


def test_a_missing_recovery_path_fails_clearly(make_env: Any, tmp_path: Path) -> None:
    env = make_env(
        parallelism=1,
        config={"execution.state-recovery.path": str(tmp_path / "nope" / "chk-3")},
    )
    _pipeline(env).sink_to(DiscardingSink())
    with pytest.raises(CheckpointNotFoundError, match="chk-3"):
        env.execute("restore from nowhere")


def test_a_corrupt_checkpoint_fails_recovery_at_once_naming_the_file(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    _retain_a_checkpoint(make_env, config, capsys)
    pointer = Path(_retained(tmp_path)[-1])
    victim = next(p for p in sorted(pointer.iterdir()) if p.name.endswith(".state"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))

    restore = {
        **config,
        "execution.state-recovery.path": str(pointer),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "5",
    }
    env = make_env(parallelism=2, config=restore)
    _pipeline(env).sink_to(DiscardingSink())
    with pytest.raises(Exception) as info:
        env.execute("restore from a corrupt checkpoint")
    message = str(info.value)
    assert victim.name in message and pointer.name in message
    assert "sha256" in message or "expected" in message
    assert "restarting" not in capsys.readouterr().err  # no restart loop over a corrupt file


@pytest.mark.restores
@pytest.mark.parametrize("new_parallelism", [1, 3])
def test_state_finds_its_operators_after_rechaining_and_rescaling(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], new_parallelism: int
) -> None:
    """State is matched per operator uid (Flink's OperatorID): the new job inserts an operator
    without a uid into the keyed operator's chain and runs at another parallelism; keyed sums
    and source positions still come back exactly."""
    config = _config(tmp_path)
    _retain_a_checkpoint(make_env, config, capsys)
    second = make_env(
        parallelism=new_parallelism,
        config={**config, "execution.state-recovery.path": _retained(tmp_path)[-1]},
    )
    rechained = _pipeline(second).map(lambda pair: pair).name("new stateless map")
    final: dict[int, int] = {}
    first_sum: dict[int, int] = {}
    emitted = 0
    for key, count in rechained.execute_and_collect():
        final[key] = max(final.get(key, 0), count)
        first_sum.setdefault(key, count)
        emitted += 1
    evidence(emitted < RECORDS, f"the source did not resume: {emitted} of {RECORDS} records")
    evidence(all(first_sum[k] > 1 for k in range(KEYS)), f"state not carried over: {first_sum}")
    assert final == {k: RECORDS // KEYS for k in range(KEYS)}


@pytest.mark.restores
def test_state_of_a_vanished_operator_fails_the_restore_unless_ignored(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    _retain_a_checkpoint(make_env, config, capsys)
    pointer = _retained(tmp_path)[-1]

    def renamed(extra: dict[str, str]) -> Any:
        settings = {**config, **extra, "execution.state-recovery.path": pointer}
        env = make_env(parallelism=2, config=settings)
        source = DataGeneratorSource(lambda i: (i % KEYS, 1), count=RECORDS)
        (env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").uid("gen")
            .map(CountingMap("read")).uid("counted")
            .key_by(lambda t: t[0]).sum(1).uid("sum-renamed")
            .sink_to(DiscardingSink()))  # fmt: skip
        return env

    with pytest.raises(RestoreError, match=r"state of operators this job does not have: 'sum'"):
        renamed({}).execute("renamed uid")
    result = renamed({"execution.state-recovery.ignore-unclaimed-state": "true"}).execute("ign")
    read = handled_in_finishing_attempt(result, "read")
    evidence(read < RECORDS, f"the source did not resume: {read} of {RECORDS} records")


def _counted_pipeline(env: Any, source_uid: str = "gen") -> Any:
    """The keyed sum with a map chained to the source: one vertex, ``(source_uid, counted)``."""
    source = DataGeneratorSource(lambda i: (i % KEYS, 1), count=RECORDS, records_per_second=3000)
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").uid(source_uid)
        .map(CountingMap("read")).uid("counted")
        .key_by(lambda t: t[0]).sum(1).uid("sum")
    )  # fmt: skip


@pytest.mark.restores
def test_state_a_worker_cannot_place_fails_the_job_with_a_restore_error_naming_the_path(
    make_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The source's uid changed but the map chained to it kept its own: the driver matches the
    old vertex by the map and plans the restore; the worker finds the source's state, which no
    operator of the job claims, and refuses. That refusal is a RestoreError naming the
    snapshot (until 2026-12-02 a JobExecutionError "worker N failed: ...")."""
    config = _config(tmp_path)
    _retain_a_checkpoint(make_env, config, capsys, _counted_pipeline)
    pointer = _retained(tmp_path)[-1]
    env = make_env(parallelism=2, config={**config, "execution.state-recovery.path": pointer})
    _counted_pipeline(env, source_uid="gen-renamed").sink_to(DiscardingSink())
    refused: RestoreError | None = None
    try:
        env.execute("source uid renamed")
    except RestoreError as err:
        refused = err
    evidence(refused is not None, "the job ran: the source's old state did not reach a worker")
    assert refused is not None
    assert str(refused).startswith(f"cannot restore from {pointer}: checkpoint "), str(refused)
    assert "state of operators this job does not have: 'gen'" in str(refused)
    assert refused.remote_traceback and "RestoreError" in refused.remote_traceback
