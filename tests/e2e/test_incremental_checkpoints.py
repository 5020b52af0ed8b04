"""Incremental checkpoints end to end, on both backends (issue 15, FLIP-193).

Every test runs on ``EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)``
(SST files in ``<job>/shared/``) and on ``HashMapStateBackend`` with
``execution.checkpointing.incremental`` (key-group segments, :mod:`undertow.state.
heap_incremental`): the ``backend`` parameter, sampled like the deployment target
(``@pytest.mark.sampled``: ``make test`` runs one backend of each test, and one barrier mode
of the scheduled failures, ``make soak`` all).
Only the heap's shared files can be dropped by the ``shared-file`` restore control (an SST
file cannot be left out of a RocksDB checkpoint), so only its parameters declare that catch.

* The exactly-once oracle, aligned and unaligned, with failures scheduled in ``map``: both
  restores are evidenced (console line, REST, resumed source, restored state); shared files
  appear while the job runs and none is left once it finished. The heap's 4,096 key groups
  and 4,000 keys advance together through the source, so some checkpoint writes less than
  its state (it references earlier segments); RocksDB's local DB directories are deleted.
* Two concurrent checkpoints (half the records at half the rate); a seeded kill -9 of a
  worker process (``local``).
* NO_CLAIM: a second job restores the first job's retained incremental checkpoint and takes
  newer checkpoints; every file of the first job's directory is byte-identical afterwards;
  the second job's ``shared/`` holds duplicates of the restored files (hard links, FLIP-193)
  and files of its own.
* CLAIM: the claimed checkpoint's directory and its shared files are deleted once subsumed.
* Rescale: the retained checkpoint (aligned, and unaligned with in-flight data) resumes at
  parallelism 3 and 1 in NO_CLAIM, the oracle at 0 with the restore evidenced.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from undertow.datastream import EmbeddedRocksDBStateBackend, HashMapStateBackend, JobStatus
from undertow.runtime.master.checkpoint_stats import CheckpointStatus
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import (
    FailingMap,
    OracleResult,
    OracleSource,
    build_pipeline,
    oracle_seed,
)

from .conftest import EnvFactory
from .kills import COMPLETED, RESTARTING, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import RestWatcher, assert_restores, evidence, restored_checkpoints

#: The RocksDB runs' keys and records (test_claim_reuse and test_duplicate_no_claim use them),
#: and the rate of each source reader. The jobs are CPU-bound (verifying every record at several
#: stages, a few of them up to 64 KiB): the scheduled failures with three concurrent checkpoints
#: took 28-47 CPU-seconds at 2,000 records a key, more than 240 s of wall time under a load of
#: 35-45 on two cores. Half the records at half the rate keep the wall-clock schedule of the
#: checkpoints and failures (at least 4 s of input) with half the records' work.
KEYS, RECORDS_PER_KEY = 20, 1000
THROTTLED = 2_500.0
SPIN_S = 0.0005  # the verifying sink's busy-wait per record: backpressure for in-flight data
TIMEOUT_S = 240.0  # a bound on a hang, not a speed target


def _reused_some(client: Any) -> bool:
    """Whether a completed checkpoint wrote less than its state (referenced old files)."""
    history = client._master.checkpoint_stats.snapshot().history
    return any(
        a.checkpointed_size < 0.75 * a.state_size
        for e in history
        if e.status is CheckpointStatus.COMPLETED
        for a in e.acks()
    )


@dataclass(frozen=True)
class Backend:
    """One incremental state backend as these tests run it."""

    name: str
    keys: int
    records_per_key: int
    #: The ending of its files in ``shared/``.
    suffix: str
    #: Its configuration keys besides the common ones.
    config: dict[str, str] = field(default_factory=dict)
    #: A checkpoint must have referenced an earlier one's files (:func:`_reused_some`).
    checks_reuse: bool = False
    #: Its DBs (and downloads) live in ``<tmp>/rocksdb``, which must end empty.
    local_dbs: bool = False
    #: Records per second per source reader.
    rate: float = THROTTLED

    def __str__(self) -> str:
        return self.name

    def source(self) -> OracleSource:
        return OracleSource(self.keys, self.records_per_key, records_per_second=self.rate)

    def halved(self) -> Backend:
        """Half the records at half the rate: the source runs as long, on half the CPU."""
        return replace(self, records_per_key=self.records_per_key // 2, rate=self.rate / 2)

    def install(self, env: Any, tmp_path: Path) -> None:
        if self.local_dbs:
            backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
            backend.set_db_storage_paths(str(tmp_path / "rocksdb"))
            env.set_state_backend(backend)
        else:
            env.set_state_backend(HashMapStateBackend())
        assert env.get_configuration().to_dict()["execution.checkpointing.incremental"] == "true"


ROCKSDB = Backend("rocksdb", KEYS, RECORDS_PER_KEY, ".sst", local_dbs=True)
HEAP = Backend(
    "heap", 4000, 8, ".kgs",
    config={
        "execution.checkpointing.incremental": "true",
        "pipeline.max-parallelism": "4096",
        # the probe reads the whole history once the job ended: the default 10 would hold
        # only the checkpoints taken while the last tasks finished, which reuse nothing
        "web.checkpoints.history": "1000",
    },
    checks_reuse=True,
)  # fmt: skip


def backends(heap_catches: tuple[str, ...] = ()) -> list[Any]:
    """The ``backend`` parameters, each marked ``restores`` (the heap's with ``catches``)."""
    return [
        pytest.param(ROCKSDB, id="rocksdb", marks=pytest.mark.restores),
        pytest.param(HEAP, id="heap", marks=pytest.mark.restores(catches=list(heap_catches))),
    ]


def _config(
    tmp_path: Path, restarts: int = 0, backend: Backend = ROCKSDB, **extra: str
) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "250 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(restarts),
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        **backend.config,
        **extra,
    }


