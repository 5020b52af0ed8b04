"""Unaligned savepoints (beyond Flink), through the public API: the oracle PIPELINE under
forced backpressure (tests/e2e/test_unaligned_checkpoints.py's settings) is stopped with
``stop_with_savepoint(path, unaligned=True)``; the savepoint holds in-flight data, kept in
its own directory (no file shared with the job's checkpoints) and left there after the job
ended; a new job resumes from it at the same and at another parallelism with all six oracle
counts 0, restoring the in-flight bytes (console line, REST) and replaying them before live
data; and, counted over both jobs, no record is processed twice (the stopped job drops what
is in flight instead of processing it).
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from undertow.cli.main import main
from undertow.common import WatermarkStrategy
from undertow.datastream import JobStatus, MapFunction
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, decode_metadata
from undertow.storage import CheckpointStorage
from undertow.storage.keys import read_key
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores, restored_checkpoints
from .restore_evidence import evidence as evidence_of
from .test_debloat import rest
from .test_unaligned_checkpoints import (
    KEYS,
    RATE,
    RECORDS_PER_KEY,
    SINK_SPIN_S,
    checkpoints_with_channel_state,
    config,
    run,
)

TIMEOUT_S = 120.0


def savepoint_metadata(pointer: str) -> CheckpointMetadata:
    """The verified ``_metadata`` of the savepoint directory ``pointer``."""
    key = read_key()
    assert key is not None
    path = Path(pointer)
    payload = CheckpointStorage(str(path.parent), path.name).read_metadata(pointer)
    return decode_metadata(payload, key, where=pointer)


def in_flight_bytes(meta: CheckpointMetadata) -> int:
    return sum(h.persisted_bytes for v in meta.vertices for h in v.channel_state.values())


def sink_records_read(client: Any) -> int:
    """Records the verifying sink's subtasks have read so far (REST ``/jobs/:id``), 0 before
    the REST server answers."""
    address = client.get_rest_address()
    if address is None:
        return 0
    try:
        vertices = rest(address, f"/jobs/{client.get_job_id()}")["vertices"]
    except (OSError, ValueError):
        return 0
    return sum(int(v["metrics"]["read-records"]) for v in vertices
               if "verifying sink" in v["name"])  # fmt: skip


def wait_for_backpressure_past_the_sink(client: Any, checkpoints: Path) -> None:
    """Until a periodic checkpoint held in-flight data and the verifying sink has read records,
    so that a savepoint taken next carries sink tallies. Processes start slower than threads,
    and on a loaded machine the first backpressured checkpoint came while the sink had read
    nothing (the resumed job then restored no tally)."""
    deadline = time.monotonic() + 30
    while not (checkpoints.is_dir() and checkpoints_with_channel_state(checkpoints)
               and sink_records_read(client) > 0):  # fmt: skip
        assert time.monotonic() < deadline, "no backpressured checkpoint with sink records in 30 s"
        time.sleep(0.05)


def stop_unaligned_then_resume(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], old: int, new: int
) -> None:
    """Stop the backpressured PIPELINE at ``old`` with an unaligned savepoint, check what the
    savepoint holds and where, and resume it at ``new``: exactly-once over both jobs, and
    the resumed job restored the savepoint's in-flight data."""
    records_per_key = 4 * RECORDS_PER_KEY
    checkpoints = tmp_path / "checkpoints"
    settings = config(checkpoints, "unaligned", restarts=0)
    env = make_env(parallelism=old, config=settings)
    build_pipeline(env, OracleSource(KEYS, records_per_key, records_per_second=RATE),
                   sink_spin_s=SINK_SPIN_S)  # fmt: skip
    client = env.execute_async("stopped with an unaligned savepoint")
    wait_for_backpressure_past_the_sink(client, checkpoints)

    target = tmp_path / "savepoints"
    savepoint = client.stop_with_savepoint(str(target), unaligned=True).result(TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert Path(savepoint).parent == target, savepoint
    meta = savepoint_metadata(savepoint)
    assert meta.is_savepoint and meta.properties["unaligned"] == "true", meta.properties
    persisted = in_flight_bytes(meta)
    assert persisted > 0, "the unaligned savepoint holds no in-flight data"
    # Self-contained and user-owned: every channel-state file the savepoint names is inside
    # its directory, and the job's own chk-<n> of it is gone.
    # (a subtask's share under the inline threshold lives in _metadata itself: self-contained too)
    sides = [h for v in meta.vertices for handles in v.channel_state.values()
             for h in (handles.input, handles.output) if h is not None]  # fmt: skip
    assert sides and all(h.file is not None or h.inline_data for h in sides), meta
    paths = {h.file.path for h in sides if h.file is not None}
    for relative in paths:
        assert (Path(savepoint) / relative).is_file(), (savepoint, relative)
    [job_dir] = [d for d in checkpoints.iterdir() if d.is_dir() and not d.name.startswith("_")]
    assert not (job_dir / f"chk-{meta.checkpoint_id}").exists()

    capsys.readouterr()
    resumed_settings = config(checkpoints, "unaligned", restarts=0)
    resumed_settings["execution.state-recovery.path"] = savepoint
    resumed = make_env(parallelism=new, config=resumed_settings)
    evidence = tmp_path / "evidence"
    pace = KEYS * records_per_key / (1.5 * new)
    build_pipeline(resumed, OracleSource(KEYS, records_per_key, records_per_second=pace),
                   sink_spin_s=SINK_SPIN_S / 5, evidence_dir=evidence)  # fmt: skip
    resumed_client = resumed.execute_async("resumed from an unaligned savepoint")
    watcher = RestWatcher(resumed_client)
    oracle = OracleResult.from_job_result(run(resumed_client), KEYS, records_per_key, evidence)
    console = capsys.readouterr().err
    ids = assert_restores(console, watcher.stop(), restores=1)
    evidence_of(ids == [meta.checkpoint_id], f"restored {ids}, not {savepoint}")
    [(_, mode, restored_bytes)] = restored_checkpoints(console)
    evidence_of(mode == "unaligned" and restored_bytes > 0, console)
    oracle.assert_restored()
    evidence_of(oracle.replayed_in_any_attempt > 0, f"no replayed record observed: {oracle}")
    oracle.assert_exactly_once()
    assert oracle.restarts == 0, oracle
    assert Path(savepoint, "_metadata").is_file(), "the savepoint is the user's: it stays"


def scenario_stop_unaligned_then_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stop_unaligned_then_resume(make_env, tmp_path, capsys, 2, 3)


@pytest.mark.restores
@pytest.mark.sampled("new")  # make test: one parallelism per run; make soak: both
@pytest.mark.parametrize("target", ["local-threads", "local"])
@pytest.mark.parametrize("new", [2, 3])
def test_unaligned_stop_with_savepoint_then_resume(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], new: int
) -> None:
    """At the same parallelism (in-place channel state) and at another (re-emitted)."""
    stop_unaligned_then_resume(make_env, tmp_path, capsys, 2, new)


