"""The corruption test of docs/testing.md: 100 seeded corruptions of the newest checkpoint.

A checkpoint with a few pickled state files is committed next to an older, intact one. Each
round applies one random corruption (truncate or flip a bit in ``_metadata`` or a state file,
delete a referenced file, replace the key) and checks that

* the restore path (read metadata, authenticate, read and verify every file, only then
  unpickle) fails with :class:`CorruptCheckpointError` before a single byte is unpickled;
* the error names the checkpoint and the file, and for checksum or size mismatches the
  expected and the actual value;
* ``list_checkpoints`` reports the same problem, and still verifies the older checkpoint
  (except when the key was replaced).

The seed is printed on failure; set ``UNDERTOW_CORRUPTION_SEED`` to replay another one.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from undertow.cli.checkpoints import list_checkpoints
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    VertexMetadata,
    decode_metadata,
    encode_metadata,
    referenced_files,
)
from undertow.storage import (
    CheckpointStorage,
    CorruptCheckpointError,
    default_key_file,
    load_or_create_key,
    read_key,
)

SEED = int(os.environ.get("UNDERTOW_CORRUPTION_SEED", "20240607"))
ROUNDS = 100
KINDS = (
    "truncate-metadata",
    "flip-metadata",
    "truncate-state",
    "flip-state",
    "delete-state",
    "replace-key",
)
_real_loads = pickle.loads


def build_checkpoint(storage: CheckpointStorage, key: bytes, checkpoint_id: int) -> None:
    rng = random.Random(checkpoint_id)
    subtasks = {}
    for index in range(3):
        state = {f"key-{k}": rng.randbytes(rng.randint(1, 64)) for k in range(rng.randint(5, 40))}
        subtasks[index] = storage.write_file(
            checkpoint_id, f"map-{index}.state", pickle.dumps(state)
        )
    coordinator = storage.write_file(checkpoint_id, "coordinator-1", pickle.dumps(["split-1"]))
    meta = CheckpointMetadata(
        job_id=storage.job_id,
        checkpoint_id=checkpoint_id,
        trigger_timestamp=1000 * checkpoint_id,
        completion_timestamp=1000 * checkpoint_id + 5,
        is_savepoint=False,
        vertices=(VertexMetadata(1, "Source -> Map", ("source", "map"), 3, 128, False, subtasks),),
        coordinators={1: coordinator},
    )
    storage.commit_metadata(checkpoint_id, encode_metadata(meta, key))


def restore(storage: CheckpointStorage, root: str, checkpoint_id: int) -> list[object]:
    """What a job restore does: verify everything first, then unpickle."""
    key = read_key()
    assert key is not None
    meta = decode_metadata(
        storage.read_metadata(checkpoint_id),
        key,
        storage.checkpoint_pointer(checkpoint_id),
        expected_checkpoint_id=checkpoint_id,
    )
    blobs = [storage.read_file(handle, checkpoint_id) for handle in referenced_files(meta)]
    return [_real_loads(blob) for blob in blobs]


def flip_bit(data: bytes, rng: random.Random) -> bytes:
    bit = rng.randrange(len(data) * 8)
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def test_hundred_seeded_corruptions_are_detected_before_unpickling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    root = str(tmp_path)
    key = load_or_create_key()
    storage = CheckpointStorage(root, "job-1")
    build_checkpoint(storage, key, 2)
    build_checkpoint(storage, key, 3)
    assert len(restore(storage, root, 3)) == 4

    chk = tmp_path / "job-1" / "chk-3"
    metadata_file = chk / "_metadata"
    state_files = sorted(p for p in chk.iterdir() if p.name != "_metadata")
    key_file = default_key_file()
    originals = {p: p.read_bytes() for p in [*state_files, metadata_file, key_file]}
    meta = decode_metadata(metadata_file.read_bytes(), key, str(chk))
    expected_hash = {f"chk-3/{h.path.split('/')[-1]}": h.sha256 for h in referenced_files(meta)}

    def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("state bytes were unpickled before the checkpoint verified")

    rng = random.Random(SEED)
    seen_kinds: set[str] = set()
    for round_number in range(ROUNDS):
        kind = KINDS[round_number % len(KINDS)] if round_number < len(KINDS) else rng.choice(KINDS)
        seen_kinds.add(kind)
        target = metadata_file if kind.endswith("metadata") else rng.choice(state_files)
        corrupted: bytes | None = None
        if kind.startswith("truncate"):
            corrupted = originals[target][: rng.randrange(len(originals[target]))]
            target.write_bytes(corrupted)
        elif kind.startswith("flip"):
            corrupted = flip_bit(originals[target], rng)
            target.write_bytes(corrupted)
        elif kind == "delete-state":
            target.unlink()
        else:
            target = metadata_file  # authentication of _metadata is what must fail
            key_file.write_text(rng.randbytes(32).hex() + "\n")
        context = f"seed {SEED}, round {round_number}, {kind} of {target.name}"

        with monkeypatch.context() as patch:
            patch.setattr(pickle, "loads", forbidden)
            patch.setattr(pickle, "load", forbidden)
            with pytest.raises(CorruptCheckpointError) as info:
                restore(storage, root, 3)
            listed = {i.checkpoint_id: i for i in list_checkpoints(root, "job-1")}
        message = str(info.value)

        assert "chk-3" in message, context
        assert f"chk-3/{target.name}" in message, context
        if target is not metadata_file:
            assert "checkpoint 3" in message, context
            relative = f"chk-3/{target.name}"
            assert expected_hash[relative] in message, context
            if corrupted is not None:
                actual = hashlib.sha256(corrupted).hexdigest()
                assert actual in message, context
                assert info.value.actual is not None and info.value.expected is not None
            if kind == "truncate-state":
                assert f"size {len(corrupted or b'')} bytes" in message, context
                assert f"expected {len(originals[target])} bytes" in message, context
        if kind == "replace-key":
            assert "authentication failed" in message, context

        assert listed[3].verifies is False and listed[3].problem == message, context
        # The older checkpoint is intact, unless the key itself was replaced.
        assert listed[2].verifies is (kind != "replace-key"), context

        for path, data in originals.items():
            path.write_bytes(data)

    assert seen_kinds == set(KINDS)
    assert len(restore(storage, root, 3)) == 4  # restored originals verify again


def test_listing_never_parses_unauthenticated_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    root = str(tmp_path)
    key = load_or_create_key()
    storage = CheckpointStorage(root, "job-1")
    build_checkpoint(storage, key, 1)
    from undertow.runtime.checkpoint import metadata as codec

    parsed: list[bytes] = []
    real: Callable[[bytes], object] = codec.metadata_msgpack.metadata_from_bytes

    def spy(body: bytes) -> object:
        parsed.append(body)
        return real(body)

    monkeypatch.setattr(codec.metadata_msgpack, "metadata_from_bytes", spy)
    monkeypatch.setattr(codec.metadata_json, "metadata_from_bytes", spy)
    [info] = list_checkpoints(root, key=b"wrong key")
    assert not info.verifies and info.completion_time is None and info.total_size is None
    assert "authentication failed" in (info.problem or "")
    assert parsed == []
    [info] = list_checkpoints(root, key=key)
    assert info.verifies and len(parsed) == 1  # the spy sees what is parsed
