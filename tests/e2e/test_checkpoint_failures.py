"""Failing snapshots and execution.checkpointing.tolerable-failed-checkpoints, end to end."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.core.errors import ConfigurationError
from undertow.datastream import KeyedProcessFunction, RuntimeContext
from undertow.datastream.connectors import DataGeneratorSource
from undertow.datastream.state import ValueStateDescriptor
from undertow.runtime.checkpoint.failure import CheckpointException


class Unpicklable:
    """State that cannot be snapshotted: every checkpoint of its operator fails."""

    def __reduce__(self) -> Any:
        raise RuntimeError("injected snapshot failure")


class KeepsBadState(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("bad"))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        self.state.update(Unpicklable())
        yield value


def _job(make_env: Any, tmp_path: Any, tolerable: int, extra: dict[str, str] | None = None) -> Any:
    env = make_env(
        parallelism=1,
        config={
            "execution.checkpointing.interval": "50 ms",
            "execution.checkpointing.dir": str(tmp_path),
            "execution.checkpointing.tolerable-failed-checkpoints": str(tolerable),
            "restart-strategy.type": "none",
            **(extra or {}),
        },
    )
    source = DataGeneratorSource(lambda i: i % 5, count=3000, records_per_second=3000)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "gen")
    return stream.key_by(lambda v: v).process(KeepsBadState()).name("keeper")


def test_failing_snapshot_fails_the_job_when_no_failure_is_tolerated(
    make_env: Any, tmp_path: Any
) -> None:
    with pytest.raises(CheckpointException) as info:
        list(_job(make_env, tmp_path, tolerable=0).execute_and_collect())
    message = str(info.value)
    assert "tolerable-failed-checkpoints=0" in message
    assert "snapshot failed" in message and "injected snapshot failure" in message
    assert "keeper" in message


def test_failing_snapshots_are_tolerated_up_to_the_limit(
    make_env: Any, tmp_path: Any, caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # Every checkpoint of this job fails. With final checkpoints (FLIP-147) its bounded tasks
    # would wait forever for one to complete, as in Flink; this test is about tolerating
    # failures while the job runs, so it ends its tasks without a final checkpoint.
    config = {"execution.checkpointing.checkpoints-after-tasks-finish": "false"}
    with caplog.at_level(logging.INFO, logger="undertow.runtime.checkpoint.coordinator"):
        records = list(_job(make_env, tmp_path, tolerable=1000, extra=config).execute_and_collect())
    assert len(records) == 3000
    # failures happened (the JobMaster runs in this process and logs each abort) ...
    aborted = [r.getMessage() for r in caplog.records if "aborted" in r.getMessage()]
    failed = [m for m in aborted if "injected snapshot failure" in m]
    assert len(failed) >= 2, f"no checkpoint failed, nothing was tolerated: {aborted}"
    # ... and were tolerated: no checkpoint completed once the state was bad, yet the job
    # neither failed nor restarted. A checkpoint taken before the keeper's first record (a
    # slow start: the first trigger comes 50 ms after the job's) holds no bad state and
    # completes; every later one fails.
    console = capsys.readouterr().err
    lines = console.splitlines()
    first = next(i for i, line in enumerate(lines) if re.search(r"checkpoint \d+ of job", line))
    assert not any(re.search(r"checkpoint \d+ completed", line) for line in lines[first:]), console
    assert "restarting" not in console, console


def test_a_checkpoint_directory_that_cannot_be_made_fails_the_job_at_its_start(
    make_env: Any, tmp_path: Any
) -> None:
    """As Flink makes its checkpoint locations when the job starts: every checkpoint into
    such a directory failed, and each failure restarted the job, without end."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    env = make_env(parallelism=1, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(blocked / "checkpoints"),
        "restart-strategy.type": "none",  # without the check: the first failure ends it
    })  # fmt: skip
    env.from_collection([1, 2, 3]).map(lambda x: x).print()
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.dir: cannot create"):
        env.execute("blocked checkpoints")
