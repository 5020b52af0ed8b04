"""Incremental RocksDB checkpoints end to end (issue 15, FLIP-193).

* The exactly-once oracle on ``EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=
  True)``, aligned and unaligned, with failures scheduled in ``map``: both restores are
  evidenced as in the other restore tests (console line, REST, resumed source, restored state);
  SST files appear in ``<job>/shared/`` while the job runs, and none is left once it finished
  (the registry deleted every file no retained checkpoint referenced).
* NO_CLAIM: a second job restores the first job's retained incremental checkpoint and takes
  several checkpoints; every file of the first job's directory (its ``chk-<n>`` and its
  ``shared/`` SST files) is byte-identical afterwards; the second job's ``shared/`` holds
  duplicates of the restored files (hard links, FLIP-193) and uploads of its own.
* CLAIM: the claimed checkpoint's directory and its shared files are deleted once subsumed.
* Rescale: the retained checkpoint (aligned, and unaligned with in-flight data) resumes at
  parallelism 3 and 1, the oracle at 0 with the restore evidenced.
* A seeded random kill -9 of a worker process (``local``): the restart restores from the
  incremental checkpoint, and the killed worker's DB directories are swept.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import EmbeddedRocksDBStateBackend, JobStatus
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
from .restore_evidence import RestWatcher, assert_restores, evidence, restored_checkpoints

KEYS, RECORDS_PER_KEY = 20, 2000
THROTTLED = 5_000.0
SPIN_S = 0.0005  # the verifying sink's busy-wait per record: backpressure for in-flight data
TIMEOUT_S = 240.0  # a bound on a hang, not a speed target
COMPLETED = re.compile(r"^\[undertow\] checkpoint (\d+) completed", re.M)
RESTARTING = re.compile(r"^\[undertow\] job \w+ failed \((?P<reason>.*)\); restarting", re.M)


def _config(tmp_path: Path, restarts: int = 0, **extra: str) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "250 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        **extra,
    }


def _incremental(env: Any, tmp_path: Path) -> None:
    backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    backend.set_db_storage_paths(str(tmp_path / "rocksdb"))
    env.set_state_backend(backend)
    assert env.get_configuration().to_dict()["execution.checkpointing.incremental"] == "true"


class SharedWatcher:
    """Collects the names seen in every ``<root>/*/shared/`` directory (every 10 ms)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            for shared in self.root.glob("*/shared"):
                try:
                    self.seen.update(p.name for p in shared.iterdir())
                except FileNotFoundError:
                    continue

    def __enter__(self) -> SharedWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_oracle_with_scheduled_failures(
    env: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    source: OracleSource,
    failing: FailingMap,
    name: str,
    probe: Callable[[Any], Any] | None = None,
) -> tuple[set[str], str, Any]:
    """Run the oracle with ``failing`` (two scheduled failures) in ``map`` while watching
    ``shared/``: exactly once, both restores evidenced, at least 10 checkpoints completed.
    Returns the shared file names seen, the job id, and ``probe(client)`` (called once the job
    ended, before it is cancelled)."""
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, evidence_dir=evidence)
    with SharedWatcher(tmp_path / "checkpoints") as watcher:
        client = env.execute_async(name)
        rest = RestWatcher(client)
        try:
            result = client.get_job_execution_result(timeout=TIMEOUT_S)
            probed = probe(client) if probe is not None else None
        finally:
            rest_ids = rest.stop()
            client.cancel()
    oracle = OracleResult.from_job_result(result, source.keys, source.records_per_key, evidence)
    console = capsys.readouterr().err
    reasons = [m.group("reason") for m in RESTARTING.finditer(console)]
    assert_restores(console, rest_ids, restores=2)
    oracle.assert_restored()  # before the counts: a lost restore shows as itself
    oracle.assert_exactly_once()
    assert oracle.restarts == 2, (oracle, reasons)
    assert all("InjectedFailure: FailingMap" in r for r in reasons), reasons
    assert len(COMPLETED.findall(console)) >= 10, "at least 10 checkpoints complete"
    return watcher.seen, client.get_job_id(), probed


