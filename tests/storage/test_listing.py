from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from undertow.cli.checkpoints import list_checkpoints
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    VertexMetadata,
    encode_metadata,
)
from undertow.storage import default_key_file, load_or_create_key

from .conftest import Backend


@pytest.fixture(autouse=True)
def _own_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))


def commit(backend: Backend, job_id: str, checkpoint_id: int, key: bytes) -> int:
    storage = backend.storage(job_id)
    handle = storage.write_file(checkpoint_id, "s-0", pickle.dumps(list(range(checkpoint_id))))
    meta = CheckpointMetadata(
        job_id=job_id,
        checkpoint_id=checkpoint_id,
        trigger_timestamp=10 * checkpoint_id,
        completion_timestamp=10 * checkpoint_id + 1,
        is_savepoint=False,
        vertices=(VertexMetadata(1, "v", ("u",), 1, 128, subtasks={0: handle}),),
    )
    storage.commit_metadata(checkpoint_id, encode_metadata(meta, key))
    return handle.size


def test_lists_and_verifies_all_jobs(backend: Backend) -> None:
    key = load_or_create_key()
    sizes = {
        ("job-a", 1): commit(backend, "job-a", 1, key),
        ("job-a", 2): commit(backend, "job-a", 2, key),
        ("job-b", 5): commit(backend, "job-b", 5, key),
    }
    backend.storage("job-b").write_file(6, "s-0", b"never committed")
    infos = list_checkpoints(backend.root_uri, storage_options=backend.options)
    assert [(i.job_id, i.checkpoint_id) for i in infos] == list(sizes)
    for info in infos:
        assert info.verifies and info.problem is None
        assert info.total_size == sizes[(info.job_id, info.checkpoint_id)]
        assert info.completion_time == 10 * info.checkpoint_id + 1
        assert info.pointer.endswith(f"{info.job_id}/chk-{info.checkpoint_id}")
    only_b = list_checkpoints(backend.root_uri, "job-b", key, storage_options=backend.options)
    assert [i.checkpoint_id for i in only_b] == [5]


def test_empty_or_missing_root(backend: Backend) -> None:
    assert list_checkpoints(backend.root_uri, storage_options=backend.options) == []


def test_without_key_nothing_verifies(backend: Backend) -> None:
    commit(backend, "job-a", 1, b"some key")
    [info] = list_checkpoints(backend.root_uri, storage_options=backend.options)
    assert not info.verifies and info.completion_time is None
    assert str(default_key_file()) in (info.problem or "") and "hmac-key" in (info.problem or "")


def test_metadata_moved_to_another_job_or_checkpoint_is_flagged(backend: Backend) -> None:
    key = load_or_create_key()
    commit(backend, "job-a", 1, key)
    data = backend.read("job-a/chk-1/_metadata")
    backend.write("job-a/chk-9/_metadata", data)
    backend.write("job-z/chk-1/_metadata", data)
    listed = list_checkpoints(backend.root_uri, key=key, storage_options=backend.options)
    infos = {(i.job_id, i.checkpoint_id): i for i in listed}
    assert infos[("job-a", 1)].verifies
    assert "describes checkpoint 1, expected 9" in (infos[("job-a", 9)].problem or "")
    assert "describes job 'job-a'" in (infos[("job-z", 1)].problem or "")
