"""FileSink and DeltaSink under kill -9, final checkpoints and restores (issue 6 "Proof").

* A bounded job reads Parquet files at p=2 through a keyed stateful operator into a
  ``FileSink`` (Parquet) and a ``DeltaSink``; a seeded random ``kill -9`` of a worker process
  lands after the first completed checkpoint (``local`` and ``spark``): the committed output
  read back equals the expected records exactly, no hidden file is left, one restart.
  The seed is printed; replay with ``UNDERTOW_TEST_SEED``.
* The last records reach both sinks through the final checkpoint: the Delta table's last
  commit is filed under a checkpoint that completed (a job that skipped the final checkpoint
  commits them under the end-of-input marker instead, which the test also shows).
* A job mixing the bounded file branch with the (long, throttled) oracle branch retains its
  checkpoint on cancellation after the bounded branch finished; a new job restored from it
  skips the finished branch (its FileSink output is unchanged) and runs the oracle branch to
  its end: all oracle counts 0.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from undertow.common import WatermarkStrategy
from undertow.core.errors import JobCancelledError
from undertow.datastream.connectors.file_system import FileSource
from undertow.datastream.formats.parquet import ParquetColumnarRowInputFormat
from undertow.storage import CheckpointStorage
from undertow.testing.gates import SourceHold
from undertow.testing.oracle import (
    OracleResult,
    OracleSource,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import COMPLETED, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import (
    CountingMap,
    evidence,
    handled_in_finishing_attempt,
    restored_checkpoints,
)
from .test_delta_and_spark import CHECKPOINT_KEY, COMMITTER_KEY, _read_delta, _sinks
from .test_file_connectors import (
    EXPECTED,
    IN_ROW,
    RESTARTING,
    CountPerKey,
    _config,
    _hidden_files,
    _parquet_input,
)

JOB_TIMEOUT_S = 120.0
#: per record, chained to the file source: 4000 records over 2 readers last about 2 s
PACE_S = 0.001


def _paced(value: Any) -> Any:
    time.sleep(PACE_S)
    return value


def _file_branch(env: Any, tmp_path: Path, paced: bool) -> tuple[Path, Path]:
    """FileSource (Parquet) -> [paced] -> key_by -> CountPerKey -> FileSink + DeltaSink."""
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(IN_ROW, batch_size=20), str(_parquet_input(tmp_path / "in"))
    ).build()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "files").uid("files")
    stream = stream.map(CountingMap("read")).uid("counted")
    if paced:
        stream = stream.map(_paced).uid("paced")
    counted = stream.key_by(lambda r: r[0]).map(CountPerKey()).uid("count")
    parquet_out, file_sink, delta_out, delta_sink = _sinks(tmp_path)
    counted.sink_to(file_sink).uid("parquet-sink")
    counted.sink_to(delta_sink).uid("delta-sink")
    return parquet_out, delta_out


def _committed_part_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.parquet") if not p.name.startswith((".", "_"))]


def _parquet_rows(root: Path) -> list[tuple[int, int, int]]:
    files = _committed_part_files(root)
    rows = [r for p in files for r in pq.read_table(p).to_pylist()]
    return sorted((r["key"], r["seq"], r["count"]) for r in rows)


def _delta_commits(root: Path) -> list[tuple[str, int]]:
    """(committer id, checkpoint id) of the sink's commits, oldest first."""
    history = reversed(DeltaTable(str(root)).history())
    return [(h[COMMITTER_KEY], h[CHECKPOINT_KEY]) for h in history if CHECKPOINT_KEY in h]


def _completed_ids(root: Path) -> set[int]:
    """The completed checkpoints the storage under ``root`` still holds, over all jobs."""
    ids: set[int] = set()
    for job_dir in root.iterdir():
        if job_dir.is_dir() and not job_dir.name.startswith("_"):
            ids.update(CheckpointStorage(str(root), job_dir.name).completed_checkpoint_ids())
    return ids


def _latest_completed(root: Path) -> int:
    """The newest completed checkpoint under ``root``. A listing can race the deletion of the
    checkpoint a newer one subsumed and see none (CI saw that): it is read again then."""
    ids: set[int] = set()
    _wait_for(lambda: bool(ids.update(_completed_ids(root)) or ids), "a completed checkpoint")
    return max(ids)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local", "spark"])
def test_parquet_and_delta_exactly_once_under_a_random_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = oracle_seed()
    env = make_env(parallelism=2, config=_config(tmp_path, restarts=3))
    parquet_out, delta_out = _file_branch(env, tmp_path, paced=True)

    client = env.execute_async("files to parquet and delta, kill -9")
    result, console = run_killing_a_worker_after_a_checkpoint(
        client,
        capsys,
        seed,
        earliest_s=0.0,
        latest_s=0.5,
        timeout_s=JOB_TIMEOUT_S,
        flowed=lambda: any(_committed_part_files(parquet_out)),
    )

    assert len(RESTARTING.findall(console)) == 1, (seed, console)
    evidence(len(restored_checkpoints(console)) == 1, f"seed {seed}: {console}")
    read = handled_in_finishing_attempt(result, "read")
    evidence(read < len(EXPECTED), f"seed {seed}: the restored attempt read {read} of "
             f"{len(EXPECTED)} rows: resumed readers read fewer")  # fmt: skip
    assert _parquet_rows(parquet_out) == EXPECTED, seed
    assert pq.read_table(str(parquet_out)).num_rows == len(EXPECTED), seed
    assert _hidden_files(parquet_out) == [], seed
    assert _read_delta(delta_out) == EXPECTED, seed
    commits = _delta_commits(delta_out)
    assert len(set(commits)) == len(commits), (seed, "a checkpoint committed twice", commits)
    assert DeltaTable(str(delta_out)).version() == len(commits), (seed, commits)