def assert_shared_files_deleted(tmp_path: Path, job_id: str) -> None:
    """Once the job finished, its ``shared/`` empties (the JobMaster deletes the files with
    the checkpoints as it shuts down)."""
    shared = tmp_path / "checkpoints" / job_id / "shared"
    deadline = time.monotonic() + 5
    while any(shared.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(p.name for p in shared.iterdir()) == [], (
        "the job finished: every shared file is deleted with the checkpoints"
    )


def scenario_incremental_scheduled_failures(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unaligned: bool = False,
) -> None:
    """``map`` fails after checkpoints 2 and 5; state restores from incremental checkpoints."""
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    config = _config(tmp_path, failing.scheduled_failures)
    config["execution.checkpointing.unaligned.enabled"] = str(unaligned).lower()
    env = make_env(parallelism=2, config=config)
    _incremental(env, tmp_path)
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    seen, job_id, _ = run_oracle_with_scheduled_failures(
        env, tmp_path, capsys, source, failing, "oracle, incremental rocksdb"
    )
    ssts = {name for name in seen if name.endswith(".sst")}
    assert ssts, f"no SST file was uploaded into shared/: {sorted(seen)}"
    assert_shared_files_deleted(tmp_path, job_id)
    local = [p.name for p in (tmp_path / "rocksdb").iterdir()]
    assert local == [], f"every DB and every downloaded checkpoint is deleted: {local}"


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_incremental_oracle_with_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], unaligned: bool
) -> None:
    scenario_incremental_scheduled_failures(make_env, tmp_path, capsys, unaligned)


def scenario_incremental_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of a seeded random worker process once three incremental checkpoints
    completed: the restarted attempt downloads the native files and restores from them."""
    seed = oracle_seed()
    env = make_env(parallelism=2, config=_config(tmp_path, restarts=3))
    _incremental(env, tmp_path)
    evidence = tmp_path / "evidence"
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, evidence_dir=evidence)

    client = env.execute_async("oracle, incremental rocksdb, kill -9")
    watcher = RestWatcher(client)
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.1, latest_s=1.0, timeout_s=TIMEOUT_S, checkpoints=3
    )
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, evidence)
    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == 1, (seed, oracle)
    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()
    assert [p.name for p in (tmp_path / "rocksdb").iterdir()] == [], "killed DBs are swept"


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_incremental_oracle_with_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_incremental_worker_kill(make_env, tmp_path, capsys)


def _contents(directory: Path) -> dict[str, str]:
    """Every file under ``directory``: relative path -> sha256 of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _retained_incremental_checkpoint(
    make_env: EnvFactory, tmp_path: Path, unaligned: bool = False
) -> Path:
    """A first job on incremental RocksDB, cancelled after a few checkpoints with retention:
    its retained checkpoint directory (its shared files are in the job's ``shared/``).
    ``unaligned``: unaligned checkpoints, with a spinning sink so that they hold in-flight
    data."""
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION",
              "execution.checkpointing.unaligned.enabled": str(unaligned).lower()}  # fmt: skip
    env = make_env(parallelism=2, config=_config(tmp_path, **retain))
    _incremental(env, tmp_path)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED),
                   sink_spin_s=SPIN_S if unaligned else 0.0)  # fmt: skip
    client = env.execute_async("leaves an incremental checkpoint")
    root, job = tmp_path / "checkpoints", client.get_job_id()
    storage = CheckpointStorage(str(root), job)
    _wait_for(lambda: len(storage.completed_checkpoint_ids()) >= 1 and max(
        storage.completed_checkpoint_ids()) >= 4, "four checkpoints")  # fmt: skip
    client.cancel()
    _wait_for(lambda: client.get_job_status() is JobStatus.CANCELED, "the cancellation")
    time.sleep(0.3)  # the JobMaster keeps the retained checkpoint as it shuts down
    latest = max(storage.completed_checkpoint_ids())
    return Path(storage.checkpoint_pointer(latest))


def _snapshot_id(snapshot: Path) -> int:
    return int(snapshot.name.rsplit("-", 1)[1])


def _resume(
    make_env: EnvFactory, tmp_path: Path, snapshot: Path, mode: str, parallelism: int = 2
) -> tuple[Any, Any, list[int]]:
    env = make_env(parallelism=parallelism, config=_config(tmp_path, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": mode,
        "execution.checkpointing.num-retained": "1",
    }))  # fmt: skip
    _incremental(env, tmp_path)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async(f"resumed, {mode}")
    watcher = RestWatcher(client)
    return env, client, watcher


