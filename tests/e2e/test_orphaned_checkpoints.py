"""Orphaned checkpoint directories, end to end: a job with unaligned checkpoints at a short
interval, whose snapshots fail half of the time (tolerated), and whose tasks write late files
into checkpoint directories after the coordinator deleted them (re-creating them, as a late
state or channel-state write would), ends with no ``chk-<n>`` directory but the retained ones.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests import slow_delete_fs

from undertow.common import WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream import JobStatus, KeyedProcessFunction, RuntimeContext
from undertow.datastream.connectors import DataGeneratorSource
from undertow.datastream.state import ValueStateDescriptor
from undertow.storage import CheckpointStorage

from .conftest import EnvFactory

COUNT = 3000


def _flaky() -> Flaky:
    return Flaky()


class Flaky:
    """State whose snapshot fails during the first half of every 300 ms: some checkpoints
    are declined (aborted), the others complete."""

    def __reduce__(self) -> Any:
        if time.monotonic() % 0.3 < 0.15:
            raise RuntimeError("injected snapshot failure")
        return (_flaky, ())


class LateWriter(KeyedProcessFunction):
    """Keeps flaky state and, every few records, writes a late file into each checkpoint
    directory it saw before and that is gone now (deleted by the coordinator), which
    re-creates it. Each late write is counted as a file in ``marks``."""

    def __init__(self, checkpoints: str, marks: str) -> None:
        self.checkpoints = checkpoints
        self.marks = marks

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("flaky"))
        self.seen: set[str] = set()
        self.count = 0

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        self.state.update(Flaky())
        self.count += 1
        if self.count % 20 == 0:
            self._write_late_files()
        yield value

    def _write_late_files(self) -> None:
        present = set()
        for job in os.listdir(self.checkpoints):
            job_dir = os.path.join(self.checkpoints, job)
            if os.path.isdir(job_dir):
                present |= {
                    os.path.join(job_dir, d) for d in os.listdir(job_dir) if d.startswith("chk-")
                }
        for gone in self.seen - present:
            try:
                os.makedirs(gone, exist_ok=True)
                with open(os.path.join(gone, f"late-{uuid.uuid4().hex}"), "wb") as out:
                    out.write(b"late channel state")
            except FileNotFoundError:
                continue  # swept between the two calls
            with open(os.path.join(self.marks, uuid.uuid4().hex), "wb"):
                pass
        self.seen = present


def _chk_dirs(root: Path) -> list[str]:
    return sorted(
        f"{job.name}/{d.name}"
        for job in root.iterdir()
        if job.is_dir()
        for d in job.iterdir()
        if d.name.startswith("chk-")
    )


def _late_writer_job(
    make_env: EnvFactory, tmp_path: Path, count: int | None, **extra: str
) -> tuple[Any, Path, Path]:
    """gen -> key_by -> LateWriter with unaligned checkpoints every 50 ms that may fail
    freely; returns the keyed stream and the checkpoint and mark directories."""
    checkpoints, marks = tmp_path / "checkpoints", tmp_path / "marks"
    checkpoints.mkdir()
    marks.mkdir()
    config = {
        "execution.checkpointing.interval": "50 ms",
        "execution.checkpointing.dir": str(checkpoints),
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.tolerable-failed-checkpoints": "100000",
        "restart-strategy.type": "none",
        **extra,
    }
    env = make_env(parallelism=1, config=config)
    source = DataGeneratorSource(lambda i: i % 5, count=count, records_per_second=2000)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "gen")
    keyed = stream.key_by(lambda v: v).process(LateWriter(str(checkpoints), str(marks)))
    return keyed, checkpoints, marks


@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_late_files_in_deleted_checkpoints_are_swept_by_the_end(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    keyed, checkpoints, marks = _late_writer_job(make_env, tmp_path, COUNT)
    records = list(keyed.name("late-writer").execute_and_collect())
    assert len(records) == COUNT
    assert len(os.listdir(marks)) >= 1, "no late file was written: the test proves nothing"
    # a finished job deletes its retained checkpoints too: nothing may be left
    assert _chk_dirs(checkpoints) == []


@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_a_cancelled_job_keeps_only_its_retained_checkpoint(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    keyed, checkpoints, marks = _late_writer_job(
        make_env, tmp_path, None,
        **{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"},
    )  # fmt: skip
    keyed.filter(lambda v: v < 0).print()
    client = keyed.get_execution_environment().execute_async("late writer")

    def completed() -> list[str]:
        return [d for d in _chk_dirs(checkpoints) if (checkpoints / d / "_metadata").exists()]

    deadline = time.monotonic() + 30
    while not (completed() and len(os.listdir(marks)) >= 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert completed() and os.listdir(marks), "no checkpoint completed or no late file written"
    client.cancel()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=30)
    left = _chk_dirs(checkpoints)
    assert len(left) == 1 and left == completed(), f"expected one retained checkpoint: {left}"


@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("retention", ["DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"])
def test_a_job_is_reported_canceled_once_its_checkpoints_are_final(
    make_env: EnvFactory, retention: str
) -> None:
    """What a test (or a user's script) restores after it saw ``CANCELED`` is there for good:
    on a store whose deletes are slow, the checkpoints read the moment the status is
    ``CANCELED`` are the ones left once the job is gone (none, or the one retained), not the
    ones the retention is still deleting (subsumed, or every one on DELETE_ON_CANCELLATION)."""
    root = f"{slow_delete_fs.PROTOCOL}://{uuid.uuid4().hex}"
    env = make_env(parallelism=1, config={
        "execution.checkpointing.interval": "50 ms",
        "execution.checkpointing.dir": root,
        "execution.checkpointing.externalized-checkpoint-retention": retention,
        "restart-strategy.type": "none",
    })  # fmt: skip
    source = DataGeneratorSource(lambda i: i % 5, count=None, records_per_second=2000)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "gen")
    stream.key_by(lambda v: v).map(lambda v: v).filter(lambda v: v < 0).print()
    client = env.execute_async("deleted slowly")
    storage = CheckpointStorage(root, client.get_job_id())
    deadline = time.monotonic() + 30
    while max(storage.completed_checkpoint_ids(), default=0) < 3:  # two subsumed on the way
        assert time.monotonic() < deadline, "no third checkpoint"
        time.sleep(0.02)
    client.cancel()
    while client.get_job_status().result() is not JobStatus.CANCELED:
        assert time.monotonic() < deadline, "not cancelled"
        time.sleep(0.005)
    seen = storage.completed_checkpoint_ids()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=30)
    left = storage.completed_checkpoint_ids()
    assert seen == left, f"CANCELED showed checkpoints {seen}, {left} stayed"
    assert len(left) == (retention == "RETAIN_ON_CANCELLATION"), left
