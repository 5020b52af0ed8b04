"""Savepoint formats (CANONICAL / NATIVE) and the FLIP-193 restore matrix (issue 15).

A first job (heap, or RocksDB with incremental checkpoints, so it has a ``shared/``) stops
with a savepoint in one format. The savepoint is copied elsewhere and the first job's whole
checkpoint directory is deleted, so a resume proves the savepoint self-contained. Then, per
claim mode x target backend (the same, or the other one), a copy of it resumes a second job:

* every resume that may run does so exactly once over both jobs (the oracle), with the
  restore evidenced (console line, REST ``latest.restored``, resumed source, restored state);
* NO_CLAIM resumes at the same parallelism (a NATIVE RocksDB savepoint is opened in place);
  CLAIM resumes at parallelism 3 (a NATIVE one goes through key-group ranges);
* NO_CLAIM: every file of the copy is byte-identical afterwards (listing and SHA-256);
* CLAIM: the copy is deleted once a checkpoint of the new job subsumed it;
* NATIVE into the other backend is refused, naming the savepoint, its format and both backends.

A NATIVE RocksDB savepoint holds SST files in its own directory; a NATIVE heap one has the
canonical bytes (no SST file), as in Flink.

Intermediate savepoints commit no side effects (Flink 1.15+): a two-phase-commit sink commits
on the stop's savepoint, not on the savepoints taken while the job runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from undertow.cli.main import main
from undertow.common import SavepointFormatType, WatermarkStrategy
from undertow.datastream import EmbeddedRocksDBStateBackend, HashMapStateBackend, JobStatus
from undertow.datastream.connectors import (
    Committer,
    DataGeneratorSource,
    Sink,
    SinkWriter,
    SinkWriterContext,
)
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores

#: about 3 s of input at the throttled rate (2 source readers), so a stop lands mid-way
KEYS, RECORDS_PER_KEY = 10, 3000
THROTTLED = 5_000.0
TIMEOUT_S = 90.0
BACKENDS = ("hashmap", "rocksdb")


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Checkpoints every 100 ms with a pause of 1 s between them: without the pause a
    resumed RocksDB job at load 11-14 ran 40-70 checkpoints back to back and took 72-156 s
    for 3 s of input (2026-12-02 13:58-14:02 UTC; 41 s with it), past :data:`TIMEOUT_S`."""
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.min-pause": "1 s",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.num-retained": "1",
        "rest.port": "0",
        **extra,
    }


def _backend(kind: str, tmp_path: Path) -> Any:
    if kind == "hashmap":
        return HashMapStateBackend()
    backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    backend.set_db_storage_paths(str(tmp_path / "rocksdb"))
    return backend


def contents(directory: Path) -> dict[str, str]:
    """Every file under ``directory``: relative path -> sha256 of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def take_savepoint(
    make_env: EnvFactory, tmp_path: Path, backend: str, format_type: SavepointFormatType
) -> Path:
    """A first job on ``backend`` stops with a ``format_type`` savepoint; returns the
    savepoint directory, after the job's checkpoint directory was deleted (nothing the
    savepoint needs may live there)."""
    env = make_env(parallelism=2, config=_config(tmp_path))
    env.set_state_backend(_backend(backend, tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async(f"on {backend}")
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), client.get_job_id())
    deadline = time.monotonic() + TIMEOUT_S
    while max(storage.completed_checkpoint_ids(), default=0) < 2:  # state, (incremental) files
        assert time.monotonic() < deadline, "no second checkpoint"
        time.sleep(0.02)
    pointer = client.stop_with_savepoint(str(tmp_path / "sp"), None, format_type)
    savepoint = Path(pointer.result(timeout=TIMEOUT_S))
    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    shutil.rmtree(tmp_path / "checkpoints")
    return savepoint


def _copy(savepoint: Path, where: Path) -> Path:
    """A copy of ``savepoint`` under ``where`` (same directory name: it is relocatable)."""
    target = where / savepoint.name
    shutil.copytree(savepoint, target)
    return target


def _start_from(
    make_env: EnvFactory, tmp_path: Path, savepoint: Path, backend: str, mode: str,
    parallelism: int,
) -> Any:  # fmt: skip
    """A job on ``backend`` at ``parallelism``, started from ``savepoint`` in claim ``mode``."""
    env = make_env(parallelism=parallelism, config=_config(tmp_path, **{
        "execution.state-recovery.path": str(savepoint),
        "execution.state-recovery.claim-mode": mode,
    }))  # fmt: skip
    env.set_state_backend(_backend(backend, tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    return env.execute_async(f"from a savepoint on {backend}, {mode}")


def resume(
    make_env: EnvFactory, tmp_path: Path, savepoint: Path, backend: str, mode: str,
    parallelism: int, capsys: pytest.CaptureFixture[str],
) -> OracleResult:  # fmt: skip
    """A second job on ``backend`` resumes from ``savepoint`` in claim ``mode``; the oracle
    over both jobs, with the restore evidenced."""
    capsys.readouterr()
    client = _start_from(make_env, tmp_path, savepoint, backend, mode, parallelism)
    watcher = RestWatcher(client)
    try:
        result = client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        rest_ids = watcher.stop()
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected == KEYS * RECORDS_PER_KEY
    ids = assert_restores(capsys.readouterr().err, rest_ids, restores=1)
    assert ids == [int(savepoint.name.rsplit("-", 1)[1])], (ids, savepoint)
    oracle.assert_restored()
    return oracle


def refused(make_env: EnvFactory, tmp_path: Path, savepoint: Path, backend: str, mode: str) -> str:
    """Start a job on ``backend`` from ``savepoint``; the failure's text (it must fail)."""
    client = _start_from(make_env, tmp_path, savepoint, backend, mode, 2)
    with pytest.raises(Exception) as caught:
        client.get_job_execution_result(timeout=TIMEOUT_S)
    return str(caught.value)