def _assert_restored(result: Any, console: str, rest_ids: list[int], snapshot: Path) -> None:
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    ids = assert_restores(console, rest_ids, restores=1)
    evidence(ids == [_snapshot_id(snapshot)], f"restored {ids}, not {snapshot}")
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


def scenario_no_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path)
    old_job_dir = snapshot.parent
    before = _contents(old_job_dir)
    assert any(name.startswith("shared/") and name.endswith(".sst") for name in before), before
    capsys.readouterr()

    _, client, watcher = _resume(make_env, tmp_path, snapshot, "NO_CLAIM")
    new_job_dir = tmp_path / "checkpoints" / client.get_job_id()
    own: set[str] = set()

    def newer_checkpoints() -> bool:
        if (new_job_dir / "shared").is_dir():
            own.update(p.name for p in (new_job_dir / "shared").iterdir())
        ids = CheckpointStorage(str(tmp_path / "checkpoints"), client.get_job_id())
        done = len(ids.completed_checkpoint_ids()) >= 1 and own
        return bool(done) or client.get_job_status() is JobStatus.FINISHED

    _wait_for(newer_checkpoints, "a newer checkpoint")
    assert _contents(old_job_dir) == before, "NO_CLAIM: the snapshot changed while the job ran"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)

    console = capsys.readouterr().err
    completed = [int(n) for n in COMPLETED.findall(console)]
    assert len(completed) >= 3, f"several newer checkpoints must complete: {completed}"
    assert _contents(old_job_dir) == before, "NO_CLAIM: every restored file stays byte-identical"
    restored = {n.split("/", 1)[1] for n in before if n.startswith("shared/")}
    assert own - restored, "the resumed job uploaded SST files of its own"
    assert own & restored, "restored SST files were duplicated into its shared/ (FLIP-193)"
    _assert_restored(result, console, watcher.stop(), snapshot)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_no_claim_never_touches_restored_incremental_files(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_no_claim(make_env, tmp_path, capsys)


def scenario_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path)
    old_shared = snapshot.parent / "shared"
    claimed = sorted(p.name for p in old_shared.iterdir())
    assert claimed, "the retained checkpoint references shared files"
    capsys.readouterr()

    _, client, watcher = _resume(make_env, tmp_path, snapshot, "CLAIM")
    _wait_for(lambda: (not snapshot.exists() and not any(old_shared.iterdir()))
              or client.get_job_status() is JobStatus.FINISHED,
              "the claimed snapshot's deletion")  # fmt: skip
    assert not snapshot.exists()
    assert list(old_shared.iterdir()) == [], "CLAIM: the claimed shared files are deleted"
    assert client.get_job_status() is JobStatus.RUNNING, "deleted by subsumption, not at the end"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    _assert_restored(result, capsys.readouterr().err, watcher.stop(), snapshot)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_claim_deletes_claimed_shared_files_once_subsumed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_claim(make_env, tmp_path, capsys)


def scenario_rescale(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unaligned: bool = False,
    parallelism: int = 3,
) -> None:
    """A retained incremental checkpoint taken at parallelism 2 resumes at ``parallelism``:
    each new subtask's key-group range is assembled from the old DBs that hold part of it
    (out-of-range keys dropped), with channel state re-emitted when ``unaligned``."""
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path, unaligned)
    capsys.readouterr()
    _, client, watcher = _resume(make_env, tmp_path, snapshot, "NO_CLAIM", parallelism)
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    console = capsys.readouterr().err
    _assert_restored(result, console, watcher.stop(), snapshot)
    [(_, mode, in_flight)] = restored_checkpoints(console)
    assert mode == ("unaligned" if unaligned else "aligned"), console
    assert (in_flight > 0) == unaligned, f"restored in-flight bytes: {in_flight}"


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize(
    ("unaligned", "parallelism"), [(False, 3), (True, 1)], ids=["aligned-up", "unaligned-down"]
)
def test_incremental_rocksdb_rescale(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unaligned: bool,
    parallelism: int,
) -> None:
    scenario_rescale(make_env, tmp_path, capsys, unaligned, parallelism)