def _incremental(env: Any, tmp_path: Path) -> None:
    """Incremental RocksDB (test_claim_reuse and test_duplicate_no_claim use it)."""
    ROCKSDB.install(env, tmp_path)


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


def _assert_local_dbs_deleted(backend: Backend, tmp_path: Path) -> None:
    if backend.local_dbs:
        local = [p.name for p in (tmp_path / "rocksdb").iterdir()]
        assert local == [], f"every DB and every downloaded checkpoint is deleted: {local}"


def scenario_scheduled_failures(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: Backend,
    unaligned: bool = False,
    concurrent: int = 1,
) -> None:
    """``map`` fails after checkpoints 2 and 5; keyed state restores from incremental
    checkpoints. ``concurrent`` checkpoints may be pending at once."""
    failing = FailingMap(fail_after_checkpoints=[2, 5])
    config = _config(tmp_path, failing.scheduled_failures, backend)
    config["execution.checkpointing.unaligned.enabled"] = str(unaligned).lower()
    config["execution.checkpointing.max-concurrent-checkpoints"] = str(concurrent)
    env = make_env(parallelism=2, config=config)
    backend.install(env, tmp_path)
    seen, job_id, reused = run_oracle_with_scheduled_failures(
        env, tmp_path, capsys, backend.source(), failing, f"oracle, incremental {backend}",
        probe=_reused_some if backend.checks_reuse else None,
    )  # fmt: skip
    uploaded = {name for name in seen if name.endswith(backend.suffix)}
    assert uploaded, f"no {backend.suffix} file was written into shared/: {sorted(seen)}"
    if backend.checks_reuse:
        assert reused, "no checkpoint referenced an earlier checkpoint's files"
    assert_shared_files_deleted(tmp_path, job_id)
    _assert_local_dbs_deleted(backend, tmp_path)


@pytest.mark.sampled("backend", "unaligned")
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("backend", backends(heap_catches=("shared-file", "keyed-state")))
def test_incremental_oracle_with_scheduled_failures(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: Backend,
    unaligned: bool,
) -> None:
    scenario_scheduled_failures(make_env, tmp_path, capsys, backend, unaligned)


@pytest.mark.sampled("backend")
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("backend", backends())
def test_incremental_oracle_with_concurrent_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    """Two checkpoints may be pending at once, on half the records at half the rate: the job
    is CPU-starved under load (RocksDB at load ~18: 47 s on-CPU against 443 s in the run
    queue), and every checkpoint the clock triggers while it crawls costs CPU again."""
    scenario_scheduled_failures(make_env, tmp_path, capsys, backend.halved(), concurrent=2)


def scenario_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    """kill -9 of a seeded random worker process once three incremental checkpoints
    completed: the restarted attempt restores from the shared files."""
    seed = oracle_seed()
    env = make_env(parallelism=2, config=_config(tmp_path, 3, backend))
    backend.install(env, tmp_path)
    evidence = tmp_path / "evidence"
    build_pipeline(env, backend.source(), evidence_dir=evidence)

    client = env.execute_async(f"oracle, incremental {backend}, kill -9")
    watcher = RestWatcher(client)
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.1, latest_s=1.0, timeout_s=TIMEOUT_S, checkpoints=3
    )
    oracle = OracleResult.from_job_result(result, backend.keys, backend.records_per_key, evidence)
    assert oracle.is_exactly_once, (seed, str(oracle))
    assert oracle.restarts == 1, (seed, oracle)
    assert_restores(console, watcher.stop(), restores=1)
    oracle.assert_restored()
    if backend.local_dbs:
        assert [p.name for p in (tmp_path / "rocksdb").iterdir()] == [], "killed DBs are swept"


