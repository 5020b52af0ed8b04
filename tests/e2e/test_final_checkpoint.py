"""FLIP-147: a bounded input ends through a final checkpoint, and checkpoints go on after
some tasks finished.

The test sink is a small two-phase-commit sink through the public ``Sink`` contract: its
writer turns what it received since the last checkpoint into one committable, and its
committer writes each committable once, as a file, recording the newest *completed*
checkpoint it can see in the checkpoint directory at that moment. The writer's last
committable (prepared at end of input) records the newest completed checkpoint at end of
input. Committing it through the final checkpoint means a newer checkpoint completed in
between; committing it in ``finish`` (no final checkpoint) means none did.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream.connectors import (
    Committer,
    DataGeneratorSource,
    DiscardingSink,
    Sink,
    SinkWriter,
    SinkWriterContext,
)
from undertow.storage import CheckpointStorage

from .conftest import EnvFactory
from .kills import COMPLETED
from .restore_evidence import evidence

TIMEOUT_S = 120.0
BOUNDED = 400


def latest_checkpoint(root: str) -> int:
    """The newest completed checkpoint of any job under ``root`` (-1: none)."""
    newest = -1
    path = Path(root)
    if not path.exists():
        return newest
    for job_dir in path.iterdir():
        if job_dir.is_dir() and not job_dir.name.startswith("_"):
            ids = CheckpointStorage(root, job_dir.name).completed_checkpoint_ids()
            newest = max([newest, *ids])
    return newest


class _Writer(SinkWriter):
    def __init__(self, checkpoints: str, subtask: int) -> None:
        self.checkpoints = checkpoints
        self.subtask = subtask
        self.records: list[Any] = []
        self.batch = 0
        self.ended_after: int | None = None

    def write(self, element: Any, timestamp: int | None) -> None:
        self.records.append(element)

    def flush(self, end_of_input: bool) -> None:
        if end_of_input:
            self.ended_after = latest_checkpoint(self.checkpoints)

    def prepare_commit(self) -> list[Any]:
        self.batch += 1
        committable = {
            "subtask": self.subtask, "batch": self.batch, "records": self.records,
            "final": self.ended_after is not None, "ended_after": self.ended_after,
        }  # fmt: skip
        self.records = []
        return [committable]


class _Committer(Committer):
    def __init__(self, out: str, checkpoints: str) -> None:
        self.out = out
        self.checkpoints = checkpoints

    def commit(self, committables: list[Any]) -> None:
        for c in committables:
            target = os.path.join(self.out, f"commit-{c['subtask']}-{c['batch']}.json")
            if os.path.exists(target):
                continue  # idempotent: a replay after a restore
            record = dict(c, committed_after=latest_checkpoint(self.checkpoints))
            tmp = target + ".tmp"
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, target)


class RecordingSink(Sink):
    """Two-phase commit into ``out`` (one file per committable); see the module docstring."""

    def __init__(self, out: Path, checkpoints: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = str(out)
        self.checkpoints = str(checkpoints)

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        marker = f"writer-{context.subtask_index()}-{time.time_ns()}-{os.getpid()}"
        Path(self.out, marker).touch()  # counts how often the sink ran
        return _Writer(self.checkpoints, context.subtask_index())

    def create_committer(self) -> Committer | None:
        return _Committer(self.out, self.checkpoints)


def commits(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("commit-*.json"))]


def committed_values(out: Path) -> list[Any]:
    return sorted(v for c in commits(out) for v in c["records"])


def _config(tmp_path: Path, interval: str = "100 ms") -> dict[str, str]:
    return {
        "execution.checkpointing.interval": interval,
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }


def _bounded(env: Any) -> Any:
    source = DataGeneratorSource(lambda i: i, count=BOUNDED)
    return env.from_source(source, WatermarkStrategy.no_watermarks(), "bounded").uid("bounded")


def test_last_records_are_committed_by_the_final_checkpoint(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    env = make_env(parallelism=2, config=_config(tmp_path, "300 ms"))
    _bounded(env).map(lambda v: v * 10).uid("times10").sink_to(RecordingSink(out, checkpoints))
    env.execute_async("final checkpoint").get_job_execution_result(timeout=TIMEOUT_S)

    assert committed_values(out) == [i * 10 for i in range(BOUNDED)]
    finals = [c for c in commits(out) if c["final"]]
    assert len(finals) == 2, finals  # one per sink subtask, committed once
    for c in finals:
        # a checkpoint taken after the end of input completed before the commit
        assert c["committed_after"] > c["ended_after"], c


def test_the_job_ends_only_after_its_final_checkpoint(
    make_env: EnvFactory, tmp_path: Path, capsys: Any
) -> None:
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    env = make_env(parallelism=1, config=_config(tmp_path, "200 ms"))
    _bounded(env).sink_to(RecordingSink(out, checkpoints))
    env.execute_async("ends after final").get_job_execution_result(timeout=TIMEOUT_S)

    completed = [int(n) for n in COMPLETED.findall(capsys.readouterr().err)]
    (final,) = [c for c in commits(out) if c["final"]]
    # the checkpoint that committed the last records completed while the job still ran
    assert completed and max(completed) >= final["committed_after"] > final["ended_after"]
    assert committed_values(out) == list(range(BOUNDED))


def test_a_long_interval_does_not_hold_a_bounded_job_at_its_end(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """Once every task reached the end of its data, the final checkpoint is requested at once
    (FLINK-28386), not at the next period: here none would come for ten minutes (the minimum
    pause makes the first period exactly the interval)."""
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    config = {**_config(tmp_path, "10 min"), "execution.checkpointing.min-pause": "10 min"}
    env = make_env(parallelism=2, config=config)
    _bounded(env).map(lambda v: v * 10).uid("times10").sink_to(RecordingSink(out, checkpoints))
    client = env.execute_async("final at once")
    client.get_job_execution_result(timeout=TIMEOUT_S)  # not 10 minutes

    assert committed_values(out) == [i * 10 for i in range(BOUNDED)]
    finals = [c for c in commits(out) if c["final"]]
    assert len(finals) == 2 and all(c["committed_after"] > c["ended_after"] for c in finals)


def _mixed(env: Any, out: Path, checkpoints: Path) -> None:
    _bounded(env).map(lambda v: ("b", v)).uid("tag").sink_to(RecordingSink(out, checkpoints))
    endless = DataGeneratorSource(lambda i: i, count=None, records_per_second=200)
    env.from_source(endless, WatermarkStrategy.no_watermarks(), "endless").uid("endless").map(
        lambda v: v + 1
    ).uid("plus1").sink_to(DiscardingSink())


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _wait_ended(client: Any) -> None:
    """Wait until the cancelled job ended: its commits and retained checkpoints are final."""
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=TIMEOUT_S)


@pytest.mark.restores
def test_checkpoints_go_on_after_a_bounded_branch_finished_and_restore_skips_it(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    config = _config(tmp_path)
    env = make_env(parallelism=2, config=config)
    _mixed(env, out, checkpoints)
    client = env.execute_async("mixed")
    try:
        _wait_for(lambda: sum(c["final"] for c in commits(out)) == 2, "the bounded branch")
        ended_at = latest_checkpoint(str(checkpoints))
        # a checkpoint that the finished branch's subtasks no longer take part in
        _wait_for(lambda: latest_checkpoint(str(checkpoints)) >= ended_at + 3,
                  "checkpoints after the bounded branch finished")  # fmt: skip
    finally:
        client.cancel()
    _wait_ended(client)
    expected = sorted(["b", i] for i in range(BOUNDED))
    assert committed_values(out) == expected
    before = commits(out)
    assert len(list(out.glob("writer-*"))) == 2

    root = checkpoints
    job_dirs = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith("_")]
    storage = CheckpointStorage(str(root), job_dirs[0].name)
    pointer = storage.checkpoint_pointer(max(storage.completed_checkpoint_ids()))
    resumed = make_env(parallelism=2, config={**config, "execution.state-recovery.path": pointer})
    _mixed(resumed, out, checkpoints)
    client = resumed.execute_async("mixed, resumed")
    try:
        first = latest_checkpoint(str(checkpoints))
        _wait_for(lambda: latest_checkpoint(str(checkpoints)) >= first + 2, "checkpoints")
    finally:
        client.cancel()
    _wait_ended(client)
    # the bounded branch was restored as finished: it did not run, wrote and committed nothing
    writers = sorted(p.name for p in out.glob("writer-*"))
    evidence(len(writers) == 2, f"the finished branch ran again after the restore: {writers}")
    evidence(commits(out) == before, "the finished branch committed again after the restore")
    assert committed_values(out) == expected
