"""A malicious pickle in any snapshot file never runs.

The attacker can write the checkpoint and savepoint directories but does not hold the
metadata key (it lives outside them). Into a retained checkpoint or a savepoint of a real job
they put a pickle whose ``__reduce__`` would create a marker file: in place of a subtask's
state file, of the source enumerator's state, of a channel-state file, and, the old attack of
issue 12, together with a ``_metadata`` re-signed under their own key that they also drop into
the checkpoint root as ``_undertow_key``. Every restore fails with an authentication or
checksum error naming the file, and the marker never appears.

Jobs run on the ``local-threads`` target (workers are threads of this process, so a pickle
that ran anywhere would have created the marker here).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink
from undertow.runtime.checkpoint.channel_state_format import read_channel_state
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateDirection, build_handle
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    decode_metadata,
    encode_metadata,
)
from undertow.storage import (
    LEGACY_KEY_FILE,
    CheckpointStorage,
    CorruptCheckpointError,
    FileHandle,
    read_key,
)

RECORDS, KEYS, TIMEOUT_S = 100_000, 6, 60.0


class Payload:
    """Unpickling this creates ``marker`` (``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def evil(marker: Path) -> bytes:
    import pickle

    data = pickle.dumps(Payload(marker))
    assert b"open" in data
    return data


def _pipeline(env: StreamExecutionEnvironment) -> Any:
    source = DataGeneratorSource(lambda i: (i % KEYS, 1), count=RECORDS, records_per_second=5000)
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "gen").uid("gen")
        .key_by(lambda t: t[0]).sum(1).uid("sum")
    )  # fmt: skip


def _env(root: Path, **extra: str) -> StreamExecutionEnvironment:
    settings = {
        "execution.target": "local-threads",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        **extra,
    }
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
    env.set_parallelism(2)
    return env


def _completed(root: Path) -> list[Path]:
    found = []
    for job in (d for d in root.iterdir() if d.is_dir()) if root.exists() else ():
        storage = CheckpointStorage(str(root), job.name)
        found += [job / f"chk-{c}" for c in storage.completed_checkpoint_ids()]
    return found


@dataclass(frozen=True)
class Snapshots:
    checkpoint_root: Path
    checkpoint: Path  # .../<job>/chk-<n>
    savepoint: Path  # .../sp/savepoint-<job6>-<n>


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Snapshots:
    """One retained checkpoint (job cancelled) and one savepoint (job stopped)."""
    base = tmp_path_factory.mktemp("snapshots")
    clients = []
    for name in ("cancelled", "stopped"):
        env = _env(base / name)
        _pipeline(env).sink_to(DiscardingSink())
        client = env.execute_async(f"{name} job")
        deadline = time.monotonic() + TIMEOUT_S
        while not _completed(base / name):
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.05)
        clients.append(client)
    clients[0].cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled
        clients[0].get_job_execution_result(timeout=TIMEOUT_S)
    savepoint = clients[1].stop_with_savepoint(str(base / "sp")).result(timeout=TIMEOUT_S)
    clients[1].get_job_execution_result(timeout=TIMEOUT_S)
    checkpoints = _completed(base / "cancelled")
    assert checkpoints, "the cancelled job's checkpoints were not retained"
    return Snapshots(base / "cancelled", checkpoints[-1], Path(savepoint))


@dataclass(frozen=True)
class Copy:
    root: Path  # where the copied checkpoint root and savepoint target live
    checkpoint: Path
    savepoint: Path
    marker: Path


@pytest.fixture
def copy(pristine: Snapshots, tmp_path: Path) -> Iterator[Copy]:
    root = tmp_path / "checkpoints"
    shutil.copytree(pristine.checkpoint_root, root)
    shutil.copytree(pristine.savepoint, tmp_path / "sp" / pristine.savepoint.name)
    job = pristine.checkpoint.parent.name
    marker = tmp_path / "PWNED"
    yield Copy(root, root / job / pristine.checkpoint.name,
               tmp_path / "sp" / pristine.savepoint.name, marker)  # fmt: skip
    assert not marker.exists(), "the malicious pickle ran"