def check_format(savepoint: Path, backend: str, format_type: SavepointFormatType) -> None:
    """What the savepoint directory holds for its format and backend."""
    files = contents(savepoint)
    ssts = [name for name in files if name.endswith(".sst")]
    if format_type is SavepointFormatType.NATIVE and backend == "rocksdb":
        assert ssts, f"a NATIVE RocksDB savepoint holds its SST files: {sorted(files)}"
    else:
        assert not ssts, f"a canonical (or heap) savepoint holds no SST file: {sorted(files)}"
    assert not any(name.startswith("shared/") for name in files), sorted(files)


@pytest.mark.restores
@pytest.mark.sampled("format_type", "first")  # make test: one case per run; make soak: all
@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("format_type", list(SavepointFormatType)[:2], ids=["canonical", "native"])
@pytest.mark.parametrize("first", BACKENDS)
def test_restore_matrix(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    first: str, format_type: SavepointFormatType,
) -> None:  # fmt: skip
    """CLAIM/NO_CLAIM x the same/the other backend, from one savepoint of ``first`` in
    ``format_type`` (see the module docstring)."""
    savepoint = take_savepoint(make_env, tmp_path, first, format_type)
    check_format(savepoint, first, format_type)
    native = format_type is SavepointFormatType.NATIVE
    for second in BACKENDS:
        for mode, parallelism in (("NO_CLAIM", 2), ("CLAIM", 3)):
            copy = _copy(savepoint, tmp_path / f"copy-{second}-{mode}")
            case = f"{first} {format_type.name} -> {second}, {mode}"
            if native and second != first:
                before = contents(copy)
                message = refused(make_env, tmp_path, copy, second, mode)
                assert str(copy) in message and "NATIVE" in message, (case, message)
                assert repr(first) in message and repr(second) in message, (case, message)
                assert contents(copy) == before, f"{case}: a refused restore touches nothing"
                continue
            before = contents(copy)
            resume(make_env, tmp_path, copy, second, mode, parallelism, capsys)
            if mode == "NO_CLAIM":
                assert contents(copy) == before, f"{case}: the savepoint changed"
            else:
                assert not copy.exists(), f"{case}: the claimed savepoint is deleted once subsumed"


def scenario_native_resume(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], parallelism: int = 2
) -> None:
    """A NATIVE RocksDB savepoint resumes a job on RocksDB at ``parallelism`` (2: the DBs
    are opened in place; 3: through key-group ranges), exactly once with the restore
    evidenced; the savepoint is untouched (NO_CLAIM)."""
    savepoint = take_savepoint(make_env, tmp_path, "rocksdb", SavepointFormatType.NATIVE)
    check_format(savepoint, "rocksdb", SavepointFormatType.NATIVE)
    before = contents(savepoint)
    resume(make_env, tmp_path, savepoint, "rocksdb", "NO_CLAIM", parallelism, capsys)
    assert contents(savepoint) == before


def scenario_native_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_native_resume(make_env, tmp_path, capsys, parallelism=3)


@pytest.mark.restores
@pytest.mark.sampled("parallelism")  # make test: one of the three per run; make soak: all
@pytest.mark.parametrize(
    ("target", "parallelism"),
    [("local", 2), ("local", 3), ("spark", 3)],
    ids=["local-in-place", "local-rescaled", "spark-rescaled"],
)
def test_native_savepoint_in_worker_processes(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], parallelism: int
) -> None:
    """The NATIVE RocksDB round trip with workers as processes (local, and Spark's executors)."""
    scenario_native_resume(make_env, tmp_path, capsys, parallelism)


