"""A new job continues from a retained checkpoint (execution.state-recovery.path)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.storage import CheckpointNotFoundError, CheckpointStorage

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


def test_new_job_resumes_from_a_checkpoint_retained_on_cancellation(
    make_env: Any, tmp_path: Path
) -> None:
    config = {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    first = make_env(parallelism=2, config=config)
    seen_first: dict[int, int] = {}
    with _pipeline(first).execute_and_collect() as records:
        started = time.monotonic()
        for key, count in records:
            seen_first[key] = max(seen_first.get(key, 0), count)
            if time.monotonic() - started > 0.8:
                break  # closing the iterator cancels the job
    time.sleep(0.5)
    retained = _retained(tmp_path)
    assert retained, "a checkpoint must be retained after cancellation"
    assert sum(seen_first.values()) < RECORDS, "the first job must not have finished"

    second = make_env(
        parallelism=2, config={**config, "execution.state-recovery.path": retained[-1]}
    )
    final: dict[int, int] = {}
    for key, count in _pipeline(second).execute_and_collect():
        final[key] = max(final.get(key, 0), count)
    assert final == {k: RECORDS // KEYS for k in range(KEYS)}


def test_a_missing_recovery_path_fails_clearly(make_env: Any, tmp_path: Path) -> None:
    env = make_env(
        parallelism=1,
        config={"execution.state-recovery.path": str(tmp_path / "nope" / "chk-3")},
    )
    _pipeline(env).sink_to(DiscardingSink())
    with pytest.raises(CheckpointNotFoundError, match="chk-3"):
        env.execute("restore from nowhere")
