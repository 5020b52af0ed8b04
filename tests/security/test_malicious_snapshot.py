"""A malicious pickle in any snapshot file never runs: its SHA-256 gives it away.

The attacker can write the checkpoint and savepoint directories but does not hold the
metadata key (it lives outside them). Into a retained checkpoint or a savepoint of a real job
they put, in place of one file, a pickle whose ``__reduce__`` would create a marker file,
padded to **exactly the size of the file it replaces**, so the size check passes and only the
digest can catch it. Every kind of snapshot file is tried:

* the subtask state file (one per subtask: keyed state, timers, operator state and a source
  reader's state all live in it), of a keyed subtask with timers and of a source subtask;
* the source enumerator's state;
* a heap incremental segment (``shared/``);
* RocksDB's shared SST files and private files (``MANIFEST``, ``OPTIONS``) of an incremental
  checkpoint, and the files of a NATIVE savepoint;
* a channel-state file of an unaligned checkpoint (verified by its region checksum);
* a CANONICAL savepoint's state file.

Each is found through a real restore: a job restoring the tampered snapshot fails with an error
naming the checkpoint, the file and the expected and actual SHA-256, and the marker never
appears. Last, the old attack of issue 12: ``_metadata`` re-signed under a key the attacker
also drops into the checkpoint root as ``_undertow_key``.

Jobs run on the ``local-threads`` target (workers are threads of this process, so a pickle
that ran anywhere would have created the marker here). Three jobs (heap with unaligned
checkpoints and timers, heap incremental, RocksDB incremental) run at once to make the
snapshots, once per module.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import pickle
import pickletools
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Configuration, Duration, Types, WatermarkStrategy
from undertow.datastream import (
    EmbeddedRocksDBStateBackend,
    KeyedProcessFunction,
    RuntimeContext,
    SavepointFormatType,
    StreamExecutionEnvironment,
)
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.datastream.connectors.file_system import FileSource, StreamFormat
from undertow.datastream.state import ValueStateDescriptor
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    decode_metadata,
    encode_metadata,
)
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.storage import LEGACY_KEY_FILE, CheckpointStorage, FileHandle, read_key

RECORDS, KEYS, RATE, TIMEOUT_S = 1_000_000, 6, 3000, 60.0
#: Records of ~1 KB: the in-flight data of an unaligned checkpoint is then larger than the
#: 20 KB below which channel state goes inline into ``_metadata`` (it must be a file here).
PAD = "x" * 1000
#: The three jobs that make the snapshots: extra configuration and backend of each.
JOBS = ("heap", "heap-incremental", "rocksdb")


class Payload:
    """Unpickling this creates ``marker`` (``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def planted(marker: Path, size: int) -> bytes:
    """A pickle that creates ``marker`` when loaded, padded to exactly ``size`` bytes
    (unpickling stops at its STOP opcode; the padding after it is never read)."""
    data = pickletools.optimize(pickle.dumps(Payload(marker), protocol=0))
    assert len(data) <= size, f"a {size}-byte file is too small to plant a pickle in"
    return data + b" " * (size - len(data))


def test_a_padded_pickle_runs_when_loaded(tmp_path: Path) -> None:
    """What the attacker plants is live: unpickled, it would create its marker."""
    marker = tmp_path / "RAN"
    data = planted(marker, 4096)
    assert len(data) == 4096
    pickle.loads(data)
    assert marker.exists()


class TimedCount(KeyedProcessFunction):
    """Counts per key in value state, registers a far processing-time timer per key, and
    spends 1 ms per record (backpressure, so unaligned checkpoints hold in-flight data)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        time.sleep(0.001)
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_processing_time_timer(2**50)
        yield value


def _env(job: str, root: Path, **extra: str) -> StreamExecutionEnvironment:
    settings = {
        "execution.target": "local-threads",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        # every checkpoint stays: the one found to hold channel state in its own file must
        # survive until the jobs are cancelled (with incremental channel state, a starved
        # job's later checkpoints may only refer to it, and three of them subsumed it once)
        "execution.checkpointing.num-retained": "1000",
        "execution.checkpointing.unaligned.enabled": str(job == "heap").lower(),
        "execution.checkpointing.incremental": str(job == "heap-incremental").lower(),
        **extra,
    }
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
    env.set_parallelism(2)
    if job == "rocksdb":
        backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
        backend.set_db_storage_paths(str(root.parent / "rocksdb-local"))
        env.set_state_backend(backend)
    source = DataGeneratorSource(lambda i: (i % KEYS, PAD), count=RECORDS, records_per_second=RATE)
    numbers = env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").uid("gen")
    # a continuous file source: its enumerator remembers the paths it saw (a real state file,
    # larger than the data generator's few bytes)
    files = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                str(_inputs(root.parent.parent))) \
        .monitor_continuously(Duration.of_millis(100)).build()  # fmt: skip
    lines = env.from_source(files, WatermarkStrategy.no_watermarks(), "files").uid("files")
    numbers.union(lines.map(lambda line: (len(line) % KEYS, line)).uid("parse")) \
        .key_by(lambda t: t[0]).process(TimedCount()).uid("count") \
        .sink_to(DiscardingSink())  # fmt: skip
    return env


def _inputs(base: Path) -> Path:
    """The file source's directory: three small files."""
    inputs = base / "inputs"
    if not inputs.exists():
        inputs.mkdir(parents=True)
        for name in ("first", "second", "third"):
            (inputs / f"{name}-input-file-with-a-long-name.txt").write_text("a\nbb\nccc\n")
    return inputs


def key() -> bytes:
    found = read_key()
    assert found is not None
    return found


def _metadata(snapshot: Path) -> CheckpointMetadata:
    return decode_metadata((snapshot / "_metadata").read_bytes(), key(), str(snapshot))


def _job_dir(snapshot: Path) -> Path:
    """Handles are relative to the job directory (a savepoint is its own job directory)."""
    return snapshot.parent if snapshot.name.startswith("chk-") else snapshot


def _path(snapshot: Path, handle: FileHandle) -> Path:
    return _job_dir(snapshot) / handle.path


def _suitable(job: str, root: Path) -> Path | None:
    """The newest completed checkpoint under ``root`` (one job) that holds what ``job`` is
    for: channel state in a file (heap, unaligned), a shared file (incremental); or None."""
    found = root.iterdir() if root.exists() else iter(())
    jobs = [d for d in found if d.is_dir() and not d.name.startswith("_")]
    if len(jobs) != 1:
        return None
    completed = CheckpointStorage(str(root), jobs[0].name).completed_checkpoint_ids()
    for checkpoint_id in reversed(completed):
        snapshot = jobs[0] / f"chk-{checkpoint_id}"
        try:
            meta = _metadata(snapshot)
        except Exception:  # subsumed while we look
            continue
        if job == "heap":
            if any(h.files() for v in meta.vertices for h in v.channel_state.values()):
                return snapshot
        elif meta.shared_files:
            return snapshot
    return None


@dataclass(frozen=True)
class Snapshots:
    base: Path
    checkpoints: dict[str, Path]  # job -> .../<job id>/chk-<n>
    savepoints: dict[str, Path]  # "canonical" (heap), "native" (rocksdb) -> savepoint dir


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Snapshots:
    """A retained checkpoint of each job (cancelled), a canonical savepoint of the heap job and
    a native one of the RocksDB job (taken while they ran)."""
    base = tmp_path_factory.mktemp("snapshots")
    clients = {job: _env(job, base / job / "checkpoints").execute_async(job) for job in JOBS}
    try:
        deadline = time.monotonic() + TIMEOUT_S
        for job in JOBS:
            while not _suitable(job, base / job / "checkpoints"):
                assert time.monotonic() < deadline, f"{job}: no checkpoint with what it is for"
                time.sleep(0.05)
        savepoints = {  # after the state exists: the native savepoint holds SST files
            "canonical": clients["heap"].trigger_savepoint(str(base / "sp"), "CANONICAL"),
            "native": clients["rocksdb"].trigger_savepoint(str(base / "sp"),
                                                           SavepointFormatType.NATIVE),
        }  # fmt: skip
        paths = {kind: Path(f.result(timeout=TIMEOUT_S)) for kind, f in savepoints.items()}
    except BaseException:
        # a job left running (restarting in this worker) would fail the worker's later tests
        for client in clients.values():
            with contextlib.suppress(Exception):
                client.cancel()
        raise
    for client in clients.values():
        client.cancel()
    for client in clients.values():
        with pytest.raises(Exception):  # noqa: B017 - cancelled
            client.get_job_execution_result(timeout=TIMEOUT_S)
    checkpoints = {}
    for job in JOBS:
        found = _suitable(job, base / job / "checkpoints")
        assert found is not None, f"{job}: the checkpoint with what it is for was subsumed"
        checkpoints[job] = found
    return Snapshots(base, checkpoints, paths)


@dataclass(frozen=True)
class Copy:
    """A writable copy of the pristine snapshots (the attacker's playground)."""

    base: Path
    checkpoints: dict[str, Path]
    savepoints: dict[str, Path]
    marker: Path


@pytest.fixture
def copy(pristine: Snapshots, tmp_path: Path) -> Iterator[Copy]:
    shutil.copytree(
        pristine.base, tmp_path / "snapshots", ignore=shutil.ignore_patterns("rocksdb-local")
    )
    moved = tmp_path / "snapshots"
    marker = tmp_path / "PWNED"
    yield Copy(
        moved,
        {job: moved / p.relative_to(pristine.base) for job, p in pristine.checkpoints.items()},
        {kind: moved / p.relative_to(pristine.base) for kind, p in pristine.savepoints.items()},
        marker,
    )
    assert not marker.exists(), "the malicious pickle ran"


def restore_fails(copy: Copy, job: str, pointer: Path) -> str:
    """Run ``job``'s pipeline restoring from ``pointer``; the message it fails with."""
    env = _env(job, copy.base / "restored" / job, **{
        "execution.state-recovery.path": str(pointer), "restart-strategy.type": "none",
    })  # fmt: skip
    client = env.execute_async("restore a tampered snapshot")
    try:
        with pytest.raises(Exception) as info:
            client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        if not client.get_job_status().result().is_globally_terminal_state():
            client.cancel()
    assert not copy.marker.exists(), "the malicious pickle ran"
    return str(info.value)


# -- where to plant: each answers (job, snapshot to restore, the victim file) ------------------
Victim = tuple[str, Path, Path]


def _snapshot_of(path: Path) -> SubtaskSnapshot:
    loaded = pickle.loads(path.read_bytes())  # our own, untampered file
    assert isinstance(loaded, SubtaskSnapshot)
    return loaded


def _state_file(snapshot: Path, uid: str, holds: Callable[[Any], bool]) -> Path:
    """The state file of the first subtask of the vertex running ``uid`` whose operator
    snapshot satisfies ``holds``."""
    [vertex] = [v for v in _metadata(snapshot).vertices if uid in v.uids]
    for _, handle in sorted(vertex.subtasks.items()):
        if handle is not None and holds(_snapshot_of(_path(snapshot, handle)).operators[uid]):
            return _path(snapshot, handle)
    raise AssertionError(f"no state file of {uid!r} in {snapshot} holds what the case needs")


def keyed_state(c: Copy) -> Victim:
    snapshot = c.checkpoints["heap"]
    return "heap", snapshot, _state_file(snapshot, "count", lambda op: bool(op.keyed))


def timers(c: Copy) -> Victim:
    snapshot = c.checkpoints["heap"]
    return "heap", snapshot, _state_file(snapshot, "count", lambda op: bool(op.timers))


def operator_state(c: Copy) -> Victim:
    """The source reader's state (operator-scoped, not keyed)."""
    snapshot = c.checkpoints["heap"]
    found = _state_file(snapshot, "gen", lambda op: bool(op.operator or op.custom))
    return "heap", snapshot, found


def enumerator(c: Copy) -> Victim:
    """The file source's enumerator state (the paths it saw)."""
    snapshot = c.checkpoints["heap"]
    handles = [h for h in _metadata(snapshot).coordinators.values() if h is not None]
    return "heap", snapshot, _path(snapshot, max(handles, key=lambda h: h.size))


def channel_state(c: Copy) -> Victim:
    snapshot = c.checkpoints["heap"]
    for vertex in _metadata(snapshot).vertices:
        for handles in vertex.channel_state.values():
            for file in handles.files():
                return "heap", snapshot, _path(snapshot, file)
    raise AssertionError("the heap checkpoint holds no channel-state file")


def _regions(snapshot: Path, path: Path, payload: bytes) -> list[tuple[str, str]]:
    """(expected, actual) sha256 of every subtask region of the channel-state file ``path``
    once it holds ``payload``."""
    found = []
    for vertex in _metadata(snapshot).vertices:
        for handles in vertex.channel_state.values():
            for h in (handles.input, handles.output):
                if h is not None and h.file is not None and _path(snapshot, h.file) == path:
                    region = payload[h.range_start : h.range_start + h.range_length]
                    found.append((h.range_sha256, hashlib.sha256(region).hexdigest()))
    return found


def _shared(job: str, c: Copy) -> Victim:
    snapshot = c.checkpoints[job]
    biggest = max(_metadata(snapshot).shared_files, key=lambda h: h.size)
    return job, snapshot, _path(snapshot, biggest)


def heap_segment(c: Copy) -> Victim:
    return _shared("heap-incremental", c)


def rocksdb_shared(c: Copy) -> Victim:
    return _shared("rocksdb", c)


def _rocksdb_files(snapshot: Path, shared: bool) -> list[Path]:
    """Files of the RocksDB vertex's keyed handles: shared SSTs or private files."""
    found = []
    [vertex] = [v for v in _metadata(snapshot).vertices if "count" in v.uids]
    for handle in vertex.subtasks.values():
        native = _snapshot_of(_path(snapshot, handle)).operators["count"].keyed_native
        if shared:
            found += [_path(snapshot, s.handle) for s in native.shared]
        else:
            found += [_path(snapshot, h) for _, h in native.private]
    return found


def rocksdb_private(c: Copy) -> Victim:
    snapshot = c.checkpoints["rocksdb"]
    return "rocksdb", snapshot, max(_rocksdb_files(snapshot, False), key=lambda p: p.stat().st_size)


def native_savepoint(c: Copy) -> Victim:
    """An SST file of a NATIVE savepoint (self-contained: inside the savepoint directory)."""
    snapshot = c.savepoints["native"]
    files = _rocksdb_files(snapshot, True)
    assert files and all(snapshot in p.parents for p in files), files
    return "rocksdb", snapshot, max(files, key=lambda p: p.stat().st_size)


def canonical_savepoint(c: Copy) -> Victim:
    snapshot = c.savepoints["canonical"]
    return "heap", snapshot, _state_file(snapshot, "count", lambda op: bool(op.keyed))


VICTIMS = [keyed_state, timers, operator_state, enumerator, channel_state, heap_segment,
           rocksdb_shared, rocksdb_private, native_savepoint, canonical_savepoint]  # fmt: skip


@pytest.mark.parametrize("victim", VICTIMS, ids=lambda f: f.__name__.replace("_", "-"))
def test_a_same_size_malicious_pickle_fails_its_sha256(
    copy: Copy, victim: Callable[[Copy], Victim], caplog: pytest.LogCaptureFixture
) -> None:
    job, snapshot, path = victim(copy)
    original = path.read_bytes()
    payload = planted(copy.marker, len(original))
    path.write_bytes(payload)
    with caplog.at_level(logging.WARNING, logger="undertow"):
        message = restore_fails(copy, job, snapshot)
    checkpoint_id = _metadata(snapshot).checkpoint_id
    expected, actual = hashlib.sha256(original).hexdigest(), hashlib.sha256(payload).hexdigest()
    assert f"checkpoint {checkpoint_id}" in message, message
    assert path.name in message and "sha256" in message, message
    if victim is channel_state:  # verified per subtask region: that region's digests
        regions = _regions(snapshot, path, payload)
        assert any(e in message and a in message for e, a in regions), (regions, message)
    else:
        assert expected in message and actual in message, message
    # The worker that failed the restore exits, and so do the workers that were waiting for its
    # connection: none has to be killed after the exit timeout.
    assert "did not exit in time" not in caplog.text


@pytest.mark.parametrize("where", ["checkpoint", "savepoint"])
def test_metadata_re_signed_with_a_planted_key_fails_authentication(copy: Copy, where: str) -> None:
    """Issue 12's forgery: state, ``_metadata`` and the key file all written by the attacker."""
    snapshot = copy.checkpoints["heap"] if where == "checkpoint" else copy.savepoints["canonical"]
    victim = _state_file(snapshot, "count", lambda op: bool(op.keyed))
    payload = planted(copy.marker, victim.stat().st_size)
    meta = _metadata(snapshot)
    relative = str(victim.relative_to(_job_dir(snapshot)))
    vertices = tuple(
        replace(v, subtasks={
            s: FileHandle.of(relative, payload) if h.path == relative else h
            for s, h in v.subtasks.items()
        })
        for v in meta.vertices
    )  # fmt: skip
    assert vertices != meta.vertices, "the victim is referenced by the metadata"
    attacker_key = b"attacker" * 4
    victim.write_bytes(payload)
    (snapshot / "_metadata").write_bytes(
        encode_metadata(replace(meta, vertices=vertices), attacker_key)
    )
    root = snapshot.parent.parent if where == "checkpoint" else snapshot.parent
    (root / LEGACY_KEY_FILE).write_text(attacker_key.hex() + "\n")
    message = restore_fails(copy, "heap", snapshot)
    assert "authentication failed" in message and "_metadata" in message, message
    assert str(root / LEGACY_KEY_FILE) in message and "hmac-key=" in message, message