class _CountingWriter(SinkWriter):
    #: Set once a writer took a record (the test's one process: ``local-threads``).
    written = threading.Event()

    def __init__(self) -> None:
        self.records: list[Any] = []

    def write(self, element: Any, timestamp: int | None) -> None:
        self.records.append(element)
        _CountingWriter.written.set()

    def prepare_commit(self) -> list[Any]:
        prepared, self.records = self.records, []
        return [prepared] if prepared else []


class _FileCommitter(Committer):
    def __init__(self, out: str) -> None:
        self.out = out

    def commit(self, committables: list[Any]) -> None:
        for records in committables:
            name = f"commit-{time.time_ns()}-{os.getpid()}-{len(records)}.json"
            Path(self.out, name).write_text(json.dumps(records))


class TwoPhaseSink(Sink):
    """A two-phase-commit sink: what a writer received since the last barrier becomes one
    committable, written as a file when the committer commits it."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = str(out)

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _CountingWriter()

    def create_committer(self) -> Committer | None:
        return _FileCommitter(self.out)


@pytest.mark.parametrize("target", ["local-threads"])
def test_an_intermediate_savepoint_commits_no_side_effects(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """Without periodic checkpoints, only a completed checkpoint the tasks are notified of
    commits: two intermediate savepoints (canonical, native) commit nothing, while the
    stop-with-savepoint after them commits every record prepared up to it (the control: the
    sink does commit on a notified savepoint)."""
    out = tmp_path / "committed"
    env = make_env(parallelism=2, config={"rest.port": "0"})
    env.set_state_backend(_backend("rocksdb", tmp_path))
    source = DataGeneratorSource(lambda i: i, count=10**9, records_per_second=2000)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
    stream.key_by(lambda i: i % 4).map(lambda i: i).sink_to(TwoPhaseSink(out))
    _CountingWriter.written.clear()
    client = env.execute_async("two-phase commit sink")
    deadline = time.monotonic() + TIMEOUT_S
    while not _CountingWriter.written.is_set():  # a savepoint then has records to (not) commit
        assert time.monotonic() < deadline, "no record reached the sink"
        assert not client.get_job_status().result().is_globally_terminal_state()
        time.sleep(0.01)
    for format_type in ("CANONICAL", "NATIVE"):
        client.trigger_savepoint(str(tmp_path / "sp"), format_type).result(timeout=TIMEOUT_S)
    time.sleep(0.5)  # a commit on the savepoints' completion would be written by now
    assert sorted(p.name for p in out.iterdir()) == [], "an intermediate savepoint committed"

    client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)
    client.get_job_execution_result(timeout=TIMEOUT_S)
    committed = [v for p in out.iterdir() for v in json.loads(p.read_text())]
    assert committed and len(set(committed)) == len(committed), "a record committed twice"
    for reader in range(2):  # reader r generates r, r + 2, ...; a stop cuts each anywhere
        mine = sorted(v for v in committed if v % 2 == reader)
        assert mine == list(range(reader, 2 * len(mine), 2)), (
            f"the stop's savepoint commits each record reader {reader} prepared up to it"
        )


@pytest.mark.parametrize("target", ["local-threads"])
def test_undertow_savepoint_and_stop_take_flinks_type_option(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``undertow savepoint URL DIR --type native`` then ``undertow stop URL -p DIR -t
    canonical`` on a RocksDB job: the first savepoint holds SST files (REST shows its
    ``savepointFormat``), the second none; another value is refused by the parser."""
    env = make_env(parallelism=2, config=_config(tmp_path))
    env.set_state_backend(_backend("rocksdb", tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY * 10, records_per_second=THROTTLED))
    client = env.execute_async("cli")
    try:
        storage = CheckpointStorage(str(tmp_path / "checkpoints"), client.get_job_id())
        deadline = time.monotonic() + TIMEOUT_S
        while max(storage.completed_checkpoint_ids(), default=0) < 3:
            assert time.monotonic() < deadline, "no third checkpoint"
            time.sleep(0.02)
        url = client.get_rest_address()
        assert url is not None
        with pytest.raises(SystemExit):
            main(["savepoint", url, str(tmp_path / "sp"), "--type", "binary"])
        assert "invalid choice: 'binary'" in capsys.readouterr().err
        assert main(["savepoint", url, str(tmp_path / "native"), "--type", "NATIVE"]) == 0
        with urllib.request.urlopen(f"{url}/jobs/{client.get_job_id()}/checkpoints") as answer:
            latest = json.loads(answer.read())["latest"]["savepoint"]
        assert (latest["is_savepoint"], latest["savepointFormat"]) == (True, "NATIVE"), latest
        assert main(["stop", url, "-p", str(tmp_path / "canonical"), "-t", "canonical"]) == 0
        client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        client.cancel()
    [native] = (tmp_path / "native").iterdir()
    [canonical] = (tmp_path / "canonical").iterdir()
    check_format(native, "rocksdb", SavepointFormatType.NATIVE)
    check_format(canonical, "rocksdb", SavepointFormatType.CANONICAL)