@pytest.mark.parametrize("target", ["local-threads"])
def test_undertow_savepoint_and_stop_with_unaligned(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``undertow savepoint URL DIR --unaligned`` while the job goes on, then ``undertow stop
    URL -p DIR --unaligned``: both savepoints hold in-flight data; ``--drain --unaligned`` is
    refused before anything is sent."""
    checkpoints = tmp_path / "checkpoints"
    env = make_env(parallelism=2, config=config(checkpoints, "unaligned", restarts=0))
    build_pipeline(env, OracleSource(KEYS, 4 * RECORDS_PER_KEY, records_per_second=RATE),
                   sink_spin_s=SINK_SPIN_S)  # fmt: skip
    client = env.execute_async("savepoints from the CLI")
    wait_for_backpressure_past_the_sink(client, checkpoints)
    url = client.get_rest_address()
    assert url is not None
    target = str(tmp_path / "savepoints")
    assert main(["stop", url, "-p", target, "--drain", "--unaligned"]) == 2

    assert main(["savepoint", url, target, "--unaligned"]) == 0, capsys.readouterr().err[-2000:]
    assert client.get_job_status().result() is JobStatus.RUNNING, (
        "a savepoint does not stop the job"
    )
    assert main(["stop", url, "-p", target, "--unaligned"]) == 0, capsys.readouterr().err[-2000:]

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    printed = capsys.readouterr().out
    paths = re.findall(r"^Savepoint completed\. Path: (\S+)$", printed, re.M)
    assert len(paths) == 2, printed
    for pointer in paths:
        meta = savepoint_metadata(pointer)
        assert meta.properties["unaligned"] == "true", (pointer, meta.properties)
    assert in_flight_bytes(savepoint_metadata(paths[-1])) > 0, paths[-1]


class CountingSpin(MapFunction):
    """Counts the records it processes (written to a file of its own when it closes) and
    spins on each, so the edge in front of it holds a backlog."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.count = 0

    def map(self, value: Any) -> Any:
        self.count += 1
        until = time.perf_counter() + SINK_SPIN_S
        while time.perf_counter() < until:
            pass
        return value

    def close(self) -> None:
        Path(self.directory, uuid.uuid4().hex).write_text(str(self.count))


def counting_job(env: Any, directory: Path, total: int, rate: float) -> None:
    source = DataGeneratorSource(lambda i: (i % 10, i), count=total, records_per_second=rate)
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        .key_by(lambda v: v[0])
        .map(CountingSpin(str(directory))).uid("counting-spin")
        .sink_to(DiscardingSink()).uid("discard")
    )  # fmt: skip


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_records_in_flight_at_an_unaligned_stop_are_processed_once_after_the_resume(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """Work counted across both jobs: every record is processed exactly once by the spinning
    map. The first job processes nothing after its savepoint (what was in flight is in the
    savepoint's channel state, and the second job processes it); a task that went on with
    its backlog would process those records twice."""
    total = 6_000
    checkpoints, counts = tmp_path / "checkpoints", tmp_path / "counts"
    counts.mkdir()
    env = make_env(parallelism=2, config=config(checkpoints, "unaligned", restarts=0))
    counting_job(env, counts, total, RATE)
    client = env.execute_async("counting, stopped")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        checkpoints.is_dir() and checkpoints_with_channel_state(checkpoints)
    ):
        time.sleep(0.05)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp"), unaligned=True).result(TIMEOUT_S)
    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert in_flight_bytes(savepoint_metadata(savepoint)) > 0
    first = sum(int(p.read_text()) for p in counts.iterdir())
    assert 0 < first < total, first

    resumed_config = config(checkpoints, "unaligned", restarts=0)
    resumed_config["execution.state-recovery.path"] = savepoint
    resumed = make_env(parallelism=2, config=resumed_config)
    counting_job(resumed, counts, total, 10 * RATE)
    run(resumed.execute_async("counting, resumed"))
    resumed_count = sum(int(p.read_text()) for p in counts.iterdir()) - first
    evidence_of(resumed_count < total, f"the resumed job counted {resumed_count} of {total} "
                "records: it started over instead of resuming")  # fmt: skip
    assert first + resumed_count == total