@pytest.mark.parametrize("target", ["local-threads", "local"])
@pytest.mark.parametrize("final_checkpoint", [True, False])
def test_the_last_parquet_and_delta_records_are_committed_by_the_final_checkpoint(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], final_checkpoint: bool
) -> None:
    config = _config(tmp_path, restarts=0)
    config["execution.checkpointing.interval"] = "300 ms"
    config["execution.checkpointing.checkpoints-after-tasks-finish"] = str(final_checkpoint).lower()
    env = make_env(parallelism=2, config=config)
    parquet_out, delta_out = _file_branch(env, tmp_path, paced=False)
    env.execute_async("final checkpoint").get_job_execution_result(timeout=JOB_TIMEOUT_S)

    completed = {int(n) for n in COMPLETED.findall(capsys.readouterr().err)}
    assert _parquet_rows(parquet_out) == EXPECTED
    assert _hidden_files(parquet_out) == []
    assert _read_delta(delta_out) == EXPECTED
    last_checkpoint = _delta_commits(delta_out)[-1][1]
    if final_checkpoint:
        # the last records were filed under a checkpoint that completed while the job ran
        # (a checkpoint whose barrier reached the committer after the writers' end of input;
        # other tasks may still have needed a later one to finish)
        assert last_checkpoint in completed, (last_checkpoint, completed)
    else:
        # the control: without a final checkpoint they are committed at end of input, under
        # no checkpoint at all; so the assertion above fails if the final checkpoint is skipped
        assert last_checkpoint not in completed, (last_checkpoint, completed)


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


ORACLE_KEYS, ORACLE_PER_KEY = 10, 400
#: per reader (2 readers, 2,000 records each); the resumed job reads the rest faster
ORACLE_RATE, RESUMED_RATE = 250.0, 2000.0
#: The first job's oracle readers stop here (of their 2,000) until it is cancelled: a finished
#: job deletes its checkpoints, and a pace alone did not keep it running until the test had
#: its checkpoints (here at load 17 it ended after checkpoint 8, with the file branch's
#: checkpoints not yet seen, and the test waited for a checkpoint until it timed out).
HELD_AT = 1000


def _mixed(
    env: Any, tmp_path: Path, rate: float = ORACLE_RATE, hold: SourceHold | None = None
) -> tuple[Path, Path]:
    outputs = _file_branch(env, tmp_path, paced=False)
    source = OracleSource(ORACLE_KEYS, ORACLE_PER_KEY, records_per_second=rate, hold=hold)
    build_pipeline(env, source)
    return outputs


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads", "local", "spark"])
def test_restore_after_the_bounded_branch_finished_keeps_the_oracle_exact(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    checkpoints = tmp_path / "checkpoints"
    config = _config(tmp_path, restarts=0)
    config["execution.checkpointing.externalized-checkpoint-retention"] = "RETAIN_ON_CANCELLATION"
    env = make_env(parallelism=2, config=config)
    parquet_out, delta_out = _mixed(env, tmp_path, hold=SourceHold(tmp_path / "hold", HELD_AT))
    client = env.execute_async("files and oracle")
    try:
        _wait_for(lambda: len(_parquet_rows(parquet_out)) >= len(EXPECTED), "the file branch")
        ended_at = _latest_completed(checkpoints)
        _wait_for(lambda: _latest_completed(checkpoints) >= ended_at + 2,
                  "checkpoints after the file branch finished")  # fmt: skip
    finally:
        client.cancel()
    with pytest.raises(JobCancelledError):  # the oracle branch was held
        client.get_job_execution_result(timeout=JOB_TIMEOUT_S)
    assert _parquet_rows(parquet_out) == EXPECTED
    assert _read_delta(delta_out) == EXPECTED
    files_before = sorted(p.name for p in parquet_out.rglob("*") if p.is_file())
    delta_version = DeltaTable(str(delta_out)).version()

    (job_dir,) = [d for d in checkpoints.iterdir() if d.is_dir() and not d.name.startswith("_")]
    storage = CheckpointStorage(str(checkpoints), job_dir.name)
    pointer = storage.checkpoint_pointer(max(storage.completed_checkpoint_ids()))
    resumed = make_env(parallelism=2, config={**config, "execution.state-recovery.path": pointer})
    # same topology and output paths: the file branch is restored as finished
    (tmp_path / "in").rename(tmp_path / "in-first")  # _parquet_input recreates it
    _mixed(resumed, tmp_path, RESUMED_RATE)
    result = resumed.execute_async("files and oracle, resumed").get_job_execution_result(
        timeout=JOB_TIMEOUT_S
    )

    oracle = OracleResult.from_job_result(result, ORACLE_KEYS, ORACLE_PER_KEY)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected, oracle
    assert oracle.restarts == 0, oracle
    oracle.assert_restored()  # a resumed source and restored state, not a rerun
    # the finished branch did not run again: nothing written, nothing committed twice
    assert sorted(p.name for p in parquet_out.rglob("*") if p.is_file()) == files_before
    assert _parquet_rows(parquet_out) == EXPECTED
    assert DeltaTable(str(delta_out)).version() == delta_version
    assert _read_delta(delta_out) == EXPECTED