@pytest.mark.sampled("backend")
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("backend", backends())
def test_incremental_oracle_with_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    scenario_worker_kill(make_env, tmp_path, capsys, backend)


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
    make_env: EnvFactory, tmp_path: Path, unaligned: bool = False, backend: Backend = ROCKSDB
) -> Path:
    """A first job at parallelism 2, cancelled with retention after four incremental
    checkpoints (on the heap: once one of them referenced an earlier one's segments): its
    retained checkpoint directory (its shared files are in the job's ``shared/``).
    ``unaligned``: unaligned checkpoints, with a spinning sink so that they hold in-flight
    data."""
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION",
              "execution.checkpointing.unaligned.enabled": str(unaligned).lower()}  # fmt: skip
    env = make_env(parallelism=2, config=_config(tmp_path, 0, backend, **retain))
    backend.install(env, tmp_path)
    # half the resumed job's rate: the first job cannot finish its input (and leave a
    # checkpoint of finished tasks, which restores nothing) before its checkpoints (CI saw it)
    slow = OracleSource(backend.keys, backend.records_per_key, records_per_second=THROTTLED / 2)
    build_pipeline(env, slow, sink_spin_s=SPIN_S if unaligned else 0.0)
    client = env.execute_async(f"leaves an incremental {backend} checkpoint")
    root, job = tmp_path / "checkpoints", client.get_job_id()
    storage = CheckpointStorage(str(root), job)

    def ready() -> bool:
        ids = storage.completed_checkpoint_ids()
        if client.get_job_status().result().is_globally_terminal_state():
            raise AssertionError("the first job ended before its incremental checkpoints")
        return bool(ids) and max(ids) >= 4 and (not backend.checks_reuse or _reused_some(client))

    _wait_for(ready, "four incremental checkpoints")
    client.cancel()
    _wait_for(lambda: client.get_job_status().result() is JobStatus.CANCELED, "the cancellation")
    return Path(storage.checkpoint_pointer(max(storage.completed_checkpoint_ids())))


def _snapshot_id(snapshot: Path) -> int:
    return int(snapshot.name.rsplit("-", 1)[1])


def _resume(
    make_env: EnvFactory, tmp_path: Path, snapshot: Path, mode: str, parallelism: int = 2,
    backend: Backend = ROCKSDB,
) -> tuple[Any, Any, Any]:  # fmt: skip
    """Start the oracle job on ``backend`` from ``snapshot`` in claim ``mode``: its
    environment, its client and a REST watcher."""
    env = make_env(parallelism=parallelism, config=_config(tmp_path, 0, backend, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": mode,
        "execution.checkpointing.num-retained": "1",
    }))  # fmt: skip
    backend.install(env, tmp_path)
    build_pipeline(env, backend.source())
    client = env.execute_async(f"resumed at parallelism {parallelism}, {mode}")
    watcher = RestWatcher(client)
    return env, client, watcher


def _assert_restored(
    result: Any, console: str, rest_ids: list[int], snapshot: Path, backend: Backend = ROCKSDB
) -> None:
    oracle = OracleResult.from_job_result(result, backend.keys, backend.records_per_key)
    ids = assert_restores(console, rest_ids, restores=1)
    evidence(ids == [_snapshot_id(snapshot)], f"restored {ids}, not {snapshot}")
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