def restore_fails(copy: Copy, pointer: Path) -> str:
    """Run a job restoring from ``pointer``; the message it fails with."""
    env = _env(copy.root / "restored", **{
        "execution.state-recovery.path": str(pointer), "restart-strategy.type": "none",
    })  # fmt: skip
    _pipeline(env).sink_to(DiscardingSink())
    with pytest.raises(Exception) as info:
        env.execute("restore a tampered snapshot")
    assert not copy.marker.exists(), "the malicious pickle ran"
    return str(info.value)


def _path(snapshot: Path, handle: FileHandle) -> Path:
    """Handles are relative to the job directory (a savepoint is its own job directory)."""
    return (snapshot.parent if snapshot.name.startswith("chk-") else snapshot) / handle.path


def _metadata(snapshot: Path) -> CheckpointMetadata:
    return decode_metadata((snapshot / "_metadata").read_bytes(), key(), str(snapshot))


def state_file(snapshot: Path) -> Path:
    """The keyed state file of the aggregation's first subtask."""
    handle = _metadata(snapshot).vertices[-1].subtasks[0]
    assert handle.path.endswith(".state") and "enumerator" not in handle.path
    return _path(snapshot, handle)


def enumerator_file(snapshot: Path) -> Path:
    [handle] = [h for h in _metadata(snapshot).coordinators.values() if h is not None]
    return _path(snapshot, handle)


def key() -> bytes:
    found = read_key()
    assert found is not None
    return found


@pytest.mark.parametrize("where", ["checkpoint", "savepoint"])
def test_a_malicious_state_file_fails_its_checksum(
    copy: Copy, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    snapshot = copy.checkpoint if where == "checkpoint" else copy.savepoint
    victim = state_file(snapshot)
    victim.write_bytes(evil(copy.marker))
    with caplog.at_level(logging.WARNING, logger="undertow"):
        message = restore_fails(copy, snapshot)
    assert victim.name in message and "sha256" in message, message
    # The worker that failed the restore exits, and so do the workers that were waiting for its
    # connection: none has to be killed after the exit timeout.
    assert "did not exit in time" not in caplog.text


@pytest.mark.parametrize("where", ["checkpoint", "savepoint"])
def test_a_malicious_enumerator_state_fails_its_checksum(copy: Copy, where: str) -> None:
    snapshot = copy.checkpoint if where == "checkpoint" else copy.savepoint
    victim = enumerator_file(snapshot)
    victim.write_bytes(evil(copy.marker))
    message = restore_fails(copy, snapshot)
    assert victim.name in message and "sha256" in message, message


@pytest.mark.parametrize("where", ["checkpoint", "savepoint"])
def test_metadata_re_signed_with_a_planted_key_fails_authentication(copy: Copy, where: str) -> None:
    """Issue 12's forgery: state, ``_metadata`` and the key file all written by the attacker."""
    snapshot = copy.checkpoint if where == "checkpoint" else copy.savepoint
    victim = state_file(snapshot)
    payload = evil(copy.marker)
    meta = _metadata(snapshot)
    relative = f"{victim.parent.name}/{victim.name}"
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
    message = restore_fails(copy, snapshot)
    assert "authentication failed" in message and "_metadata" in message, message
    assert str(root / LEGACY_KEY_FILE) in message and "hmac-key=" in message, message


def test_a_malicious_channel_state_file_fails_its_region_checksum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Channel state is read through its handle's region checksum before any chunk is
    decoded (``read_channel_state``, what restoring tasks call)."""
    marker = tmp_path / "PWNED"
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), "job")
    chunks = {(0, 0): [b"record bytes " * 4], (0, 1): [b"more record bytes"]}
    region = b"".join(c for channel in sorted(chunks) for c in chunks[channel])
    file = storage.write_file(7, "channel-state-0", region)
    handle = build_handle(
        "sum (1/2)", 7, ChannelStateDirection.INPUT, chunks, 0,
        hashlib.sha256(region).hexdigest(), file=file,
    )  # fmt: skip
    assert [c for _, c in read_channel_state(handle, storage.read_range)] == [
        chunks[(0, 0)][0], chunks[(0, 1)][0]
    ]  # fmt: skip
    payload = evil(marker)
    tampered = (payload + region)[: len(region)] if len(payload) < len(region) else payload
    (tmp_path / "checkpoints" / "job" / "chk-7" / "channel-state-0").write_bytes(tampered)
    with pytest.raises(CorruptCheckpointError, match=r"channel-state-0.*sha256"):
        list(read_channel_state(handle, storage.read_range))
    assert not marker.exists()
