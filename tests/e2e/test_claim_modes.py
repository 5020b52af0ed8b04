"""Claim modes (FLIP-193, reference §7): who owns the snapshot a job starts from.

A first oracle job leaves a snapshot: a checkpoint retained on cancellation, or the savepoint
of a stop. A second job resumes from it with ``execution.state-recovery.claim-mode`` and takes
several newer checkpoints:

* NO_CLAIM (the default): the snapshot directory is byte-identical afterwards, while the job
  runs and after it ended;
* CLAIM: the job owns the snapshot; once newer checkpoints subsumed it, its directory is gone,
  while the job still runs.

Either way the second job's checkpoint ids go on after the snapshot's, and the oracle counts
no loss and no duplicate over both jobs.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest
from tests.rest_client import fetch

from undertow.datastream import JobStatus
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory
from .kills import COMPLETED
from .restore_evidence import RestWatcher, assert_restores, evidence

KEYS, RECORDS_PER_KEY = 10, 1500
#: per source reader (2 readers): a job reads for about 1.5 s
THROTTLED = 5_000.0
TIMEOUT_S = 90.0


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "rest.port": "0",
        **extra,
    }


def _source() -> OracleSource:
    return OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _job_checkpoints(root: Path, job_id: str) -> list[int]:
    return CheckpointStorage(str(root), job_id).completed_checkpoint_ids()


def _sink_records_in(client: Any) -> float:
    """Records the job's sink vertex took in so far (REST metrics, summed over subtasks)."""
    address, jid = client.get_rest_address(), client.get_job_id()
    if address is None:
        return 0.0
    _, job = fetch(f"{address}/jobs/{jid}")
    [sink] = [v for v in job["vertices"] if "sink" in v["name"].lower()]
    _, metrics = fetch(f"{address}/jobs/{jid}/vertices/{sink['id']}/subtasks/metrics"
                       "?get=numRecordsIn&agg=sum")  # fmt: skip
    return sum(float(m["sum"]) for m in metrics)


def _snapshot(make_env: EnvFactory, tmp_path: Path, kind: str) -> Path:
    """Run a first oracle job and leave a ``kind`` snapshot (``checkpoint``: retained on
    cancellation; ``savepoint``: of a stop without drain); its directory."""
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION"}  # fmt: skip
    env = make_env(parallelism=2, config=_config(tmp_path, **retain))
    # a checkpoint's first job runs at half the rate: it waits for a checkpoint after its
    # first records reached the sink, and must not finish its input before
    rate = THROTTLED / 2 if kind == "checkpoint" else THROTTLED
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=rate))
    client = env.execute_async(f"leaves a {kind}")
    root = tmp_path / "checkpoints"
    job = client.get_job_id()
    _wait_for(lambda: len(_job_checkpoints(root, job)) >= 1, "a first checkpoint")
    if kind == "savepoint":
        pointer = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)
        client.get_job_execution_result(timeout=TIMEOUT_S)
        return Path(pointer)
    # A checkpoint taken before any record reached the sink restores nothing (CI, load 10: the
    # first one was), so the snapshot is one triggered after the sink's first records: once
    # they are seen, the newest completed id is M; M + 1 may have been triggered before, M + 2
    # was triggered after M + 1 completed, so after the records.
    _wait_for(lambda: _sink_records_in(client) > 0, "records at the sink")
    newest = max(_job_checkpoints(root, job))
    _wait_for(lambda: max(_job_checkpoints(root, job)) >= newest + 2, "a checkpoint after them")
    client.cancel()
    _wait_for(lambda: client.get_job_status().result() is JobStatus.CANCELED, "the cancellation")
    latest = max(_job_checkpoints(root, job))
    return Path(CheckpointStorage(str(root), job).checkpoint_pointer(latest))


def _contents(directory: Path) -> dict[str, str]:
    """Every file under ``directory``: relative path -> sha256 of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _snapshot_id(snapshot: Path) -> int:
    return int(snapshot.name.rsplit("-", 1)[1])


def _assert_restored(result: Any, console: str, rest_ids: list[int], snapshot: Path) -> None:
    """Exactly-once over both jobs, and the second one restored ``snapshot`` (console line,
    REST ``latest.restored``, a resumed source and restored state)."""
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    ids = assert_restores(console, rest_ids, restores=1)
    evidence(ids == [_snapshot_id(snapshot)], f"restored {ids}, not {snapshot}")
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


def scenario_no_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    kind: str = "checkpoint",
) -> None:  # fmt: skip
    snapshot = _snapshot(make_env, tmp_path, kind)
    before = _contents(snapshot)
    assert "_metadata" in before and len(before) > 1
    capsys.readouterr()

    # the default is NO_CLAIM: no option set
    env = make_env(parallelism=2, config=_config(
        tmp_path, **{"execution.state-recovery.path": str(snapshot)}
    ))  # fmt: skip
    build_pipeline(env, _source())
    client = env.execute_async("resumed, NO_CLAIM")
    watcher = RestWatcher(client)
    root, job = tmp_path / "checkpoints", client.get_job_id()
    _wait_for(lambda: len(_job_checkpoints(root, job)) >= 1 or client.get_job_status().result()
              is JobStatus.FINISHED, "a newer checkpoint")  # fmt: skip
    assert _contents(snapshot) == before, "NO_CLAIM: the snapshot changed while the job ran"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)

    console = capsys.readouterr().err
    completed = [int(n) for n in COMPLETED.findall(console)]
    assert len(completed) >= 3, f"several newer checkpoints must complete: {completed}"
    assert min(completed) == _snapshot_id(snapshot) + 1, "ids go on after the snapshot's"
    assert _contents(snapshot) == before, "NO_CLAIM: the snapshot must stay byte-identical"
    _assert_restored(result, console, watcher.stop(), snapshot)


@pytest.mark.restores
@pytest.mark.parametrize("kind", ["checkpoint", "savepoint"])
def test_no_claim_leaves_the_snapshot_byte_identical(
    make_env: EnvFactory, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_no_claim(make_env, tmp_path, capsys, kind)


def scenario_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    kind: str = "checkpoint",
) -> None:  # fmt: skip
    snapshot = _snapshot(make_env, tmp_path, kind)
    assert (snapshot / "_metadata").is_file()
    capsys.readouterr()

    env = make_env(parallelism=2, config=_config(tmp_path, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": "CLAIM",
        "execution.checkpointing.num-retained": "1",
    }))  # fmt: skip
    build_pipeline(env, _source())
    client = env.execute_async("resumed, CLAIM")
    watcher = RestWatcher(client)
    root, job = tmp_path / "checkpoints", client.get_job_id()
    # subsumed by the job's first checkpoint (one retained), deleted while the job runs on
    _wait_for(lambda: not snapshot.exists()
              or client.get_job_status().result() is JobStatus.FINISHED,
              "the claimed snapshot's deletion")  # fmt: skip
    assert not snapshot.exists()
    assert client.get_job_status().result() is JobStatus.RUNNING, (
        "deleted by subsumption, not at the end"
    )
    assert _job_checkpoints(root, job), "the job's own checkpoint replaced it"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)

    console = capsys.readouterr().err
    completed = [int(n) for n in COMPLETED.findall(console)]
    assert min(completed) == _snapshot_id(snapshot) + 1, "ids go on after the snapshot's"
    _assert_restored(result, console, watcher.stop(), snapshot)


@pytest.mark.restores
@pytest.mark.parametrize("kind", ["checkpoint", "savepoint"])
def test_claim_deletes_the_snapshot_once_subsumed(
    make_env: EnvFactory, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_claim(make_env, tmp_path, capsys, kind)