def scenario_no_claim(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: Backend,
    parallelism: int = 2,
) -> None:
    """Resume the retained checkpoint (taken at parallelism 2) at ``parallelism`` in
    NO_CLAIM: nothing of the old job's directory changes, the resumed job writes shared files
    of its own, and at the same parallelism it duplicates the restored ones (FLIP-193)."""
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path, backend=backend)
    old_job_dir = snapshot.parent
    before = _contents(old_job_dir)
    assert any(name.startswith("shared/") and name.endswith(backend.suffix) for name in before)
    restored = {n.split("/", 1)[1] for n in before if n.startswith("shared/")}
    capsys.readouterr()

    _, client, watcher = _resume(make_env, tmp_path, snapshot, "NO_CLAIM", parallelism, backend)
    new_shared = tmp_path / "checkpoints" / client.get_job_id() / "shared"
    own: set[str] = set()

    def newer_checkpoints() -> bool:
        if new_shared.is_dir():
            own.update(p.name for p in new_shared.iterdir())
        return bool(own - restored) or client.get_job_status().result() is JobStatus.FINISHED

    _wait_for(newer_checkpoints, "a newer checkpoint")
    assert _contents(old_job_dir) == before, "NO_CLAIM: the snapshot changed while the job ran"
    result = client.get_job_execution_result(timeout=TIMEOUT_S)

    console = capsys.readouterr().err
    completed = [int(n) for n in COMPLETED.findall(console)]
    assert len(completed) >= 2, f"several newer checkpoints must complete: {completed}"
    assert _contents(old_job_dir) == before, "NO_CLAIM: every restored file stays byte-identical"
    assert own - restored, f"the resumed job wrote no shared file of its own: {sorted(own)}"
    if parallelism == 2:
        assert own & restored, "restored shared files were duplicated into its shared/"
    _assert_restored(result, console, watcher.stop(), snapshot, backend)


#: NO_CLAIM at the same parallelism on RocksDB, rescaled to 3 on the heap (the runs the
#: backends' separate modules had before they were one).
NO_CLAIM_PARALLELISM = {"rocksdb": 2, "heap": 3}


@pytest.mark.sampled("backend")
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("backend", backends())
def test_no_claim_never_touches_restored_incremental_files(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    parallelism = NO_CLAIM_PARALLELISM[backend.name]
    scenario_no_claim(make_env, tmp_path, capsys, backend, parallelism)


def scenario_claim(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    """Resume the retained checkpoint in CLAIM at the same parallelism: its directory and its
    shared files are deleted once a newer checkpoint subsumes it, while the job still runs."""
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path, backend=backend)
    old_shared = snapshot.parent / "shared"
    claimed = sorted(p.name for p in old_shared.iterdir())
    assert any(n.endswith(backend.suffix) for n in claimed), "the checkpoint has shared files"
    capsys.readouterr()

    _, client, watcher = _resume(make_env, tmp_path, snapshot, "CLAIM", backend=backend)
    _wait_for(lambda: (not snapshot.exists() and not any(old_shared.iterdir()))
              or client.get_job_status().result() is JobStatus.FINISHED,
              "the claimed snapshot's deletion")  # fmt: skip
    assert not snapshot.exists()
    assert list(old_shared.iterdir()) == [], "CLAIM: the claimed shared files are deleted"
    assert client.get_job_status().result() is JobStatus.RUNNING, (
        "deleted by subsumption, not at the end"
    )
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    _assert_restored(result, capsys.readouterr().err, watcher.stop(), snapshot, backend)


@pytest.mark.sampled("backend")
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("backend", backends())
def test_claim_deletes_claimed_shared_files_once_subsumed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: Backend
) -> None:
    scenario_claim(make_env, tmp_path, capsys, backend)


def scenario_rescale(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: Backend,
    unaligned: bool = False,
    parallelism: int = 3,
) -> None:
    """A retained incremental checkpoint taken at parallelism 2 resumes at ``parallelism`` in
    NO_CLAIM: each new subtask's key groups are assembled from the old subtasks' files that
    hold part of them, with channel state re-emitted when ``unaligned``; the old job's files
    stay byte-identical."""
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path, unaligned, backend)
    before = _contents(snapshot.parent)
    capsys.readouterr()
    _, client, watcher = _resume(make_env, tmp_path, snapshot, "NO_CLAIM", parallelism, backend)
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    console = capsys.readouterr().err
    _assert_restored(result, console, watcher.stop(), snapshot, backend)
    [(_, mode, in_flight)] = restored_checkpoints(console)
    assert mode == ("unaligned" if unaligned else "aligned"), console
    assert (in_flight > 0) == unaligned, f"restored in-flight bytes: {in_flight}"
    assert _contents(snapshot.parent) == before, "NO_CLAIM: every restored file stays the same"


@pytest.mark.sampled("backend", "unaligned", "parallelism")  # make test: 1 of 4; soak: all
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize(
    ("unaligned", "parallelism"), [(False, 3), (True, 1)], ids=["aligned-up", "unaligned-down"]
)
@pytest.mark.parametrize("backend", backends())
def test_incremental_rescale(
    make_env: EnvFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: Backend,
    unaligned: bool,
    parallelism: int,
) -> None:
    scenario_rescale(make_env, tmp_path, capsys, backend, unaligned, parallelism)
